package embed

// panel is the column width of a packed weight panel and of the kernel.
const panel = 16

// gemmGo is the portable kernel: the same sums as the assembly ones.
func gemmGo(rows, k int, a []float32, lda int, b []float32, c *[8 * panel]float32) {
	*c = [8 * panel]float32{}
	for r := 0; r < rows; r++ {
		row := a[r*lda : r*lda+k]
		acc := c[r*16 : r*16+16 : r*16+16]
		for p, av := range row {
			bp := b[p*16 : p*16+16 : p*16+16]
			for j := range acc {
				acc[j] += av * bp[j]
			}
		}
	}
}

// linear is a dense layer y = x W^T + b with W packed in 16-column panels:
// packed[p*in*16 + k*16 + j] = W[p*16+j][k] (zero past out).
type linear struct {
	in, out int
	packed  []float32
	bias    []float32
}

// newLinear packs a PyTorch-layout weight (out x in, row-major).
func newLinear(w, bias []float32, out, in int) linear {
	np := (out + panel - 1) / panel
	packed := make([]float32, np*in*panel)
	for o := 0; o < out; o++ {
		p, j := o/panel, o%panel
		base := p * in * panel
		row := w[o*in : (o+1)*in]
		for k, v := range row {
			packed[base+k*panel+j] = v
		}
	}
	return linear{in: in, out: out, packed: packed, bias: bias}
}

// apply computes dst (n x out) = src (n x in) W^T + b for panels [p0, p1).
// Rows go in chunks that stay in L2 while every panel of the chunk passes
// over them; each panel (in x 16) stays in L1/L2 across a chunk's rows.
func (l *linear) apply(dst, src []float32, n, p0, p1 int) {
	var pad []float32
	chunk := max(8, (256<<10)/(4*l.in)/8*8)
	for i0 := 0; i0 < n; i0 += chunk {
		i1 := min(n, i0+chunk)
		mulPacked(dst[i0*l.out:], l.out, src[i0*l.in:], l.in, i1-i0, l.in, l.packed, p0, p1, l.out, l.bias, 1, &pad)
	}
}

// mulPacked sets dst[i*ldd+c] = scale * sum_k src[i*lda+k] * B[k][c] (+
// bias[c]) for rows i < n and the columns c < cols of panels [p0, p1) of
// the packed B (k x 16 per panel). pad is scratch for a last partial block
// of rows.
func mulPacked(dst []float32, ldd int, src []float32, lda, n, k int, packed []float32, p0, p1, cols int, bias []float32, scale float32, pad *[]float32) {
	var c [8 * panel]float32
	kr := kernelRows()
	for p := p0; p < p1; p++ {
		b := packed[p*k*panel : (p+1)*k*panel]
		col := p * panel
		w := min(panel, cols-col)
		for i := 0; i < n; i += kr {
			rows := min(kr, n-i)
			a, ld := src[i*lda:], lda
			if rows < kr {
				if len(*pad) < kr*k {
					*pad = make([]float32, kr*k)
				}
				a, ld = *pad, k
				for r := 0; r < kr; r++ {
					if r < rows {
						copy(a[r*k:(r+1)*k], src[(i+r)*lda:(i+r)*lda+k])
					} else {
						clear(a[r*k : (r+1)*k])
					}
				}
			}
			gemmKernel(k, a, ld, b, &c)
			for r := 0; r < rows; r++ {
				d := dst[(i+r)*ldd+col : (i+r)*ldd+col+w]
				cr := c[r*16 : r*16+w]
				if bias != nil {
					bb := bias[col : col+w]
					for j := range d {
						d[j] = cr[j]*scale + bb[j]
					}
				} else {
					for j := range d {
						d[j] = cr[j] * scale
					}
				}
			}
		}
	}
}

// packInto packs rows x cols of a strided matrix M (M[r][c] = m[r*ld+c]) as
// the B operand "B[k][c] = M[c][k]" (transpose: k = cols) when trans, or
// "B[k][c] = M[k][c]" (k = rows) otherwise. It returns the packed slice,
// reusing buf.
func packInto(buf []float32, m []float32, ld, rows, cols int, trans bool) []float32 {
	k, n := rows, cols
	if trans {
		k, n = cols, rows
	}
	np := (n + panel - 1) / panel
	size := np * k * panel
	if cap(buf) < size {
		buf = make([]float32, size)
	}
	buf = buf[:size]
	clear(buf)
	for r := 0; r < rows; r++ {
		row := m[r*ld : r*ld+cols]
		for c, v := range row {
			kk, nn := r, c
			if trans {
				kk, nn = c, r
			}
			buf[(nn/panel)*k*panel+kk*panel+nn%panel] = v
		}
	}
	return buf
}

// panels is the number of 16-column panels of the layer.
func (l *linear) panels() int { return (l.out + panel - 1) / panel }
