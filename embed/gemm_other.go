//go:build !amd64

package embed

var useAVX2, useAVX512 = false, false

func kernelRows() int { return 4 }

func gemmKernel(k int, a []float32, lda int, b []float32, c *[8 * panel]float32) {
	gemmGo(4, k, a, lda, b, c)
}

func geluErf(xs []float32) { geluErfGo(xs) }
