package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/scrub"
)

const secretFact = "My locker combination is QUARTZLYNX 4417, keep it safe."

// chatAbout is a conversation long enough to compact at a 400-token window:
// n turns about rotating subjects, the secret fact at turn 5.
func chatAbout(n int) []string {
	subjects := []string{"the greenhouse drip irrigation", "the catamaran jib sail", "the sourdough rye starter", "the kubernetes ingress certificates"}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Turn %d about %s: we checked the schedule, wrote down what changed, and agreed on the next step for the week.", i+1, subjects[(i/6)%len(subjects)])
	}
	out[4] = secretFact
	return out
}

// seen gathers what a client can read of a conversation: status, every
// topic expanded in full, recalls and quotes about the fact.
func seen(t *testing.T, s *memory.Store, conv string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	st, err := s.Status(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(st)
	b.Write(js)
	for _, ts := range st.Tags {
		ex, err := s.Expand(ctx, memory.ExpandRequest{ConversationID: conv, Tag: ts.Tag, Depth: memory.DepthFull, MaxTokens: 20000})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(ex.Text)
	}
	for _, q := range []string{"locker combination", "quartzlynx", "what is my locker code?"} {
		r, err := s.Recall(ctx, memory.RecallRequest{ConversationID: conv, Message: q, MaxTokens: 4000})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(r.Text)
		fq, err := s.FindQuote(ctx, memory.FindQuoteRequest{ConversationID: conv, Query: q})
		if err != nil {
			t.Fatal(err)
		}
		js, _ = json.Marshal(fq.Quotes)
		b.Write(js)
	}
	return strings.ToLower(b.String())
}

// quoted returns the turn id find_quote gives for an exact phrase ("" for none).
func quoted(t *testing.T, s *memory.Store, conv, phrase string) string {
	t.Helper()
	q, err := s.FindQuote(context.Background(), memory.FindQuoteRequest{ConversationID: conv, Query: phrase})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Quotes) == 0 {
		return ""
	}
	return q.Quotes[0].TurnID
}

