package embed

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// encoder is a BERT encoder with its weights in kernel-ready form.
type encoder struct {
	cfg     bertConfig
	eps     float32
	act     func([]float32)
	words   []float32 // vocab x H
	pos     []float32 // maxPos x H
	typ0    []float32 // token type 0 row
	embLNw  []float32
	embLNb  []float32
	layers  []encLayer
	workers int
}

type encLayer struct {
	qkv, attnOut, inter, out linear
	ln1w, ln1b, ln2w, ln2b   []float32
}

func newEncoder(c bertConfig, ts tensors, workers int) *encoder {
	H, F := c.HiddenSize, c.IntermediateSize
	e := &encoder{
		cfg:     c,
		eps:     float32(c.LayerNormEps),
		words:   ts["embeddings.word_embeddings.weight"],
		pos:     ts["embeddings.position_embeddings.weight"],
		typ0:    ts["embeddings.token_type_embeddings.weight"][:H],
		embLNw:  ts["embeddings.LayerNorm.weight"],
		embLNb:  ts["embeddings.LayerNorm.bias"],
		workers: workers,
	}
	switch c.HiddenAct {
	case "gelu":
		e.act = geluErf
	case "gelu_new", "gelu_pytorch_tanh":
		e.act = geluTanh
	case "relu":
		e.act = relu
	}
	for i := 0; i < c.NumHiddenLayers; i++ {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		qkvW := make([]float32, 0, 3*H*H)
		qkvB := make([]float32, 0, 3*H)
		for _, n := range []string{"query", "key", "value"} {
			qkvW = append(qkvW, ts[p+"attention.self."+n+".weight"]...)
			qkvB = append(qkvB, ts[p+"attention.self."+n+".bias"]...)
		}
		e.layers = append(e.layers, encLayer{
			qkv:     newLinear(qkvW, qkvB, 3*H, H),
			attnOut: newLinear(ts[p+"attention.output.dense.weight"], ts[p+"attention.output.dense.bias"], H, H),
			inter:   newLinear(ts[p+"intermediate.dense.weight"], ts[p+"intermediate.dense.bias"], F, H),
			out:     newLinear(ts[p+"output.dense.weight"], ts[p+"output.dense.bias"], H, F),
			ln1w:    ts[p+"attention.output.LayerNorm.weight"],
			ln1b:    ts[p+"attention.output.LayerNorm.bias"],
			ln2w:    ts[p+"output.LayerNorm.weight"],
			ln2b:    ts[p+"output.LayerNorm.bias"],
		})
	}
	return e
}

// parallelMinWork is the smallest step (in multiply-adds) split across
// goroutines: below it, handing work over costs more than it saves (on the
// 2-core test machine a short query ran in 3.0 ms on one core against 5.4 ms
// split over two). Sequences of about 30 tokens and more are split.
const parallelMinWork = 1 << 24

