package modelctx

import "testing"

func TestLookup(t *testing.T) {
	tab := New(map[string]int{"llama3.2": 8192, "my-*-model": 50_000, "gpt-4o-mini": 0})
	tests := []struct {
		model string
		want  int
		known bool
	}{
		{"gpt-4o-mini", 128_000, true},                // prefix gpt-4o; a 0 override is ignored
		{"openai/GPT-4-turbo-preview", 128_000, true}, // provider prefix and case dropped
		{"gpt-4-0613", 8_192, true},
		{"claude-3-5-haiku-latest", 200_000, true},
		{"claude-sonnet-4-5", 1_000_000, true},
		{"models/gemini-1.5-pro-002", 2_097_152, true},
		{"llama3.2:3b", 8_192, true}, // the override beats the built-in
		{"llama3.1:8b", 131_072, true},
		{"phi3:3.8b-mini-128k-instruct", 131_072, true}, // glob beats the shorter prefix
		{"my-big-model", 50_000, true},
		{"totally-unknown", Default, false},
		{"", Default, false},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			n, ok := tab.Lookup(tt.model)
			if ok != tt.known || tab.Window(tt.model) != tt.want {
				t.Errorf("Lookup(%q) = %d, %v; Window = %d; want %d, %v", tt.model, n, ok, tab.Window(tt.model), tt.want, tt.known)
			}
		})
	}
	if n, _ := Lookup("llama3.2:3b"); n != 131_072 {
		t.Errorf("built-in llama3.2 = %d, want 131072 (overrides stay in their table)", n)
	}
	if ValidPattern("[a") || !ValidPattern("gpt-*") {
		t.Error("ValidPattern: want [a refused, gpt-* accepted")
	}
}
