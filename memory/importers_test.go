package memory

import (
	"fmt"
	"os"
	"strconv"
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

// gptChat is a one-thread ChatGPT conversation: messages n1..nk, each the
// child of the one before; missing names a parent left out of the mapping.
func gptChat(title, id string, texts ...string) string {
	var nodes []string
	parent := "null"
	for i, text := range texts {
		node := fmt.Sprintf("%s-n%d", id, i+1)
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		nodes = append(nodes, fmt.Sprintf(`%q:{"id":%q,"parent":%s,"message":{"id":%q,"author":{"role":%q},"create_time":%d,"content":{"content_type":"text","parts":[%q]}}}`,
			node, node, parent, node, role, 1700000000+i, text))
		parent = strconv.Quote(node)
	}
	return fmt.Sprintf(`{"title":%q,"conversation_id":%q,"current_node":%s,"mapping":{%s}}`, title, id, parent, strings.Join(nodes, ","))
}

// TestChatGPTExportQuirks: two chats with one title whose ids begin alike,
// and two untitled ones without ids, are four conversations (they were
// merged into two while the import counted four), with ids that are the
// same on every parse; a conversation whose thread points at a node the
// export lacks keeps what could be read and says what could not, and one
// whose current node is missing is reported, without stopping the import
// of the others (both stopped it). One without a current_node (or with
// null) imports the thread ending at its latest message, and says so (it
// was dropped without a word).
func TestChatGPTExportQuirks(t *testing.T) {
	broken := gptChat("Cut short", "cut-1", "the top of the thread", "an answer", "the bottom of the thread")
	broken = strings.Replace(broken, `"parent":"cut-1-n1"`, `"parent":"gone-node"`, 1)
	export := "[" + strings.Join([]string{
		gptChat("Trip", "abcdef12-0001", "the ferry to Hydra leaves at nine"),
		gptChat("Trip", "abcdef12-0002", "the museum opens at ten"),
		gptChat("", "", "an untitled chat about sourdough"),
		gptChat("", "", "another untitled chat about kombucha"),
		broken,
		`{"title":"Lost","conversation_id":"lost-1","current_node":"nowhere","mapping":{}}`,
		// Without current_node (or with null) the thread ending at the
		// latest message is taken: these were dropped without a word.
		strings.Replace(gptChat("No pointer", "nocur-1", "the spare key is in the shed", "noted"), `"current_node":"nocur-1-n2",`, "", 1),
		strings.Replace(gptChat("Null pointer", "nullcur-1", "the boat is blue", "noted"), `"current_node":"nullcur-1-n2"`, `"current_node":null`, 1),
	}, ",") + "]"
	parse := func() []ImportedConversation {
		convs, err := ParseChatGPT(strings.NewReader(export))
		if err != nil {
			t.Fatal(err)
		}
		return convs
	}
	convs := parse()
	if len(convs) != 8 {
		t.Fatalf("parsed %d conversations, want 8", len(convs))
	}
	ids := map[string]bool{}
	for i, c := range convs {
		if ids[c.ID] {
			t.Errorf("conversation %d has the id %q of an earlier one", i, c.ID)
		}
		ids[c.ID] = true
		if again := parse()[i].ID; again != c.ID {
			t.Errorf("conversation %d: id %q, then %q on a second parse", i, c.ID, again)
		}
	}
	if convs[0].ID != "chatgpt:trip-abcdef12" || convs[2].ID != "chatgpt:untitled" {
		t.Errorf("the first of each name keeps its id: %q, %q", convs[0].ID, convs[2].ID)
	}
	cut := convs[4]
	if len(cut.Messages) != 2 || !strings.Contains(cut.Problem, `node "gone-node" is not in the mapping: only the 2 message(s) below it`) {
		t.Errorf("cut thread: %d messages, problem %q", len(cut.Messages), cut.Problem)
	}
	if lost := convs[5]; len(lost.Messages) != 0 || !strings.Contains(lost.Problem, `current_node "nowhere" is not in the mapping`) {
		t.Errorf("lost conversation: %d messages, problem %q", len(lost.Messages), lost.Problem)
	}

	for _, c := range convs[6:] {
		if len(c.Messages) != 2 || !strings.Contains(c.Problem, "no current_node: the thread ending at its latest message was imported") {
			t.Errorf("%s: %d messages, problem %q", c.ID, len(c.Messages), c.Problem)
		}
	}
	s := openTest(t, Options{})
	res, err := s.Import(t.Context(), convs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Conversations != 7 || res.Stored != 10 {
		t.Errorf("import: %+v, want 7 conversations (the lost one has nothing) and 10 messages", res)
	}
	list, err := s.Conversations(t.Context())
	if err != nil || len(list) != 7 {
		t.Errorf("stored conversations: %d (%v), want 7 as counted", len(list), err)
	}
}
