package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRankCandidatesHead: the sorted head is the full sort's head, the rest
// holds every other candidate, and filtering keeps both in order.
func TestRankCandidatesHead(t *testing.T) {
	convs := []*conv{{id: "b"}, {id: "a"}}
	for _, tc := range []struct {
		name      string
		n, head   int
		distinct  int // distinct scores: few make ties
		wantWhole bool
	}{
		{"empty", 0, 4, 10, true},
		{"small: sorted whole", 7, 4, 100, true},
		{"large", 5000, rankedHead, 1 << 30, false},
		{"ties", 3000, 64, 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), 7))
			cs := make([]candidate, tc.n)
			for i := range cs {
				cs[i] = candidate{c: convs[rng.IntN(2)], seq: i, score: float64(rng.IntN(tc.distinct))}
			}
			want := slices.Clone(cs)
			slices.SortFunc(want, candCmp)
			r := rankCandidates(cs, tc.head)
			if (r.sorted == r.len()) != tc.wantWhole || r.len() != tc.n {
				t.Fatalf("sorted %d of %d", r.sorted, r.len())
			}
			if !slices.Equal(r.list[:r.sorted], want[:r.sorted]) {
				t.Fatal("the sorted head is not the full sort's head")
			}
			if got := ordered(r); !slices.Equal(got, want) {
				t.Fatal("head plus the sorted rest is not the full sort")
			}
			r = rankCandidates(slices.Clone(want), tc.head)
			odd := r.filter(func(cd candidate) bool { return cd.seq%3 != 0 })
			var wantOdd []candidate
			for _, cd := range want {
				if cd.seq%3 != 0 {
					wantOdd = append(wantOdd, cd)
				}
			}
			if !slices.Equal(odd.list[:odd.sorted], wantOdd[:odd.sorted]) || !slices.Equal(ordered(odd), wantOdd) {
				t.Fatal("filtering changed the order")
			}
		})
	}
}

// TestPackPartialRankingSameAsFull: packing a ranking sorted only at its
// head takes the same turns, in the same order, as packing it sorted whole,
// for budgets from nearly empty to large and heads from tiny to all.
func TestPackPartialRankingSameAsFull(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	rng := rand.New(rand.NewPCG(3, 9))
	words := strings.Fields("the cache job failed twice on friday because the token expired and nobody rotated it before the deploy window opened")
	var ms []Message
	for i := range 600 {
		n := 1 + rng.IntN(40)
		if i%50 == 0 {
			n = 400 // a few long turns: cut at the top of the ranking
		}
		var b strings.Builder
		for j := range n {
			b.WriteString(words[(i+j*7)%len(words)])
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "item %d.", i)
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		ms = append(ms, msg(role, "", b.String(), t0.Add(time.Duration(i)*time.Hour)))
	}
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "p", Messages: ms}); err != nil {
		t.Fatal(err)
	}
	c, err := s.conversation(ctx, "p", false)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var cs []candidate
	for seq := 1; seq <= len(ms); seq++ {
		if t := c.turn(seq); t != nil && !t.Empty {
			cs = append(cs, candidate{c: c, seq: seq, score: float64(rng.IntN(200))})
		}
	}
	picks := func(r rankedList, budget int) string {
		p := newPacker(s, budget, 10, false)
		p.pack(r)
		p.used -= 30 // as after the exact count: room again, packed a second time
		p.pack(r)
		var b strings.Builder
		for _, pk := range p.picks {
			fmt.Fprintf(&b, "%d:%d ", pk.seq, pk.cost)
		}
		return fmt.Sprintf("%s| used %d", b.String(), p.used)
	}
	for _, budget := range []int{60, 300, 2000, 8000} {
		whole := rankCandidates(slices.Clone(cs), len(cs))
		want := picks(whole, budget)
		for _, head := range []int{4, 16, 100} {
			if got := picks(rankCandidates(slices.Clone(cs), head), budget); got != want {
				t.Errorf("budget %d, head %d:\n got %s\nwant %s", budget, head, got, want)
			}
		}
	}
}

// ordered returns every candidate of r in order (sorting the rest).
func ordered(r rankedList) []candidate {
	if r.sorted < len(r.list) {
		slices.SortFunc(r.list[r.sorted:], candCmp)
	}
	return r.list
}

