package embed

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/realmodel"
)

// BenchmarkRealInt8 measures what shipping the real model inside the binary
// as int8 would cost and change (a measurement, nothing ships):
//
//	go test ./embed -run '^$' -bench RealInt8 -benchtime 1x
//
// Every 2-D weight (embeddings and linear layers) is quantised per row,
// symmetric, to int8 with a float32 scale; biases and LayerNorm stay
// float32. It reports the stored size (raw and gzipped), the time to turn
// it back into float32 weights, and how far the vectors and the calibration
// pairs' cosines move.
func BenchmarkRealInt8(b *testing.B) {
	dir := realmodel.Dir(b)
	cfg, err := readConfig(dir)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	ts, _, err := readConverted(filepath.Join(dir, ConvertedFile))
	if err != nil {
		b.Fatal(err)
	}
	fp32Load := time.Since(start)
	tok, err := LoadTokenizer(dir)
	if err != nil {
		b.Fatal(err)
	}
	// Quantise.
	type qt struct {
		q      []int8
		scales []float32
		rows   int
	}
	quant := map[string]qt{}
	var raw bytes.Buffer
	fp32Bytes := 0
	for name, v := range ts {
		fp32Bytes += 4 * len(v)
		cols := 0
		switch {
		case strings.HasSuffix(name, "embeddings.weight"):
			cols = cfg.HiddenSize
		case strings.HasSuffix(name, "dense.weight") || strings.Contains(name, "attention.self.") && strings.HasSuffix(name, ".weight"):
			cols = len(v) / len(ts[strings.TrimSuffix(name, "weight")+"bias"])
		}
		if cols == 0 || len(v)%cols != 0 {
			binary.Write(&raw, binary.LittleEndian, v)
			continue
		}
		rows := len(v) / cols
		q := qt{q: make([]int8, len(v)), scales: make([]float32, rows), rows: rows}
		for r := 0; r < rows; r++ {
			row := v[r*cols : (r+1)*cols]
			mx := float32(0)
			for _, x := range row {
				mx = max(mx, float32(math.Abs(float64(x))))
			}
			s := mx / 127
			if s == 0 {
				s = 1
			}
			q.scales[r] = s
			for i, x := range row {
				q.q[r*cols+i] = int8(math.Round(float64(x / s)))
			}
		}
		quant[name] = q
		for _, x := range q.q {
			raw.WriteByte(byte(x))
		}
		binary.Write(&raw, binary.LittleEndian, q.scales)
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(raw.Bytes())
	zw.Close()
	// Dequantise (what a binary with the int8 weights would do at start).
	start = time.Now()
	ts8 := tensors{}
	for name, v := range ts {
		q, ok := quant[name]
		if !ok {
			ts8[name] = v
			continue
		}
		cols := len(q.q) / q.rows
		d := make([]float32, len(q.q))
		for i, x := range q.q {
			d[i] = float32(x) * q.scales[i/cols]
		}
		ts8[name] = d
	}
	m8 := &Model{tok: tok, enc: newEncoder(cfg, ts8, defaultWorkers()), opts: (&Options{CacheSize: -1}).withDefaults(), dir: dir}
	int8Load := time.Since(start)
	m32 := &Model{tok: tok, enc: newEncoder(cfg, ts, defaultWorkers()), opts: (&Options{CacheSize: -1}).withDefaults(), dir: dir}

	ctx := context.Background()
	texts := realParityTexts(b)
	v32, err := m32.Embed(ctx, texts)
	if err != nil {
		b.Fatal(err)
	}
	v8, err := m8.Embed(ctx, texts)
	if err != nil {
		b.Fatal(err)
	}
	worst, minCos := 0.0, 1.0
	for i := range texts {
		worst = max(worst, maxDiff(v32[i], v8[i]))
		minCos = min(minCos, cosine(v32[i], v8[i]))
	}
	// Calibration pairs: how far each pair's cosine moves, and how many
	// decisions at the calibrated thresholds flip.
	raw2, err := os.ReadFile("../memory/testdata/calibration.json")
	if err != nil {
		b.Fatal(err)
	}
	var cal struct {
		Sentences map[string][][2]string `json:"sentences"`
		Tags      map[string][][2]string `json:"tags"`
		Followups map[string][][2]string `json:"followups"`
	}
	if err := json.Unmarshal(raw2, &cal); err != nil {
		b.Fatal(err)
	}
	pairsCos := func(m *Model, pairs [][2]string) []float64 {
		var t []string
		for _, p := range pairs {
			t = append(t, p[0], strings.ReplaceAll(p[1], "-", " "))
		}
		v, err := m.Embed(ctx, t)
		if err != nil {
			b.Fatal(err)
		}
		out := make([]float64, len(pairs))
		for i := range pairs {
			out[i] = cosine(v[2*i], v[2*i+1])
		}
		return out
	}
	moved, flips, n := 0.0, 0, 0
	for _, set := range []struct {
		m  map[string][][2]string
		th float64
	}{{cal.Sentences, 0.28}, {cal.Tags, 0.25}, {cal.Followups, 0.14}} {
		for _, pairs := range set.m {
			a, c := pairsCos(m32, pairs), pairsCos(m8, pairs)
			for i := range a {
				n++
				moved = max(moved, math.Abs(a[i]-c[i]))
				if (a[i] >= set.th) != (c[i] >= set.th) {
					flips++
				}
			}
		}
	}
	for b.Loop() {
	}
	b.ReportMetric(float64(fp32Bytes)/1e6, "fp32-MB")
	b.ReportMetric(float64(raw.Len())/1e6, "int8-MB")
	b.ReportMetric(float64(gz.Len())/1e6, "int8-gzip-MB")
	b.ReportMetric(float64(fp32Load.Milliseconds()), "fp32-read-ms")
	b.ReportMetric(float64(int8Load.Milliseconds()), "int8-dequant-ms")
	b.ReportMetric(worst, "vec-max-abs-diff")
	b.ReportMetric(minCos, "vec-min-cos")
	b.ReportMetric(moved, "pair-cos-max-move")
	b.ReportMetric(float64(flips), "threshold-flips")
	b.ReportMetric(float64(n), "pairs")
}
