package embed

import "golang.org/x/sys/cpu"

// The assembly kernels in use; tests switch them off to check the Go one.
var (
	useAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	useAVX512 = cpu.X86.HasAVX512F && useAVX2
)

//go:noescape
func gemm4x16AVX2(k int, a *float32, lda int, b *float32, c *float32)

//go:noescape
func gemm8x16AVX512(k int, a *float32, lda int, b *float32, c *float32)

// kernelRows is how many rows of A one kernel call takes.
func kernelRows() int {
	if useAVX512 {
		return 8
	}
	return 4
}

// gemmKernel computes kernelRows() rows of A (stride lda) times one packed
// panel (k x 16) into c (rows x 16).
func gemmKernel(k int, a []float32, lda int, b []float32, c *[8 * panel]float32) {
	rows := kernelRows()
	if k > 0 && useAVX2 {
		_ = a[(rows-1)*lda+k-1]
		_ = b[k*16-1]
		if rows == 8 {
			gemm8x16AVX512(k, &a[0], lda, &b[0], &c[0])
		} else {
			gemm4x16AVX2(k, &a[0], lda, &b[0], &c[0])
		}
		return
	}
	gemmGo(rows, k, a, lda, b, c)
}

//go:noescape
func geluErfAVX2(x *float32, n int)

// geluErf is the exact GELU, x * Phi(x), with the float32 erf of erff.
func geluErf(xs []float32) {
	if useAVX2 && len(xs) >= 8 {
		geluErfAVX2(&xs[0], len(xs))
		xs = xs[len(xs)&^7:]
	}
	geluErfGo(xs)
}
