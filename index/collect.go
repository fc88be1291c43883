package index

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"
)

// collect runs bq and returns its limit best documents by score, ties
// broken by ID, as Bleve's top-N collector sorted by "-_score", "_id"
// does. That collector reads the ID of every document the query matches,
// to order them as it goes; reading an ID decodes the document's stored
// fields, and it was a sixth of a recall. Here the scores alone are
// compared while collecting, and IDs are read at the end, only for the
// documents that can be in the answer: the limit best and those tied with
// the lowest of them (which the IDs decide). The answer is the same
// (TestCollectAsBleveSorts).
func (ix *Index) collect(ctx context.Context, bq query.Query, limit int, stats *bsearch.BM25Stats) ([]Hit, error) {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// What Bleve's SearchInContext tells the searchers: the scoring model
	// and the corpus statistics BM25 uses.
	ctx = context.WithValue(ctx, bsearch.GetScoringModelCallbackKey,
		bsearch.GetScoringModelCallbackFn(func() string { return bleveindex.BM25Scoring }))
	ctx = context.WithValue(ctx, bsearch.BM25StatsKey, stats)
	s, err := bq.Searcher(ctx, r, ix.bi.Mapping(), bsearch.SearcherOptions{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	pool := getMatchPool(s.DocumentMatchPoolSize() + limit + 1)
	sctx := &bsearch.SearchContext{DocumentMatchPool: pool, IndexReader: r}
	var kept []*bsearch.DocumentMatch // what goes back to the pool at the end
	defer func() {
		for _, d := range kept {
			pool.Put(d)
		}
		putMatchPool(pool)
	}()
	best := make(scoreHeap, 0, limit)
	// ties hold documents left out of best whose score equals its lowest.
	var ties []*bsearch.DocumentMatch
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		d, err := s.Next(sctx)
		if err != nil {
			return nil, err
		}
		if d == nil {
			break
		}
		switch {
		case len(best) < limit:
			heap.Push(&best, d)
		case d.Score < best[0].Score:
			pool.Put(d)
		case d.Score == best[0].Score:
			ties = append(ties, d)
		default:
			out := best[0]
			best[0] = d
			heap.Fix(&best, 0)
			if out.Score == best[0].Score {
				ties = append(ties, out)
				break
			}
			// The lowest score rose: the ties are out.
			for _, t := range ties {
				pool.Put(t)
			}
			ties = ties[:0]
			pool.Put(out)
		}
	}
	kept = append(best, ties...)
	hits := make([]Hit, len(kept))
	for i, d := range kept {
		id, err := r.ExternalID(d.IndexInternalID)
		if err != nil {
			return nil, fmt.Errorf("read a hit's id: %w", err)
		}
		hits[i] = Hit{ID: id, Score: d.Score}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return hits[:min(limit, len(hits))], nil
}

// matchPools keeps the document pools of finished searches for the next
// ones: making one was a fifth of what a recall allocates. A plain free
// list, not a sync.Pool, which every other garbage collection empties (see
// memory/board.go). A pool keeps the documents given back to it; those a
// searcher held at its end are not, and the next search makes new ones.
var matchPools struct {
	sync.Mutex
	free []*bsearch.DocumentMatchPool
}

// maxMatchPools bounds the pools kept (searches at once, in practice).
const maxMatchPools = 8

func getMatchPool(size int) *bsearch.DocumentMatchPool {
	matchPools.Lock()
	defer matchPools.Unlock()
	if n := len(matchPools.free); n > 0 {
		p := matchPools.free[n-1]
		matchPools.free = matchPools.free[:n-1]
		return p
	}
	return bsearch.NewDocumentMatchPool(size, 0)
}

func putMatchPool(p *bsearch.DocumentMatchPool) {
	matchPools.Lock()
	defer matchPools.Unlock()
	if len(matchPools.free) < maxMatchPools {
		matchPools.free = append(matchPools.free, p)
	}
}

// scoreHeap is a min-heap of documents by score.
type scoreHeap []*bsearch.DocumentMatch

func (h scoreHeap) Len() int           { return len(h) }
func (h scoreHeap) Less(i, j int) bool { return h[i].Score < h[j].Score }
func (h scoreHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *scoreHeap) Push(x any)        { *h = append(*h, x.(*bsearch.DocumentMatch)) }
func (h *scoreHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}
