package index

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// openWithVectors creates an index of the previous schema (term vectors on
// the text field), searched with Bleve's own phrases and highlighting.
func openWithVectors(t *testing.T) *Index {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tv")
	bi, err := bleve.NewUsing(path, newMappingVectors(true), scorch.Name, scorch.Name, runtimeConfig(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ix := &Index{bi: bi, path: path, batchSize: DefaultBatchSize, flushDelay: time.Hour,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), batchFn: bi.Batch}
	t.Cleanup(func() { _ = ix.Close() })
	return ix
}

func sortedSpans(ss []Span) []Span {
	out := slices.Clone(ss)
	slices.SortFunc(out, func(a, b Span) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return a.End - b.End
	})
	return slices.Compact(out)
}

// TestPhrasesAsWithTermVectors: phrases checked on the re-analysed text
// give the hits, scores and highlighted spans Bleve gave from term
// vectors, over phrases with stop words, repeated words, possessives,
// filters, required phrases and phrases that are nowhere.
func TestPhrasesAsWithTermVectors(t *testing.T) {
	ctx := context.Background()
	docs := synthDocs(1500, 11)
	docs = append(docs,
		Doc{ID: "x/1", Conversation: "x", Kind: "turn", Text: "Robin's garden party, the garden party of the year: garden party garden party!", Speaker: "Robin"},
		Doc{ID: "x/2", Conversation: "x", Kind: "turn", Text: "A walk in the park and a walk in the other park", Speaker: "Ana"},
		Doc{ID: "x/3", Conversation: "x", Kind: "turn", Text: "very very good, very good indeed; good very", Speaker: "Ana"},
		Doc{ID: "x/4", Conversation: "x", Kind: "turn", Text: "Café crème at the café — crème brûlée \xff bad byte", Speaker: "Bob"},
		Doc{ID: "x/5", Conversation: "x", Kind: "turn", Text: "the flight to Lisbon, the flight to lisbon, THE FLIGHT TO LISBON", Speaker: "Bob"},
	)
	text := map[string]string{}
	for _, d := range docs {
		text[d.ID] = d.Text
	}
	docText := func(id string) (string, bool) { s, ok := text[id]; return s, ok }

	tv := openWithVectors(t)
	plain := openTemp(t, nil)
	for from := 0; from < len(docs); from += 300 {
		to := min(from+300, len(docs))
		for _, ix := range []*Index{tv, plain} {
			if err := ix.Add(ctx, docs[from:to]); err != nil {
				t.Fatal(err)
			}
		}
	}

	r := rand.New(rand.NewPCG(3, 5))
	var queries []Query
	for _, p := range []string{"garden party", "the garden party", "walk in the park", "very good", "very very", "good very",
		"café crème", "crème brûlée", "flight to Lisbon", "Robin's garden", "party garden", "nowhere at all", "the of and"} {
		queries = append(queries,
			Query{Text: p, Phrases: []string{p}, Limit: 20, Highlight: true},
			Query{Text: p, Phrases: []string{p}, RequirePhrases: true, Limit: 20, Highlight: true},
			Query{Text: "", Phrases: []string{p}, Limit: 20, Highlight: true},
			Query{Text: p, Phrases: []string{p}, Conversations: []string{"x"}, Speaker: "ana", Limit: 20, Highlight: true},
		)
	}
	for i := 0; i < 150; i++ {
		words := strings.Fields(strings.Trim(docs[r.IntN(len(docs))].Text, "."))
		n := 2 + r.IntN(4)
		start := r.IntN(max(len(words)-n, 1))
		p := strings.Join(words[start:min(start+n, len(words))], " ")
		q := Query{Text: p, Phrases: []string{p}, Limit: 1 + r.IntN(50), Highlight: r.IntN(4) != 0}
		switch r.IntN(4) {
		case 0:
			q.Conversations = []string{fmt.Sprintf("c%d", r.IntN(10))}
		case 1:
			q.RequirePhrases = true
		case 2:
			q.Phrases = append(q.Phrases, synthObjects[r.IntN(len(synthObjects))])
		}
		queries = append(queries, q)
	}
	matched := 0
	for _, q := range queries {
		want, err := tv.search(ctx, q, true)
		if err != nil {
			t.Fatal(err)
		}
		q.DocText = docText
		got, err := plain.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%q (require %v, conv %v): %d hits, %d with term vectors", q.Phrases, q.RequirePhrases, q.Conversations, len(got), len(want))
			continue
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.ID != w.ID || g.Score != w.Score {
				t.Errorf("%q: hit %d is %s %v, %s %v with term vectors", q.Phrases, i, g.ID, g.Score, w.ID, w.Score)
				continue
			}
			if gs, ws := sortedSpans(g.Matches), sortedSpans(w.Matches); !slices.Equal(gs, ws) {
				t.Errorf("%q: hit %s spans %v, %v with term vectors", q.Phrases, g.ID, gs, ws)
			}
			if gf, wf := Fragments(text[g.ID], g.Matches), Fragments(text[w.ID], w.Matches); !slices.Equal(gf, wf) {
				t.Errorf("%q: hit %s fragments %q, %q with term vectors", q.Phrases, g.ID, gf, wf)
			}
		}
		if len(want) > 0 {
			matched++
		}
	}
	if matched < len(queries)/2 {
		t.Fatalf("setup: only %d of %d queries found anything", matched, len(queries))
	}

	// Without the text, a phrase or a highlight is refused, not silently empty.
	if _, err := plain.Search(ctx, Query{Text: "garden", Phrases: []string{"garden party"}}); err == nil {
		t.Error("a phrase without DocText: no error")
	}
	if _, err := plain.Search(ctx, Query{Text: "garden", Highlight: true}); err == nil {
		t.Error("a highlight without DocText: no error")
	}
	// A document whose text cannot be had matches no phrase.
	hits, err := plain.Search(ctx, Query{Phrases: []string{"garden party"}, Conversations: []string{"x"}, DocText: func(string) (string, bool) { return "", false }})
	if err != nil || len(hits) != 0 {
		t.Errorf("phrase with no text: %v, %v; want no hits", hits, err)
	}
}
