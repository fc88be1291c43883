package memory

import (
	"os"
	"strings"
	"testing"
)

func parseFile(t *testing.T, path string, parse func(f *os.File) ([]ImportedConversation, error)) []ImportedConversation {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	convs, err := parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return convs
}

type wantMsg struct{ role, text, ts string }

func checkConv(t *testing.T, c ImportedConversation, id string, want []wantMsg) {
	t.Helper()
	if c.ID != id {
		t.Errorf("id: got %q, want %q", c.ID, id)
	}
	if len(c.Messages) != len(want) {
		for _, m := range c.Messages {
			t.Logf("  %s %s %s", m.Role, m.Content, m.Timestamp)
		}
		t.Fatalf("%s: got %d messages, want %d", id, len(c.Messages), len(want))
	}
	for i, w := range want {
		m := c.Messages[i]
		if m.Role != w.role || !strings.Contains(string(m.Content), w.text) || m.Timestamp != w.ts {
			t.Errorf("%s message %d: got %s %s %s, want %s %q %s", id, i, m.Role, m.Content, m.Timestamp, w.role, w.text, w.ts)
		}
	}
}

func TestParseChatGPT(t *testing.T) {
	convs := parseFile(t, "testdata/import/chatgpt.json", func(f *os.File) ([]ImportedConversation, error) { return ParseChatGPT(f) })
	if len(convs) != 2 {
		t.Fatalf("got %d conversations, want 2", len(convs))
	}
	// The branch the user last saw (current_node), not the edited-away one;
	// no system, hidden or empty messages; the image part is skipped.
	checkConv(t, convs[0], "chatgpt:trip-to-kyoto-6743a1b2", []wantMsg{
		{"user", "ryokan in Kyoto", "2024-05-06T12:53:30.5Z"},
		{"assistant", "Gion is lovely", "2024-05-06T12:53:40.25Z"},
		{"user", "Which temple should we see first?", "2024-05-06T12:54:10Z"},
		{"tool", "Kiyomizu-dera opens", "2024-05-06T12:54:15Z"},
		{"assistant", "Start at Kiyomizu-dera", "2024-05-06T12:54:20Z"},
	})
	for _, m := range convs[0].Messages {
		if strings.Contains(string(m.Content), "Osaka") || strings.Contains(string(m.Content), "hidden") || strings.Contains(string(m.Content), "asset") {
			t.Errorf("message from outside the visible thread: %s", m.Content)
		}
	}
	checkConv(t, convs[1], "chatgpt:postgres-upgrade-9f8e7d6c", []wantMsg{
		{"user", "pg_upgrade", "2024-05-18T02:40:10Z"},
		{"assistant", "pg_upgrade -b", "2024-05-18T02:40:20Z"},
	})
}

func TestParseClaude(t *testing.T) {
	convs := parseFile(t, "testdata/import/claude.json", func(f *os.File) ([]ImportedConversation, error) { return ParseClaude(f) })
	if len(convs) != 2 {
		t.Fatalf("got %d conversations, want 2 (the empty one is skipped)", len(convs))
	}
	checkConv(t, convs[0], "claude:garden-planning-b1c2d3e4", []wantMsg{
		{"user", "north-facing balcony", "2024-04-02T08:00:05.123456Z"},
		{"assistant", "Sungold", "2024-04-02T08:00:20Z"},
		{"user", "And basil?", "2024-04-02T08:05:00Z"},
		{"assistant", "six hours of sun", "2024-04-02T08:05:30Z"},
	})
	checkConv(t, convs[1], "claude:c0ffee00", []wantMsg{
		{"user", "yes", "2024-05-01T10:00:01Z"},
		{"user", "yes", "2024-05-01T10:00:02Z"},
	})
}

func TestParseBadExports(t *testing.T) {
	tests := []struct {
		name, in string
		parse    func(string) error
		want     string
	}{
		{"chatgpt not an array", `{"a":1}`, func(s string) error { _, err := ParseChatGPT(strings.NewReader(s)); return err }, "ChatGPT conversations.json"},
		{"chatgpt dangling node", `[{"title":"x","current_node":"n","mapping":{}}]`, func(s string) error { _, err := ParseChatGPT(strings.NewReader(s)); return err }, "not in the mapping"},
		{"claude bad sender", `[{"uuid":"u","name":"x","chat_messages":[{"sender":"robot","text":"hi"}]}]`, func(s string) error { _, err := ParseClaude(strings.NewReader(s)); return err }, "neither human nor assistant"},
		{"claude bad time", `[{"uuid":"u","name":"x","chat_messages":[{"sender":"human","text":"hi","created_at":"yesterday"}]}]`, func(s string) error { _, err := ParseClaude(strings.NewReader(s)); return err }, "RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.parse(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestImportIdempotent: importing twice stores nothing the second time;
// repeated short messages with their own timestamps are both kept, and
// secrets in imported history are scrubbed.
func TestImportIdempotent(t *testing.T) {
	s := openTest(t, Options{})
	convs := parseFile(t, "testdata/import/chatgpt.json", func(f *os.File) ([]ImportedConversation, error) { return ParseChatGPT(f) })
	convs = append(convs, parseFile(t, "testdata/import/claude.json", func(f *os.File) ([]ImportedConversation, error) { return ParseClaude(f) })...)
	calls := 0
	first, err := s.Import(t.Context(), convs, func(done, total int, _ string) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if first.Conversations != 4 || first.Stored != 13 || first.Duplicates != 0 || first.Redacted != 1 || calls != 4 {
		t.Errorf("first import: got %+v with %d progress calls, want 4 conversations, 13 stored, 1 redacted, 4 calls", first, calls)
	}
	again, err := s.Import(t.Context(), convs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Stored != 0 || again.Duplicates != 13 {
		t.Errorf("re-import: got %+v, want 0 stored, 13 duplicates", again)
	}
	list, err := s.Conversations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 4 {
		t.Errorf("conversations: got %d, want 4", len(list))
	}
}
