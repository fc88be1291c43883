package memory

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	"github.com/vc-mcp/vc-mcp/memory/scrub"
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

// TestScanRedactsFieldsBesideText: a secret stored before scrubbing in a
// speaker's name, a message id or a tool call id is found by scan and
// redacted as Ingest scrubs it now (the name and the call id hold the
// placeholder, the message id a digest), in the log and in what was
// derived from the turn: the segment summaries that name the speaker.
// No byte of it is left in the data directory, and the rest of the
// conversation is as it was.
func TestScanRedactsFieldsBesideText(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	tok := "ghp_" + strings.Repeat("Zq7", 12)
	aws := "AKIAZQ7XW3RT5YU2IOPL"
	stripe := "sk_live_" + strings.Repeat("51Hx", 6)
	opts := Options{Dir: dir, ContextWindow: 400, ProtectedTurns: 2, Scrubber: scrub.Off()}
	s := openTest(t, opts)
	msgs := chat(40, t0)
	msgs[3].Name = "ana " + tok
	msgs[5].ID = "m-" + aws
	msgs = append(msgs,
		Message{Role: "assistant", Content: text("looking up the rota"), ToolCalls: json.RawMessage(`[{"id":"call_` + stripe + `","type":"function","function":{"name":"rota","arguments":"{}"}}]`)},
		Message{Role: "tool", ToolCallID: "call_" + stripe, Content: text("rota found")})
	for i := 0; i < len(msgs); i += 6 {
		ingest(t, s, "c", msgs[i:min(i+6, len(msgs))])
	}
	if st, err := s.Status(ctx, "c"); err != nil || st.Totals.Segments == 0 {
		t.Fatalf("setup: want compaction (segment summaries naming the speaker): %+v %v", st, err)
	}
	n := len(msgs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(filesContaining(t, dir, tok)) == 0 || len(filesContaining(t, dir, aws)) == 0 {
		t.Fatal("setup: the secrets were not stored as sent")
	}

	opts.Scrubber = nil
	s = openTest(t, opts)
	before := turnTexts(t, s, "c", n)
	found, err := s.Scan(ctx, ScanRequest{ConversationID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	turns := map[string]bool{}
	for _, f := range found.Findings {
		if f.Where == "turn" {
			turns[f.TurnID] = true
		}
	}
	// The name (t4), the id (t6), the call (in tool_calls) and its result.
	for _, id := range []string{turnID(4), turnID(6), turnID(n - 1), turnID(n)} {
		if !turns[id] {
			t.Errorf("scan found nothing in %s: %+v", id, found.Findings)
		}
	}
	red, err := s.Scan(ctx, ScanRequest{ConversationID: "c", Redact: true})
	if err != nil {
		t.Fatal(err)
	}
	if red.TurnsRedacted != 4 {
		t.Fatalf("redacted %d turns, want 4: %+v", red.TurnsRedacted, red)
	}
	if tr, err := s.Turn(ctx, "c", turnID(4)); err != nil || tr.Speaker != "ana [secret:github-token]" {
		t.Errorf("speaker after redaction: %q (%v)", tr.Speaker, err)
	}
	if again, _ := s.Scan(ctx, ScanRequest{ConversationID: "c"}); len(again.Findings) != 0 {
		t.Errorf("scan after redact: %+v", again.Findings)
	}
	// Resent, the messages are scrubbed as stored: duplicates.
	if r := ingest(t, s, "c", msgs); r.Stored != 0 {
		t.Errorf("the conversation resent after redaction: stored %d again", r.Stored)
	}
	after := turnTexts(t, s, "c", n)
	for id, v := range before {
		if after[id] != v {
			t.Errorf("turn %s text changed by redacting the fields beside it: %q -> %q", id, v, after[id])
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{tok, aws, stripe} {
		if files := filesContaining(t, dir, secret); len(files) > 0 {
			t.Errorf("%s... is still on disk in %v", secret[:8], files)
		}
	}
}

// TestScanRedactsTopicsInRequestHistory: a key stored before scrubbing
// became a topic (lowercased: "ghp-..."), carried on by the next turn, and
// recalls named that topic in the request history. Redaction takes the
// topic off every turn, so it is gone though no turn was forgotten: no
// file and no request record keeps its name (found by a hostile review:
// matched_tags and the turn inclusions kept it).
func TestScanRedactsTopicsInRequestHistory(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	tok := "ghp_" + strings.Repeat("D8ymGizu", 4) + "wqXy"
	topic := strings.ToLower(strings.ReplaceAll(tok, "_", "-"))
	opts := Options{Dir: dir, Scrubber: scrub.Off()}
	s := openTest(t, opts)
	ingest(t, s, "c", []Message{
		msg("user", "Ana", "the deploy token is "+tok+" for the lighthouse repo", t0),
		msg("assistant", "Bot", "noted the deploy token for the lighthouse repo", t0.Add(time.Minute)),
	})
	if _, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "which deploy token " + tok + " for the lighthouse repo?"}); err != nil {
		t.Fatal(err)
	}
	holds := func(what string) bool {
		t.Helper()
		recs, err := s.readRequestHistory("c")
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(recs)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(strings.ToLower(string(b)), what)
	}
	if !holds(topic) {
		t.Fatalf("setup: the key is not a topic the request history names (%s)", topic)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Scrubber = nil
	s = openTest(t, opts)
	if red, err := s.Scan(ctx, ScanRequest{ConversationID: "c", Redact: true}); err != nil || red.TurnsRedacted != 1 {
		t.Fatalf("redact: %+v %v", red, err)
	}
	if holds(topic) {
		t.Errorf("the request history still names the topic %s the key made", topic)
	}
	if holds(strings.ToLower(tok)) {
		t.Errorf("the request history still holds the key")
	}
	// The turn after it carried the topic on: it is taken off every turn,
	// in every file, not only off the redacted one.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if files := filesContaining(t, dir, topic); len(files) > 0 {
		t.Errorf("the topic %s is still stored in %v", topic, files)
	}
	s = openTest(t, opts)
	st, err := s.Status(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range st.Tags {
		if strings.Contains(tag.Tag, "d8ym") {
			t.Errorf("after a restart the conversation still has the topic %s", tag.Tag)
		}
	}
}
