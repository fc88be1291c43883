package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The inverted-index baseline ranks exactly as the exhaustive reference.
func TestBM25SearchMatchesReference(t *testing.T) {
	syn := Generate(400, 7)
	docs := make([]string, len(syn.Turns))
	for i, tt := range syn.Turns {
		docs[i] = tt.Content
	}
	ref, fast := NewBM25(docs), NewBM25Search(docs)
	recall, quote := syn.Queries(30)
	for _, q := range append(recall, quote...) {
		want := ref.Rank(q)
		if len(want) > 10 {
			want = want[:10]
		}
		got := fast.Search(q, 10)
		if !slices.Equal(got, want) {
			t.Fatalf("query %q: top 10 %v, reference %v", q, got, want)
		}
	}
	if a := fast.Answer(recall[0], 3); a == "" {
		t.Fatal("empty answer")
	}
	if got := fast.Search("zzzz-no-such-word", 5); len(got) != 0 {
		t.Fatalf("unknown word matched %v", got)
	}
}

// AnswerBudget packs the best hits, best first, into the budget: its
// answer never exceeds it, fills most of it, and lists hits in rank order.
func TestBM25SearchAnswerBudget(t *testing.T) {
	syn := Generate(2000, 3)
	docs := make([]string, len(syn.Turns))
	for i, tt := range syn.Turns {
		docs[i] = tt.Content
	}
	count, err := NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	x := NewBM25Search(docs)
	recall, _ := syn.Queries(20)
	if got, want := x.AnswerBudget(recall[0], 500), x.Answer(recall[0], 10); got != want {
		t.Fatalf("without token counts AnswerBudget should answer the top 10")
	}
	x.WithTokens(count.Count)
	for _, budget := range []int{50, 500, 2000} {
		for _, q := range recall {
			a := x.AnswerBudget(q, budget)
			if n := count.Count(a); n > budget {
				t.Fatalf("budget %d, query %q: answer of %d tokens", budget, q, n)
			}
			hits := x.Search(q, packDepth)
			if len(hits) == 0 {
				continue
			}
			// The best hit comes first whenever it fits alone.
			if int(x.tokens[hits[0]])+8 <= budget && !strings.HasPrefix(a, fmt.Sprintf("1. [t%d] ", hits[0]+1)) {
				t.Fatalf("budget %d, query %q: answer does not start with the best hit t%d:\n%s", budget, q, hits[0]+1, a)
			}
			if budget == 2000 && len(hits) == packDepth && count.Count(a) < budget*3/4 {
				t.Fatalf("budget %d, query %q: only %d tokens packed from %d hits", budget, q, count.Count(a), len(hits))
			}
		}
	}
}
