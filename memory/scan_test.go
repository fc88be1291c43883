package memory

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

// TestScanRedactsOldSecret: a secret written to the master log by a raw
// line (data stored before scrubbing, or before its rule existed) is found
// by rule and turn, never printed, and redacted in place: the turn keeps
// its other words, the secret leaves every file.
func TestScanRedactsOldSecret(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	opts := Options{Dir: dir, ContextWindow: 1200, ProtectedTurns: 2}
	s := openTest(t, opts)
	msgs := chat(40, t0)
	for i := 0; i < len(msgs); i += 10 {
		ingest(t, s, "c", msgs[i:i+10])
	}
	n := len(msgs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	key := "sk-proj-" + strings.Repeat("Qz4wT8", 8)
	text := "the lighthouse billing export uses " + key + " as its key"
	in := turnInput{Role: "user", Name: "Ana", Text: text, Timestamp: t0.Add(50 * time.Minute), HasTime: true}
	in.Hash = messageHash(in)
	line, err := masterlog.Encode(recordFrom(n+1, in, t0.Add(50*time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(logPathIn(dir, "c"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s = openTest(t, opts)
	if q, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "c", Query: "lighthouse billing"}); err != nil || len(q.Quotes) != 1 || !strings.Contains(q.Quotes[0].Excerpt, key) {
		t.Fatalf("setup: the raw line's secret is not stored as written: %+v %v", q, err)
	}
	found, err := s.Scan(ctx, ScanRequest{ConversationID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Findings) != 1 || found.Findings[0].TurnID != turnID(n+1) || found.Findings[0].Rule != "openai-key" || found.ByRule["openai-key"] != 1 || found.TurnsRedacted != 0 {
		t.Fatalf("scan: %+v, want one openai-key finding in %s", found, turnID(n+1))
	}
	if strings.Contains(found.String(), key) {
		t.Fatal("scan summary prints the secret")
	}
	if tr, _ := s.Turn(ctx, "c", turnID(n+1)); !strings.Contains(tr.Text, key) {
		t.Fatal("scan without redact changed the turn")
	}
	red, err := s.Scan(ctx, ScanRequest{ConversationID: "c", Redact: true})
	if err != nil {
		t.Fatal(err)
	}
	if red.TurnsRedacted != 1 {
		t.Fatalf("redact: %+v", red)
	}
	tr, err := s.Turn(ctx, "c", turnID(n+1))
	if err != nil {
		t.Fatal(err)
	}
	if want := "the lighthouse billing export uses [secret:openai-key] as its key"; tr.Text != want {
		t.Fatalf("redacted turn: %q, want %q", tr.Text, want)
	}
	q, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "c", Query: "lighthouse billing"})
	if err != nil || len(q.Quotes) != 1 || strings.Contains(q.Quotes[0].Excerpt, key) {
		t.Fatalf("find_quote after redact: %+v %v", q, err)
	}
	if again, _ := s.Scan(ctx, ScanRequest{ConversationID: "c"}); len(again.Findings) != 0 {
		t.Fatalf("scan after redact: %+v", again)
	}
	// The original message resent is recognised (scrubbed, it is the
	// redacted turn).
	if r := ingest(t, s, "c", []Message{msg("user", "Ana", text, t0.Add(50*time.Minute))}); r.Stored != 0 {
		t.Fatalf("resent original stored again: %+v", r)
	}
	before := turnTexts(t, s, "c", n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if files := filesContaining(t, dir, key); len(files) > 0 {
		t.Fatalf("the secret is still on disk in %v", files)
	}
	s = openTest(t, opts)
	after := turnTexts(t, s, "c", n)
	for id, v := range before {
		if after[id] != v {
			t.Fatalf("turn %s changed by redaction: %q -> %q", id, v, after[id])
		}
	}
}

func logPathIn(dir, conv string) string {
	return (&Store{opts: Options{Dir: dir}}).logPath(conv)
}
