package memory

import "testing"

func TestSplitMethod(t *testing.T) {
	tests := []struct{ in, method, model string }{
		{"extractive", "extractive", ""},
		{"llm:openai/gpt-4o-mini", "llm", "openai/gpt-4o-mini"},
		{"llm:", "llm", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		m, mo := splitMethod(tt.in)
		if m != tt.method || mo != tt.model {
			t.Errorf("splitMethod(%q) = %q, %q; want %q, %q", tt.in, m, mo, tt.method, tt.model)
		}
	}
}

func TestViewUnknownConversation(t *testing.T) {
	s := openTest(t, Options{})
	if _, err := s.View(t.Context(), "nope"); !isNotFound(err) {
		t.Fatalf("View of an unknown conversation: %v, want ErrNotFound", err)
	}
	if _, err := s.View(t.Context(), "../x"); err == nil {
		t.Fatal("View accepted an invalid conversation id")
	}
}
