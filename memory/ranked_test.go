package memory

import (
	"context"
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
