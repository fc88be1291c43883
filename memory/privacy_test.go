package memory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/scrub"
)

// TestScrubBeforeStore: secrets are replaced before the log and the
// tagger; a resent message with its secret is still a duplicate; the
// placeholders never become tags; scrub.Off() stores text as sent.
func TestScrubBeforeStore(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("Ab3xY9", 8)
	tok := "ghp_" + strings.Repeat("Zq7", 12)
	when := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	m := msg("user", "", "use "+key+" and "+tok+" for the lighthouse billing export", when)

	s := openTest(t, Options{})
	res := ingest(t, s, "c", []Message{m})
	if res.Redacted != 2 {
		t.Errorf("redacted: got %d, want 2", res.Redacted)
	}
	for _, tag := range res.Tags {
		for _, bad := range []string{"secret", "openai-key", "github-token", "openai", "token"} {
			if tag == bad || strings.Contains(tag, "secret") {
				t.Errorf("tags %v: %q comes from a placeholder", res.Tags, tag)
			}
		}
	}
	if again := ingest(t, s, "c", []Message{m}); again.Duplicates != 1 || again.Stored != 0 {
		t.Errorf("resent message: stored %d, duplicates %d; want 0 and 1", again.Stored, again.Duplicates)
	}
	q, err := s.FindQuote(t.Context(), FindQuoteRequest{ConversationID: "c", Query: "lighthouse billing"})
	if err != nil || len(q.Quotes) != 1 {
		t.Fatalf("find_quote: %v, %d quotes", err, len(q.Quotes))
	}
	if ex := q.Quotes[0].Excerpt; strings.Contains(ex, key) || !strings.Contains(ex, "[secret:openai-key]") {
		t.Errorf("excerpt %q: want the placeholder, not the key", ex)
	}

	off := openTest(t, Options{Scrubber: scrub.Off()})
	if res := ingest(t, off, "c", []Message{m}); res.Redacted != 0 {
		t.Errorf("scrub off: redacted %d, want 0", res.Redacted)
	}
	q, err = off.FindQuote(t.Context(), FindQuoteRequest{ConversationID: "c", Query: "lighthouse billing"})
	if err != nil || len(q.Quotes) != 1 || !strings.Contains(q.Quotes[0].Excerpt, tok) {
		t.Errorf("scrub off: want the text stored as sent, got %+v (%v)", q.Quotes, err)
	}
}

// TestScrubMessageFields: a secret in a message's speaker name, its id or
// a tool call id is not stored either (found by a hostile review: the
// text beside them was redacted, they were kept verbatim). A tool result
// still names the scrubbed id of the call it answers; a resend is still a
// duplicate; two ids that differ only in their secrets stay apart.
func TestScrubMessageFields(t *testing.T) {
	aws1, aws2 := "AKIAZQ7XW3RT5YU2IOPL", "AKIAQW8ER7TY6UI5OP4A"
	tok := "ghp_" + strings.Repeat("Zq7", 12)
	stripe := "sk_live_" + strings.Repeat("51Hx", 6)
	calls, err := json.Marshal([]map[string]any{{"id": "call_" + stripe, "type": "function", "function": map[string]any{"name": "lookup", "arguments": "{}"}}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{
		{Role: "user", Name: "alice " + tok, ID: "m-" + aws1, Content: text("the lighthouse keeper rota for June")},
		{Role: "user", Name: "alice " + tok, ID: "m-" + aws2, Content: text("and the rota for July")},
		{Role: "assistant", Content: text("looking it up"), ToolCalls: calls},
		{Role: "tool", ToolCallID: "call_" + stripe, Content: text("rota found")},
	}
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	res := ingest(t, s, "c", msgs)
	if res.Stored != 4 {
		t.Fatalf("stored %d of 4 (two ids that differ only in their secrets must stay apart): %+v", res.Stored, res)
	}
	if res.Redacted < 6 {
		t.Errorf("redacted %d, want at least 6 (two names, two ids, the call's id, the result's)", res.Redacted)
	}
	if again := ingest(t, s, "c", msgs); again.Stored != 0 {
		t.Errorf("resent: stored %d again, want 0", again.Stored)
	}
	turn, err := s.Turn(t.Context(), "c", "t1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(turn.Speaker, tok) || !strings.Contains(turn.Speaker, "[secret:") {
		t.Errorf("speaker %q: want the placeholder, not the token", turn.Speaker)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{aws1, aws2, tok, stripe} {
		if files := filesContaining(t, dir, secret); len(files) > 0 {
			t.Errorf("%s is stored in %v", secret[:8], files)
		}
	}
	log, err := os.ReadFile(filepath.Join(dir, logsDir, "c.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The call's id (in tool_calls) and the result's tool_call_id.
	if n := strings.Count(string(log), "call_[secret:"); n != 2 {
		t.Errorf("the scrubbed call id is in the log %d times, want 2 (the call and its result)", n)
	}
}

// TestImportTitleSecret: a secret in an export's conversation title does
// not name the conversation.
func TestImportTitleSecret(t *testing.T) {
	id := importID("chatgpt", "AKIAZQ7XW3RT5YU2IOPL leaked", "abcdef12-0000")
	if strings.Contains(strings.ToLower(id), "akiazq7xw3rt5yu2iopl") {
		t.Errorf("import id %q holds the key", id)
	}
	if want := "chatgpt:secret-aws-access-key-id-leaked-abcdef12"; id != want {
		t.Errorf("import id %q, want %q", id, want)
	}
}
