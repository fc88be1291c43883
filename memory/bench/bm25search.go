package bench

import (
	"container/heap"
	"fmt"
	"math"
	"strings"
)

// BM25Search is the plain search baseline of the scale benchmark: an
// in-memory inverted index (postings per term) with Okapi BM25 scoring
// (k1 = 1.2, b = 0.75) and a top-k heap, which is what a minimal full-text
// memory server does per query. Unlike BM25 (the LoCoMo reference, which
// scores every document), it touches only the documents that share a term
// with the query.
type BM25Search struct {
	docs     []string
	postings map[string][]posting
	dl       []float32
	avgdl    float64
	// tokens are each document's cl100k tokens (WithTokens), counted once
	// as a store counts a turn's at ingest.
	tokens []int32
}

type posting struct {
	doc int32
	tf  int32
}

// NewBM25Search indexes docs.
func NewBM25Search(docs []string) *BM25Search {
	x := &BM25Search{docs: docs, postings: map[string][]posting{}, dl: make([]float32, len(docs))}
	var total float64
	for i, d := range docs {
		toks := Tokenize(d)
		tf := make(map[string]int32, len(toks))
		for _, t := range toks {
			tf[t]++
		}
		for t, n := range tf {
			x.postings[t] = append(x.postings[t], posting{doc: int32(i), tf: n})
		}
		x.dl[i] = float32(len(toks))
		total += float64(len(toks))
	}
	if len(docs) > 0 {
		x.avgdl = total / float64(len(docs))
	}
	return x
}

// Search returns the indices of the k best documents for query, best first.
func (x *BM25Search) Search(query string, k int) []int {
	n := float64(len(x.docs))
	scores := map[int32]float64{}
	seen := map[string]bool{}
	for _, q := range Tokenize(query) {
		ps := x.postings[q]
		if seen[q] || len(ps) == 0 {
			continue
		}
		seen[q] = true
		df := float64(len(ps))
		idf := math.Log1p((n - df + 0.5) / (df + 0.5))
		for _, p := range ps {
			f := float64(p.tf)
			norm := 1 - bm25B + bm25B*float64(x.dl[p.doc])/x.avgdl
			scores[p.doc] += idf * f * (bm25K1 + 1) / (f + bm25K1*norm)
		}
	}
	h := &topK{}
	for doc, s := range scores {
		if h.Len() < k {
			heap.Push(h, scored{doc, s})
		} else if s > (*h)[0].score || s == (*h)[0].score && doc < (*h)[0].doc {
			(*h)[0] = scored{doc, s}
			heap.Fix(h, 0)
		}
	}
	out := make([]int, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = int(heap.Pop(h).(scored).doc)
	}
	return out
}

// Answer runs Search and renders the hits as a search tool's text result.
func (x *BM25Search) Answer(query string, k int) string {
	var b strings.Builder
	for rank, i := range x.Search(query, k) {
		fmt.Fprintf(&b, "%d. [t%d] %s\n", rank+1, i+1, x.docs[i])
	}
	return b.String()
}

// WithTokens counts every document's tokens once with count, for
// AnswerBudget.
func (x *BM25Search) WithTokens(count func(string) int) *BM25Search {
	x.tokens = make([]int32, len(x.docs))
	for i, d := range x.docs {
		x.tokens[i] = int32(count(d))
	}
	return x
}

// packDepth is how many hits AnswerBudget considers, as many as recall's
// lexical signal fetches.
const packDepth = 300

// AnswerBudget is the baseline that does recall's job in the plainest
// way: the best BM25 hits (of the first 300), best first, first fit, as
// many as fit in maxTokens (each hit's line costs its text's tokens, counted
// once by WithTokens, and 8 for its numbering), rendered as Answer does.
// Without WithTokens it answers the top 10.
func (x *BM25Search) AnswerBudget(query string, maxTokens int) string {
	if x.tokens == nil {
		return x.Answer(query, 10)
	}
	const lineCost = 8
	var b strings.Builder
	used, rank := 0, 0
	for _, i := range x.Search(query, packDepth) {
		cost := int(x.tokens[i]) + lineCost
		if used+cost > maxTokens {
			continue
		}
		used += cost
		rank++
		fmt.Fprintf(&b, "%d. [t%d] %s\n", rank, i+1, x.docs[i])
	}
	return b.String()
}

type scored struct {
	doc   int32
	score float64
}

// topK is a min-heap on score (ties: the later document is smaller).
type topK []scored

func (h topK) Len() int { return len(h) }
func (h topK) Less(i, j int) bool {
	if h[i].score != h[j].score {
		return h[i].score < h[j].score
	}
	return h[i].doc > h[j].doc
}
func (h topK) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *topK) Push(v any)   { *h = append(*h, v.(scored)) }
func (h *topK) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
