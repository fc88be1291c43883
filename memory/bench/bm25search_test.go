package bench

import (
	"slices"
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
