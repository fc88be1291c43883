package memory

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSplitOptions: SplitMinTurns and SplitMaxShare decide when a tag is
// over-broad, MaxSplitsPerTurn how many are offered after one call.
func TestSplitOptions(t *testing.T) {
	itinerary := func(n int) []Message {
		var msgs []Message
		for i := 0; i < n; i++ {
			city := []string{"Kyoto", "Osaka", "Nara"}[i%3]
			msgs = append(msgs, msg("user", "Ana", fmt.Sprintf("Japan itinerary: day %d in %s.", i+1, city), t0.Add(time.Duration(i)*time.Minute)))
		}
		return msgs
	}
	tests := []struct {
		name      string
		opts      Options
		turns     int
		wantCalls func(n int) bool
	}{
		{"default: 20 turns are too few", Options{}, 20, func(n int) bool { return n == 0 }},
		{"split_min_turns 10", Options{SplitMinTurns: 10}, 20, func(n int) bool { return n == 1 }},
		{"max_splits_per_turn 3", Options{SplitMinTurns: 10, MaxSplitsPerTurn: 3}, 20, func(n int) bool { return n > 1 && n <= 3 }},
		{"share 0.99: only tags on every turn", Options{SplitMinTurns: 10, SplitMaxShare: 0.99, MaxSplitsPerTurn: 3}, 20, func(n int) bool { return n >= 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := &citySplitter{}
			tt.opts.Splitter = sp
			s := openTest(t, tt.opts)
			ingest(t, s, "c", itinerary(tt.turns))
			if !tt.wantCalls(len(sp.calls)) {
				t.Errorf("splitter called %d times", len(sp.calls))
			}
			seen := map[string]bool{}
			for _, c := range sp.calls {
				if float64(c.Count) <= s.opts.SplitMaxShare*float64(c.Total) {
					t.Errorf("tag %q offered with %d of %d turns, share %.2f", c.Tag, c.Count, c.Total, s.opts.SplitMaxShare)
				}
				if seen[c.Tag] {
					t.Errorf("tag %q offered twice in one call", c.Tag)
				}
				seen[c.Tag] = true
			}
		})
	}
}

// TestContextHintMaxTokens caps the topics-on-record list.
func TestContextHintMaxTokens(t *testing.T) {
	hintTokens := func(max int) int {
		s := openTest(t, Options{ContextHintMaxTokens: max})
		ingest(t, s, "c", chat(60, t0))
		r, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "zebra", MaxTokens: 4000})
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(r.Text, "## Topics on record")
		if i < 0 {
			return 0
		}
		return s.tok.Count(r.Text[i:])
	}
	// The cap leaves room for the heading and a topic line with its
	// description (the hint's short form).
	full, capped := hintTokens(0), hintTokens(40)
	if full <= 44 {
		t.Fatalf("uncapped hint has %d tokens; the fixture should give a longer one", full)
	}
	if capped == 0 || capped > 44 || capped >= full {
		t.Errorf("hint capped at 40 tokens has %d (uncapped %d)", capped, full)
	}
}
