package memory

import (
	"context"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// timelineChat is a user and an assistant over three months: the database
// choice is made at the beginning, revisited in the middle and replaced at
// the end, with other topics between (role-only: no speaker names).
func timelineChat() []Message {
	day := func(m time.Month, d, h int) time.Time { return time.Date(2024, m, d, h, 0, 0, 0, time.UTC) }
	u := func(s string, at time.Time) Message { return msg("user", "", s, at) }
	a := func(s string, at time.Time) Message { return msg("assistant", "", s, at) }
	return []Message{
		u("For the inventory app, which database should we start with?", day(3, 4, 9)),
		a("Pick SQLite to start: one file, no server, and the app has a single writer.", day(3, 4, 9).Add(time.Minute)),
		u("Good, SQLite it is. Next, the login page needs a password reset flow.", day(3, 4, 10)),
		a("Send a one-time link by email that expires after 30 minutes.", day(3, 4, 10).Add(time.Minute)),
		u("I renewed my passport today; the photo booth was broken again.", day(3, 20, 18)),
		a("Keep the receipt; the renewal takes about six weeks.", day(3, 20, 18).Add(time.Minute)),
		u("The database file is getting locked during the nightly import.", day(4, 15, 9)),
		a("Turn on WAL mode so readers do not block the importer.", day(4, 15, 9).Add(time.Minute)),
		u("Book a table for Mum's birthday dinner at Luigi's on the 3rd.", day(5, 2, 19)),
		a("Luigi's, 3 May, 19:30, table for four: done.", day(5, 2, 19).Add(time.Minute)),
		u("We now have three writers, so the database has to move to Postgres.", day(5, 28, 9)),
		a("Agreed: migrate to Postgres 16 with pgloader, keep SQLite as the offline cache.", day(5, 28, 9).Add(time.Minute)),
		u("Plan the sprint demo for Friday: inventory search and the import report.", day(6, 3, 9)),
		a("Demo order: search first, then the import report, ten minutes each.", day(6, 3, 9).Add(time.Minute)),
	}
}

func TestRecallTemporal(t *testing.T) {
	s := openTest(t, Options{Now: func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) }})
	ingest(t, s, "tl", timelineChat())
	tests := []struct {
		name    string
		message string
		budget  int
		want    []string // turn ids that must be recalled
		first   string   // the earliest turn recalled, "" = not checked
		not     []string // turn ids that must not be recalled
	}{
		{"at the beginning", "At the beginning, what database did we pick?", 120, []string{"t1", "t2"}, "t1", nil},
		{"originally", "What database did we originally choose?", 120, []string{"t1", "t2"}, "t1", nil},
		{"most recently", "Most recently, what did we decide about the database?", 100, []string{"t11", "t12"}, "", []string{"t1"}},
		// Relative dates resolve against the conversation's time line (its
		// last session is 3 June 2024; the wall clock is 2026).
		{"last week", "What came up last week?", 150, []string{"t11", "t12"}, "", nil},
		{"in May", "What happened in May?", 150, []string{"t9", "t11"}, "", []string{"t1", "t13"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := s.Recall(context.Background(), RecallRequest{ConversationID: "tl", Message: tt.message, MaxTokens: tt.budget})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, id := range r.TurnIDs {
				got[id] = true
			}
			for _, id := range tt.want {
				if !got[id] {
					t.Errorf("recall lacks %s: got %v\n%s", id, r.TurnIDs, r.Text)
				}
			}
			for _, id := range tt.not {
				if got[id] {
					t.Errorf("recall holds %s: got %v", id, r.TurnIDs)
				}
			}
			if tt.first != "" && (len(r.TurnIDs) == 0 || r.TurnIDs[0] != tt.first) {
				t.Errorf("earliest recalled turn: got %v, want %s first", r.TurnIDs, tt.first)
			}
		})
	}
}

// TestOrderSignal checks the order signal alone: among the turns on the
// message's topic, the earliest (or latest) come first.
func TestOrderSignal(t *testing.T) {
	s := openTest(t, Options{})
	ingest(t, s, "tl", timelineChat())
	c, err := s.conversation(context.Background(), "tl", false)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		message string
		want    int // first seq of the list
	}{
		{"At the beginning, what database did we pick?", 1},
		{"What was the first thing about the database?", 1},
		{"Last time we talked about the database, what did we decide?", 12},
	}
	for _, tt := range tests {
		q := tagging.ClassifyQuery(tt.message, s.now())
		c.mu.RLock()
		r := s.newRanker([]*conv{c}, tt.message, nil, q, 50)
		sig, err := r.order(context.Background(), []signal{r.tags()})
		c.mu.RUnlock()
		if err != nil {
			t.Fatal(err)
		}
		if len(sig.keys) == 0 || sig.keys[0].seq != tt.want {
			var seqs []int
			for _, k := range sig.keys {
				seqs = append(seqs, k.seq)
			}
			t.Errorf("%q: order list %v, want t%d first", tt.message, seqs, tt.want)
		}
	}
	// No order words: no list.
	q := tagging.ClassifyQuery("which database did we pick?", s.now())
	if sig, _ := s.newRanker([]*conv{c}, "", nil, q, 50).order(context.Background(), nil); len(sig.keys) != 0 {
		t.Errorf("order list for a message without order words: %v", sig.keys)
	}
}

func TestParseRanking(t *testing.T) {
	base := DefaultRanking()
	r, err := ParseRanking(base, "speaker=1, expand=0")
	if err != nil {
		t.Fatal(err)
	}
	if r.Speaker != 1 || r.Expand != 0 || r.Lexical != base.Lexical {
		t.Fatalf("got %+v", r)
	}
	for _, bad := range []string{"speakers=1", "speaker", "speaker=-1", "speaker=x"} {
		if _, err := ParseRanking(base, bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	// Every knob has a name.
	if len(base.names()) != len(base.knobs()) {
		t.Fatalf("%d names for %d knobs", len(base.names()), len(base.knobs()))
	}
	for _, n := range base.names() {
		if _, err := ParseRanking(base, n+"=0.5"); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}
