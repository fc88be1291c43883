package memory

import (
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
