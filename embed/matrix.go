package embed

// Matrix holds unit vectors packed in 16-vector panels, so that the dot
// products of a query with all of them run on the same SIMD kernel as the
// model (AVX2/AVX-512 where the CPU has it). It is what makes a brute-force
// similarity scan over 100,000 sentence vectors cheap. Dots may run
// concurrently with other Dots, not with Append.
type Matrix struct {
	dim    int
	n      int
	packed []float32 // panel p: packed[p*dim*16 + k*16 + j] = vector p*16+j, component k
}

// NewMatrix returns an empty matrix of dim-dimensional vectors.
func NewMatrix(dim int) *Matrix { return &Matrix{dim: dim} }

// Dim is the vectors' dimension.
func (m *Matrix) Dim() int { return m.dim }

// Len is the number of vectors.
func (m *Matrix) Len() int { return m.n }

// Append adds a vector (len Dim); it returns false, adding nothing, for a
// vector of another length.
func (m *Matrix) Append(v []float32) bool {
	if len(v) != m.dim || m.dim == 0 {
		return false
	}
	p, j := m.n/panel, m.n%panel
	if j == 0 {
		m.packed = append(m.packed, make([]float32, m.dim*panel)...)
	}
	base := p * m.dim * panel
	for k, x := range v {
		m.packed[base+k*panel+j] = x
	}
	m.n++
	return true
}

// Dots writes the dot product of q (len Dim) with vector i into dst[i] for
// every vector, and returns dst[:Len()].
func (m *Matrix) Dots(q []float32, dst []float32) []float32 {
	if cap(dst) < m.n {
		dst = make([]float32, m.n)
	}
	dst = dst[:m.n]
	if m.n == 0 || len(q) != m.dim {
		clear(dst)
		return dst
	}
	// The kernel multiplies kernelRows() rows at once: the query is row 0.
	query := make([]float32, kernelRows()*m.dim)
	copy(query, q)
	var c [8 * panel]float32
	for p := 0; p*panel < m.n; p++ {
		gemmKernel(m.dim, query, m.dim, m.packed[p*m.dim*panel:(p+1)*m.dim*panel], &c)
		col := p * panel
		copy(dst[col:min(m.n, col+panel)], c[:panel])
	}
	return dst
}