// parallel runs fn over [0, n) split into at most e.workers parts when the
// work (in multiply-adds) is worth a goroutine.
func (e *encoder) parallel(n int, work int, fn func(lo, hi int)) {
	w := min(e.workers, n)
	if w <= 1 || work < parallelMinWork {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for k := 0; k < w; k++ {
		lo, hi := k*n/w, (k+1)*n/w
		if lo == hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

func (e *encoder) linear(l *linear, dst, src []float32, n int) {
	e.parallel(l.panels(), n*l.in*l.out, func(p0, p1 int) { l.apply(dst, src, n, p0, p1) })
}

// forward encodes the sequences and returns one pooled, L2-normalised
// vector per sequence. Every sequence must be non-empty and no longer than
// max_position_embeddings; the ids must be < vocab_size.
func (e *encoder) forward(ctx context.Context, seqs [][]int) ([][]float32, error) {
	c := e.cfg
	H, F := c.HiddenSize, c.IntermediateSize
	n := 0
	offs := make([]int, len(seqs)+1)
	for i, s := range seqs {
		if len(s) == 0 || len(s) > c.MaxPositionEmbeddings {
			return nil, fmt.Errorf("embed: sequence of %d tokens (limit %d)", len(s), c.MaxPositionEmbeddings)
		}
		n += len(s)
		offs[i+1] = n
	}
	x := make([]float32, n*H)
	for i, s := range seqs {
		for t, id := range s {
			if id < 0 || id >= c.VocabSize {
				return nil, fmt.Errorf("embed: token id %d outside the vocabulary", id)
			}
			row := x[(offs[i]+t)*H : (offs[i]+t+1)*H]
			w, p := e.words[id*H:(id+1)*H], e.pos[t*H:(t+1)*H]
			for k := range row {
				row[k] = w[k] + p[k] + e.typ0[k]
			}
		}
	}
	layerNorm(x, nil, H, e.embLNw, e.embLNb, e.eps)
	qkv := make([]float32, n*3*H)
	ctxv := make([]float32, n*H)
	tmp := make([]float32, n*H)
	hid := make([]float32, n*F)
	for li := range e.layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l := &e.layers[li]
		e.linear(&l.qkv, qkv, x, n)
		e.attention(qkv, ctxv, offs)
		e.linear(&l.attnOut, tmp, ctxv, n)
		layerNorm(x, tmp, H, l.ln1w, l.ln1b, e.eps)
		e.linear(&l.inter, hid, x, n)
		e.parallel(n, n*F*8, func(lo, hi int) { e.act(hid[lo*F : hi*F]) })
		e.linear(&l.out, tmp, hid, n)
		layerNorm(x, tmp, H, l.ln2w, l.ln2b, e.eps)
	}
	out := make([][]float32, len(seqs))
	for i := range seqs {
		acc := make([]float64, H)
		for t := offs[i]; t < offs[i+1]; t++ {
			for k, v := range x[t*H : (t+1)*H] {
				acc[k] += float64(v)
			}
		}
		cnt := float64(offs[i+1] - offs[i])
		norm := 0.0
		for k := range acc {
			acc[k] /= cnt
			norm += acc[k] * acc[k]
		}
		norm = math.Sqrt(norm)
		if norm < 1e-12 {
			norm = 1e-12 // as torch.nn.functional.normalize
		}
		v := make([]float32, H)
		for k := range v {
			v[k] = float32(acc[k] / norm)
		}
		out[i] = v
	}
	return out, nil
}

// attention computes softmax(QK^T/sqrt(d))V per sequence and head into
// dst, with both products on the matrix kernel.
func (e *encoder) attention(qkv, dst []float32, offs []int) {
	H := e.cfg.HiddenSize
	nh := e.cfg.NumAttentionHeads
	d := H / nh
	scale := float32(1 / math.Sqrt(float64(d)))
	nseq := len(offs) - 1
	work := 0
	for i := 0; i < nseq; i++ {
		l := offs[i+1] - offs[i]
		work += l * l * H * 2
	}
	e.parallel(nseq*nh, work, func(lo, hi int) {
		var kp, vp, scores, pad []float32
		for job := lo; job < hi; job++ {
			s, h := job/nh, job%nh
			o, T := offs[s], offs[s+1]-offs[s]
			base := o*3*H + h*d
			// B = K^T: B[k][j] = K[j][k], k over the head dim.
			kp = packInto(kp, qkv[base+H:], 3*H, T, d, true)
			if cap(scores) < T*T {
				scores = make([]float32, T*T)
			}
			scores = scores[:T*T]
			mulPacked(scores, T, qkv[base:], 3*H, T, d, kp, 0, (T+panel-1)/panel, T, nil, scale, &pad)
			for i := 0; i < T; i++ {
				softmax(scores[i*T : (i+1)*T])
			}
			// B = V: B[k][j] = V[k][j], k over the sequence.
			vp = packInto(vp, qkv[base+2*H:], 3*H, T, d, false)
			mulPacked(dst[o*H+h*d:], H, scores, T, T, T, vp, 0, (d+panel-1)/panel, d, nil, 1, &pad)
		}
	})
}

func softmax(row []float32) {
	mx := row[0]
	for _, v := range row[1:] {
		mx = max(mx, v)
	}
	sum := float32(0)
	for j, v := range row {
		p := expf(v - mx)
		row[j] = p
		sum += p
	}
	inv := 1 / sum
	for j := range row {
		row[j] *= inv
	}
}

// layerNorm sets each row of x to LayerNorm(x + add) (add may be nil).
func layerNorm(x, add []float32, H int, w, b []float32, eps float32) {
	for r := 0; r+H <= len(x); r += H {
		row := x[r : r+H]
		if add != nil {
			for k, v := range add[r : r+H] {
				row[k] += v
			}
		}
		mean := 0.0
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(H)
		variance := 0.0
		for _, v := range row {
			dv := float64(v) - mean
			variance += dv * dv
		}
		variance /= float64(H)
		inv := 1 / math.Sqrt(variance+float64(eps))
		for k, v := range row {
			row[k] = float32((float64(v)-mean)*inv)*w[k] + b[k]
		}
	}
}

// geluErfGo is the exact GELU, x * Phi(x), with a float32 erf.
func geluErfGo(xs []float32) {
	const invSqrt2 = float32(1 / math.Sqrt2)
	for i, x := range xs {
		xs[i] = 0.5 * x * (1 + erff(x*invSqrt2))
	}
}

// geluTanh is the tanh approximation (hidden_act gelu_new).
func geluTanh(xs []float32) {
	const c = 0.7978845608028654 // sqrt(2/pi)
	for i, x := range xs {
		xf := float64(x)
		xs[i] = float32(0.5 * xf * (1 + math.Tanh(c*(xf+0.044715*xf*xf*xf))))
	}
}

func relu(xs []float32) {
	for i, x := range xs {
		xs[i] = max(x, 0)
	}
}

// erff is a float32 erf: a rational approximation on [-4, 4] (outside it
// erf is +-1 in float32), accurate to a few float32 ulps.
func erff(a float32) float32 {
	x := min(max(a, -4), 4)
	x2 := x * x
	p := x2*-2.72614225801306e-10 + 2.77068142495902e-08
	p = x2*p + -2.10102402082508e-06
	p = x2*p + -5.69250639462346e-05
	p = x2*p + -7.34990630326855e-04
	p = x2*p + -2.95459980854025e-03
	p = x2*p + -1.60960333262415e-02
	p *= x
	q := x2*-1.45660718464996e-05 + -2.13374055278905e-04
	q = x2*q + -1.68282697438203e-03
	q = x2*q + -7.37332916720468e-03
	q = x2*q + -1.42647390514189e-02
	return p / q
}

// expf is exp for the softmax; float64 math keeps it exact to float32.
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

func defaultWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }
