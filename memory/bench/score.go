package bench

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// NormalizeText lowercases s and collapses every run of whitespace to one
// space, trimming the ends: the form in which LoCoMo-R compares texts.
func NormalizeText(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// EvidenceScore returns the fraction of gold contents that appear verbatim in
// context after NormalizeText on both sides. No gold means 0.
func EvidenceScore(context string, gold []string) float64 {
	if len(gold) == 0 {
		return 0
	}
	norm := NormalizeText(context)
	hit := 0
	for _, g := range gold {
		if strings.Contains(norm, NormalizeText(g)) {
			hit++
		}
	}
	return float64(hit) / float64(len(gold))
}

// Mean is the arithmetic mean of xs (0 for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// BootstrapCI returns the percentile bootstrap confidence interval of the mean
// of xs at the given level (e.g. 0.95), from resamples resamples drawn with a
// PCG generator seeded with seed: the same inputs always give the same bounds.
func BootstrapCI(xs []float64, resamples int, level float64, seed uint64) (lo, hi float64) {
	if len(xs) == 0 || resamples <= 0 {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	means := make([]float64, resamples)
	n := len(xs)
	for r := range means {
		var sum float64
		for range n {
			sum += xs[rng.IntN(n)]
		}
		means[r] = sum / float64(n)
	}
	sort.Float64s(means)
	alpha := (1 - level) / 2
	loIdx := int(math.Floor(alpha * float64(resamples)))
	hiIdx := int(math.Ceil((1-alpha)*float64(resamples))) - 1
	loIdx = min(max(loIdx, 0), resamples-1)
	hiIdx = min(max(hiIdx, 0), resamples-1)
	return means[loIdx], means[hiIdx]
}

// Percentile returns the p-th percentile (0..100) of xs by the nearest-rank
// method; xs need not be sorted. 0 for none.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}