// TestTurnLiteFollowsTurns checks that the compact per-turn array ranking
// reads (conv.lite) says what the turns say, through ingest (questions,
// sessions, empty turns), compaction, forget, a reopen and a rebuild.
func TestTurnLiteFollowsTurns(t *testing.T) {
	ctx := context.Background()
	opts := Options{Dir: t.TempDir(), ContextWindow: 1200, ProtectedTurns: 2}
	s := openTest(t, opts)
	msgs := forgetFixture(t, s)
	// A question, a tool call without text (an empty turn) and a new
	// session a day later.
	later := t0.Add(24 * time.Hour)
	ingest(t, s, "c", []Message{
		msg("user", "Ana", "Did the vet call back about Rex?", later),
		{Role: "assistant", ToolCalls: json.RawMessage(`[{"id":"1","type":"function","function":{"name":"lookup","arguments":"{}"}}]`), Timestamp: later.Add(time.Minute).Format(time.RFC3339)},
		msg("assistant", "Bot", "Not yet.", later.Add(2*time.Minute)),
	})
	check := func(when string, want int) {
		t.Helper()
		c, err := s.conversation(ctx, "c", false)
		if err != nil {
			t.Fatal(err)
		}
		c.mu.RLock()
		defer c.mu.RUnlock()
		if len(c.turns) != want || len(c.lite) != len(c.turns) {
			t.Fatalf("%s: %d turns, %d lite entries; want %d of each", when, len(c.turns), len(c.lite), want)
		}
		var q, e int
		sessions := map[int32]bool{}
		for i := range c.turns {
			if got, wantL := c.lite[i], liteOf(&c.turns[i], c.lite[i].speaker); got != wantL {
				t.Fatalf("%s: turn %d: lite %+v, want %+v", when, i+1, got, wantL)
			}
			if sp := c.lite[i].speaker; int(sp) >= len(c.speakerNames) || c.speakerNames[sp] != speakerName(&c.turns[i]) {
				t.Fatalf("%s: turn %d: speaker slot %d does not name %q (%q)", when, i+1, sp, speakerName(&c.turns[i]), c.speakerNames)
			}
			if c.lite[i].question() {
				q++
			}
			if c.lite[i].empty() {
				e++
			}
			sessions[c.lite[i].session] = true
		}
		if q == 0 || e == 0 || len(sessions) < 2 {
			t.Fatalf("%s: %d questions, %d empty turns, %d sessions: the fixture no longer covers every field", when, q, e, len(sessions))
		}
	}
	n := len(msgs) + 3
	check("after ingest", n)
	if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", Query: secretWord}); err != nil {
		t.Fatal(err)
	}
	check("after forget", n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, opts)
	check("after reopen", n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Rebuild(ctx, opts, nil); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, opts)
	check("after rebuild", n)
	// A record damaged on disk becomes an empty placeholder when the
	// conversation loads.
	path := s.logPath("c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	garble(t, path, 3)
	s = openTest(t, opts)
	check("after a damaged record", n)
	if damaged(t, s, "c") != 1 {
		t.Fatal("the garbled record was not found damaged")
	}
}

// TestPrefixTokensBoundsTheLinePrefix: the packer prices a turn's line as
// its text plus prefixTokens, read from the turn's speaker slot. That must
// bound the line's real tokens for every kind of speaker (role, name,
// non-Latin name, long id), and a turn without a slot is priced the same
// by name.
func TestPrefixTokensBoundsTheLinePrefix(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	var msgs []Message
	for i, who := range [][2]string{{"user", ""}, {"assistant", ""}, {"user", "Caroline"}, {"assistant", "Melanie"}, {"user", "Émilie-Zoë"}, {"user", "山田太郎"}, {"tool", ""}} {
		msgs = append(msgs, msg(who[0], who[1], fmt.Sprintf("Line %d: the ferry leaves at nine.", i), t0.Add(time.Duration(i)*time.Minute)))
	}
	for i := len(msgs); i < 1005; i++ {
		msgs = append(msgs, msg("user", "Caroline", fmt.Sprintf("filler %d", i), t0.Add(time.Duration(i)*time.Minute)))
	}
	ingest(t, s, "c", msgs[:500])
	ingest(t, s, "c", msgs[500:])
	c, err := s.conversation(ctx, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	c.lock()
	defer c.unlock()
	if len(c.speakerNames) != 7 {
		t.Fatalf("speaker slots %q, want one per speaker (7)", c.speakerNames)
	}
	for _, seq := range []int{1, 2, 3, 4, 5, 6, 7, 8, 99, 100, 1005} {
		tm := c.turn(seq)
		content, err := c.log.ReadContent(tm.Start, tm.End)
		if err != nil {
			t.Fatal(err)
		}
		pre := s.prefixTokens(c, seq)
		if real := s.tok.Count(turnPrefix(tm) + oneLine(content)); real > tm.Tokens+pre {
			t.Errorf("t%d (%s): line is %d tokens, priced %d+%d", seq, speakerName(tm), real, tm.Tokens, pre)
		}
		slot := c.lite[seq-1].speaker
		c.lite[seq-1].speaker = noSpeaker
		if byName := s.prefixTokens(c, seq); byName != pre {
			t.Errorf("t%d: %d prefix tokens by name, %d by slot", seq, byName, pre)
		}
		c.lite[seq-1].speaker = slot
	}
}
