package bench

import (
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/blevesearch/go-porterstemmer"
)

// BM25 parameters of the LoCoMo-R reference baseline.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Tokenize splits s into lowercase runs of letters and digits and stems each
// with the Porter stemmer. No stop words are removed.
func Tokenize(s string) []string {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := fields[:0]
	for _, f := range fields {
		if st := porterstemmer.StemString(f); st != "" {
			out = append(out, st)
		}
	}
	return out
}

// BM25 is an in-memory Okapi BM25 index (k1 = 1.2, b = 0.75) over a fixed
// list of documents.
type BM25 struct {
	tf    []map[string]int
	dl    []float64
	df    map[string]int
	avgdl float64
}

// NewBM25 indexes docs.
func NewBM25(docs []string) *BM25 {
	x := &BM25{tf: make([]map[string]int, len(docs)), dl: make([]float64, len(docs)), df: map[string]int{}}
	var total float64
	for i, d := range docs {
		toks := Tokenize(d)
		tf := make(map[string]int, len(toks))
		for _, t := range toks {
			tf[t]++
		}
		for t := range tf {
			x.df[t]++
		}
		x.tf[i] = tf
		x.dl[i] = float64(len(toks))
		total += float64(len(toks))
	}
	if len(docs) > 0 {
		x.avgdl = total / float64(len(docs))
	}
	return x
}

// idf is the non-negative BM25 idf, ln(1 + (N - df + 0.5) / (df + 0.5)).
func (x *BM25) idf(term string) float64 {
	n := float64(len(x.tf))
	df := float64(x.df[term])
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// Scores returns every document's BM25 score for query. Each distinct query
// term counts once.
func (x *BM25) Scores(query string) []float64 {
	scores := make([]float64, len(x.tf))
	seen := map[string]bool{}
	for _, q := range Tokenize(query) {
		if seen[q] || x.df[q] == 0 {
			continue
		}
		seen[q] = true
		idf := x.idf(q)
		for i, tf := range x.tf {
			f := float64(tf[q])
			if f == 0 {
				continue
			}
			norm := 1 - bm25B
			if x.avgdl > 0 {
				norm += bm25B * x.dl[i] / x.avgdl
			}
			scores[i] += idf * f * (bm25K1 + 1) / (f + bm25K1*norm)
		}
	}
	return scores
}

// Rank returns the indices of documents with a positive score for query,
// best first; ties keep document order.
func (x *BM25) Rank(query string) []int {
	return rankScores(x.Scores(query), true)
}

// rankScores orders indices by descending score (stable). With positiveOnly,
// indices scoring <= 0 are left out.
func rankScores(scores []float64, positiveOnly bool) []int {
	idx := make([]int, 0, len(scores))
	for i, s := range scores {
		if !positiveOnly || s > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	return idx
}
