package memory

import (
	"math/rand"
	"testing"
)

// BenchmarkDenseScan times the brute-force cosine scan over 100,000 turn
// vectors of MiniLM's size (384), the largest conversation the semantic
// layer is specified for.
func BenchmarkDenseScan(b *testing.B) {
	const n, dim = 100000, 384
	r := rand.New(rand.NewSource(1))
	c := newConv("c")
	for i := 0; i < n; i++ {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		c.vecs.add(i+1, normalize(v))
	}
	q := normalize(make([]float32, dim))
	b.ReportAllocs()
	for b.Loop() {
		denseScores(c, q, 300)
	}
	b.ReportMetric(float64(n), "vectors")
}
