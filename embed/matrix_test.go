package embed

import (
	"math/rand"
	"testing"
)

func TestMatrixDots(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 100} {
		r := rand.New(rand.NewSource(int64(n)))
		const dim = 384
		m := NewMatrix(dim)
		rows := make([][]float32, n)
		for i := range rows {
			rows[i] = make([]float32, dim)
			for k := range rows[i] {
				rows[i][k] = float32(r.NormFloat64())
			}
			if !m.Append(rows[i]) {
				t.Fatalf("Append(%d) refused", i)
			}
		}
		if m.Append(make([]float32, dim-1)) {
			t.Fatalf("Append accepted a vector of the wrong length")
		}
		q := make([]float32, dim)
		for k := range q {
			q[k] = float32(r.NormFloat64())
		}
		got := m.Dots(q, nil)
		if len(got) != n {
			t.Fatalf("n=%d: %d dots", n, len(got))
		}
		for i, row := range rows {
			var want float64
			for k := range row {
				want += float64(row[k]) * float64(q[k])
			}
			if d := float64(got[i]) - want; d > 1e-3 || d < -1e-3 {
				t.Fatalf("n=%d: dot %d = %v, want %v", n, i, got[i], want)
			}
		}
	}
}