// rowsContaining counts the log rows of the database holding word.
func rowsContaining(t *testing.T, url, word string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM vc_master_log WHERE strpos(lower(convert_from(line, 'UTF8')), lower($1)) > 0)
		+ (SELECT count(*) FROM vc_decisions WHERE strpos(lower(convert_from(line, 'UTF8')), lower($1)) > 0)`, word).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// filesContaining lists the files under dir holding word (any case).
func filesContaining(t *testing.T, dir, word string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(strings.ToLower(string(b)), strings.ToLower(word)) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestForgetOnSharedStore: two processes' stores (separate cache
// directories) on one database. A forgets a turn B has read: B no longer
// returns its text from recall, find_quote or expand, every other turn (and
// the other conversation) is intact in both, B writes on after it, a third
// process starting cold never sees it, and no row of the database nor byte
// of B's closed cache holds it.
func TestForgetOnSharedStore(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	dirA, dirB := t.TempDir(), t.TempDir()
	a := open(t, url, dirA, 400)
	defer a.Close()
	b := open(t, url, dirB, 400)
	bClosed := false
	defer func() {
		if !bClosed {
			b.Close()
		}
	}()

	msgs := chatAbout(48)
	for i := 0; i < len(msgs); i += 8 {
		ingest(t, a, "team", msgs[i:i+8]...)
	}
	ingest(t, b, "other", "The quartzlynx label printer is on the second floor.", "Noted, second floor.")
	st, err := b.Status(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Segments < 2 {
		t.Fatalf("setup: %d segments, want compacted history", st.Totals.Segments)
	}
	if !strings.Contains(seen(t, b, "team"), "quartzlynx") || quoted(t, b, "team", "QUARTZLYNX 4417") != "t5" {
		t.Fatal("setup: B does not see the fact before the forget")
	}
	keep := []string{"Turn 4 about the greenhouse", "Turn 6 about the greenhouse", "Turn 30 about the catamaran", "Turn 48 about the kubernetes"}

	res, err := a.Forget(ctx, memory.ForgetRequest{ConversationID: "team", Query: "quartzlynx"})
	if err != nil {
		t.Fatalf("forget on the shared store: %v", err)
	}
	if res.Forgotten != 1 || res.TurnIDs[0] != "t5" {
		t.Fatalf("forget: %+v, want t5", res)
	}
	for name, s := range map[string]*memory.Store{"A": a, "B": b} {
		if got := seen(t, s, "team"); strings.Contains(got, "quartzlynx") || strings.Contains(got, "4417") {
			t.Errorf("%s still shows the forgotten fact after the forget", name)
		}
		for _, k := range keep {
			if quoted(t, s, "team", k) == "" {
				t.Errorf("%s lost %q", name, k)
			}
		}
		if quoted(t, s, "other", "quartzlynx label printer") != "t1" {
			t.Errorf("%s lost the other conversation's turn", name)
		}
		st, err := s.Status(ctx, "team")
		if err != nil {
			t.Fatal(err)
		}
		if st.Totals.Turns != 48 {
			t.Errorf("%s: %d turns after the forget, want 48 (the forgotten one keeps its number)", name, st.Totals.Turns)
		}
	}
	if n := rowsContaining(t, url, "QUARTZLYNX 4417"); n != 0 {
		t.Errorf("%d rows of the database still hold the forgotten text", n)
	}
	// The logs move on from the rewrite, in both processes.
	if r := ingest(t, b, "team", "After the forget: the jib sail goes back on Monday."); r.TurnIDs[0] != "t49" {
		t.Fatalf("B's write after the forget: %v, want t49", r.TurnIDs)
	}
	if quoted(t, a, "team", "jib sail goes back on Monday") != "t49" {
		t.Fatal("A does not see B's write after the forget")
	}
	// A resend of the forgotten message is refused by its hash, from B too.
	if r := ingest(t, b, "team", secretFact); r.Stored != 0 {
		t.Fatalf("a resend of the forgotten message through B was stored: %+v", r)
	}
	// A third process, cold.
	c := open(t, url, t.TempDir(), 400)
	if got := seen(t, c, "team"); strings.Contains(got, "quartzlynx") {
		t.Error("a new process sees the forgotten fact")
	}
	if quoted(t, c, "team", "Turn 30 about the catamaran") == "" {
		t.Error("a new process lost a kept turn")
	}
	c.Close()
	// B's cache, once closed, keeps no byte of it (the other conversation's
	// "quartzlynx label printer" is the only hit allowed).
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	bClosed = true
	if files := filesContaining(t, dirB, "QUARTZLYNX 4417"); len(files) != 0 {
		t.Errorf("B's closed cache still holds the forgotten text in %v", files)
	}
}

// TestRedactOnSharedStore: scan --redact in one process rewrites a secret
// stored (by a process with scrubbing off) before the rule existed; the
// other process, which had read it, no longer returns it.
func TestRedactOnSharedStore(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	a, _ := openWith(t, url, memory.Options{Dir: t.TempDir(), Scrubber: scrub.Off()})
	defer a.Close()
	b := open(t, url, t.TempDir(), 0)
	defer b.Close()
	key := "sk-proj-" + strings.Repeat("Qz4wT8", 8)
	ingest(t, a, "c", "The lighthouse billing export uses "+key+" as its key.", "Understood.", "The lighthouse dashboard refreshes hourly.")
	if q, err := a.FindQuote(ctx, memory.FindQuoteRequest{ConversationID: "c", Query: "lighthouse billing"}); err != nil || len(q.Quotes) == 0 || !strings.Contains(q.Quotes[0].Excerpt, key) {
		t.Fatalf("setup: the secret is not stored as written: %+v %v", q, err)
	}
	res, err := b.Scan(ctx, memory.ScanRequest{ConversationID: "c", Redact: true})
	if err != nil {
		t.Fatalf("scan --redact on the shared store: %v", err)
	}
	if res.TurnsRedacted != 1 || res.ByRule["openai-key"] != 1 {
		t.Fatalf("scan --redact: %+v, want one openai-key turn redacted", res)
	}
	for name, s := range map[string]*memory.Store{"A": a, "B": b} {
		q, err := s.FindQuote(ctx, memory.FindQuoteRequest{ConversationID: "c", Query: "lighthouse billing"})
		if err != nil || len(q.Quotes) == 0 || q.Quotes[0].TurnID != "t1" {
			t.Fatalf("%s: the redacted turn is gone: %+v %v", name, q, err)
		}
		if strings.Contains(q.Quotes[0].Excerpt, key) {
			t.Errorf("%s still quotes the secret: %s", name, q.Quotes[0].Excerpt)
		}
		r, err := s.Recall(ctx, memory.RecallRequest{ConversationID: "c", Message: "lighthouse billing export key"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.Text, key) || !strings.Contains(r.Text, "dashboard refreshes hourly") {
			t.Errorf("%s recall after the redaction: %q", name, r.Text)
		}
	}
	if n := rowsContaining(t, url, key); n != 0 {
		t.Errorf("%d rows of the database still hold the secret", n)
	}
}
