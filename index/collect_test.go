package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCollectAsBleveSorts checks that collect answers what Bleve's own
// collector sorted by score and ID does, hit for hit and score for score,
// on a corpus made of few distinct texts (so that many documents tie on
// score, at the cut too), spread over several segments, with replaced
// documents, filters and limits from 1 to past the number of matches.
func TestCollectAsBleveSorts(t *testing.T) {
	ctx := context.Background()
	texts := []string{
		"yes", "ok", "sounds good", "the garden party is on Saturday",
		"did you book the flight to Lisbon", "the flight is booked", "party at the garden",
		"Lisbon in May, then the garden", "ok, the party", "yes, the flight",
	}
	ix := openTemp(t, nil)
	var docs []Doc
	for i := range 900 {
		docs = append(docs, Doc{ID: fmt.Sprintf("c%d/%04d", i%3, i), Conversation: fmt.Sprintf("c%d", i%3),
			Kind: []string{"turn", "segment"}[i%5/4], Text: texts[i%len(texts)], Speaker: []string{"Ana", "Bob"}[i%2]})
	}
	for from := 0; from < len(docs); from += 150 {
		if err := ix.Add(ctx, docs[from:from+150]); err != nil {
			t.Fatal(err)
		}
	}
	// Replaced documents leave deleted versions in the older segments.
	for i := 0; i < len(docs); i += 7 {
		docs[i].Text = texts[(i+3)%len(texts)]
		if err := ix.Add(ctx, []Doc{docs[i]}); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(7, 9))
	words := []string{"yes", "ok", "garden", "party", "flight", "Lisbon", "booked", "May", "sounds", "good", "the"}
	ties := 0
	for i := range 300 {
		q := Query{Text: words[r.IntN(len(words))] + " " + words[r.IntN(len(words))], Limit: []int{1, 2, 5, 10, 37, 100, 400, 1000}[r.IntN(8)]}
		switch r.IntN(4) {
		case 0:
			q.Conversations = []string{"c1"}
		case 1:
			q.Kinds = []string{"turn"}
		case 2:
			q.Speaker = "ana"
		}
		// The native search runs Bleve's collector sorted by score and ID;
		// without phrases it is the same query.
		want, err := ix.search(ctx, q, true)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ix.search(ctx, q, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("query %d %+v: %d hits, want %d", i, q, len(got), len(want))
		}
		for j := range want {
			if got[j].ID != want[j].ID || got[j].Score != want[j].Score {
				t.Fatalf("query %d %+v: hit %d is %s (%v), want %s (%v)", i, q, j, got[j].ID, got[j].Score, want[j].ID, want[j].Score)
			}
		}
		if n := len(want); n == q.Limit {
			q.Limit++
			if more, err := ix.search(ctx, q, true); err != nil {
				t.Fatal(err)
			} else if len(more) > n && more[n].Score == want[n-1].Score {
				ties++
			}
		}
	}
	t.Logf("%d queries with a tie across the cut", ties)
	if ties < 50 {
		t.Fatalf("only %d queries had a tie across the cut: the corpus no longer tests what decides them", ties)
	}
}
