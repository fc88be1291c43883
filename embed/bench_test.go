package embed

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Full-size (MiniLM-shaped) benchmarks: a random model with the real
// all-MiniLM-L6-v2 shape (6 layers, hidden 384, 12 heads, FFN 1536, real
// vocabulary) is generated in a temp dir at run time, never committed.
//
//	go test ./embed -run '^$' -bench FullSize -benchtime 3x
//
// They report load and conversion time and RSS (measured in a child
// process so that generating the model does not count), single short query
// latency, and throughput in sentences/s.

var fullSize struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fullSize.dir != "" {
		os.RemoveAll(fullSize.dir)
	}
	os.Exit(code)
}

// fullSizeDir builds the random full-size model once per process, as a
// safetensors checkpoint (about 90 MB) in the Hugging Face layout.
// VC_EMBED_FULLSIZE_DIR names an existing model directory to use instead,
// e.g. one made by testdata/gen/make_model.py for a side-by-side run with
// onnxruntime on the same weights.
func fullSizeDir(tb testing.TB) string {
	if d := os.Getenv("VC_EMBED_FULLSIZE_DIR"); d != "" {
		return d
	}
	fullSize.once.Do(func() {
		dir, err := os.MkdirTemp("", "vc-mcp-embed-fullsize-*")
		if err != nil {
			fullSize.err = err
			return
		}
		fullSize.dir = dir
		var cfg map[string]any
		b, err := os.ReadFile(filepath.Join(tinyDir, "config.json"))
		if err == nil {
			err = json.Unmarshal(b, &cfg)
		}
		if err != nil {
			fullSize.err = err
			return
		}
		for k, v := range map[string]any{"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536} {
			cfg[k] = v
		}
		b, _ = json.MarshalIndent(cfg, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
			fullSize.err = err
			return
		}
		for _, n := range []string{"vocab.txt", "tokenizer_config.json"} {
			b, err := os.ReadFile(filepath.Join(tinyDir, n))
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, n), b, 0o644)
			}
			if err != nil {
				fullSize.err = err
				return
			}
		}
		var c bertConfig
		json.Unmarshal(b, &c)
		c.VocabSize, c.MaxPositionEmbeddings, c.TypeVocabSize = 30522, 512, 2
		c.HiddenSize, c.NumHiddenLayers, c.IntermediateSize = 384, 6, 1536
		rng := rand.New(rand.NewPCG(42, 42))
		ts := tensors{}
		for name, size := range c.shapes() {
			v := make([]float32, size)
			std := float32(0.05)
			if strings.HasSuffix(name, "LayerNorm.weight") {
				for i := range v {
					v[i] = 1 + float32(rng.NormFloat64())*0.05
				}
			} else {
				for i := range v {
					v[i] = float32(rng.NormFloat64()) * std
				}
			}
			ts[name] = v
		}
		fullSize.err = writeSafetensorsFile(filepath.Join(dir, safetensorsFile), ts)
	})
	if fullSize.err != nil {
		tb.Fatal(fullSize.err)
	}
	return fullSize.dir
}

func writeSafetensorsFile(path string, ts tensors) error {
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	header := map[string]any{}
	off := 0
	for _, n := range names {
		header[n] = map[string]any{"dtype": "F32", "shape": []int{len(ts[n])}, "data_offsets": []int{off, off + 4*len(ts[n])}}
		off += 4 * len(ts[n])
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var buf [8]byte
	for i := range 8 {
		buf[i] = byte(uint64(len(h)) >> (8 * i))
	}
	w.Write(buf[:])
	w.Write(h)
	for _, n := range names {
		for _, v := range ts[n] {
			u := math.Float32bits(v)
			w.Write([]byte{byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)})
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// procStatus reads VmRSS and VmHWM (peak RSS) in MB from /proc/self/status.
func procStatus() (rss, hwm float64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1, -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			hwm = kb / 1024
		}
	}
	return rss, hwm
}

type helperReport struct {
	LoadMS float64 `json:"load_ms"`
	RSSMB  float64 `json:"rss_mb"`
	HWMMB  float64 `json:"hwm_mb"`
}

// TestFullSizeHelper is the child process of BenchmarkFullSize/load: it
// loads the model named by VC_EMBED_HELPER_DIR, embeds a few hundred
// sentences and prints its timings and memory.
func TestFullSizeHelper(t *testing.T) {
	dir := os.Getenv("VC_EMBED_HELPER_DIR")
	if dir == "" {
		t.Skip("only run as BenchmarkFullSize's child process")
	}
	start := time.Now()
	m, err := Load(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	load := time.Since(start)
	runtime.GC()
	debug.FreeOSMemory()
	if _, err := m.Embed(context.Background(), benchSentences(t)); err != nil {
		t.Fatal(err)
	}
	rss, hwm := procStatus()
	out, _ := json.Marshal(helperReport{LoadMS: float64(load.Milliseconds()), RSSMB: rss, HWMMB: hwm})
	fmt.Printf("HELPER %s\n", out)
}

// benchSentences are the golden sentences, the five truncation cases aside.
func benchSentences(tb testing.TB) []string {
	var texts []string
	for _, g := range readGolden[goldenTokens](tb, tokenizerGold) {
		if strings.TrimSpace(g.Text) != "" && len(g.IDs) < 200 {
			texts = append(texts, g.Text)
		}
	}
	return texts
}

func runHelper(b *testing.B, dir string) helperReport {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestFullSizeHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "VC_EMBED_HELPER_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("helper: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "HELPER "); ok {
			var r helperReport
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				b.Fatal(err)
			}
			return r
		}
	}
	b.Fatalf("helper printed no report:\n%s", out)
	return helperReport{}
}

func BenchmarkFullSize(b *testing.B) {
	dir := fullSizeDir(b)
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			os.Remove(filepath.Join(dir, ConvertedFile))
			conv := runHelper(b, dir) // converts the checkpoint
			warm := runHelper(b, dir) // reads model.vcmcp.bin
			b.ReportMetric(conv.LoadMS, "convert-load-ms")
			b.ReportMetric(conv.HWMMB, "convert-peak-rss-MB")
			b.ReportMetric(warm.LoadMS, "load-ms")
			b.ReportMetric(warm.RSSMB, "rss-MB")
			b.ReportMetric(warm.HWMMB, "peak-rss-MB")
		}
	})
	m, err := Load(context.Background(), dir, &Options{CacheSize: -1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	queries := []string{"tell me about arduino circuits", "that caching trick", "flight to Boston",
		"what did we decide about bbolt", "materialized views", "arduino LED resistor",
		"who owns the planes topic", "deadline next week"}
	for _, mm := range []struct {
		name string
		m    *Model
	}{{"short-query", m}} {
		b.Run(mm.name, func(b *testing.B) {
			var lat []time.Duration
			i := 0
			cpu0 := cpuTime()
			for b.Loop() {
				t0 := time.Now()
				if _, err := mm.m.Embed(ctx, []string{queries[i%len(queries)]}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(lat)), "cpu-ms/query")
		})
	}
	texts := benchSentences(b)
	tokens := 0
	for _, t := range texts {
		tokens += len(m.tok.Encode(t))
	}
	for _, bs := range []int{1, 32, len(texts)} {
		b.Run(fmt.Sprintf("batch-%d", bs), func(b *testing.B) {
			n := 0
			cpu0 := cpuTime()
			for b.Loop() {
				for i := 0; i < len(texts); i += bs {
					if _, err := m.Embed(ctx, texts[i:min(i+bs, len(texts))]); err != nil {
						b.Fatal(err)
					}
				}
				n += len(texts)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "sentences/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(n), "cpu-ms/sentence")
			b.ReportMetric(float64(tokens)/float64(len(texts)), "tokens/sentence")
		})
	}
}

// BenchmarkEmbedTiny runs the committed test model: the per-call overhead.
func BenchmarkEmbedTiny(b *testing.B) {
	dir := copyTiny(b)
	m, err := Load(context.Background(), dir, &Options{CacheSize: -1})
	if err != nil {
		b.Fatal(err)
	}
	texts := benchSentences(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := m.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
		n += len(texts)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "sentences/s")
}

// BenchmarkLinear measures the matrix kernel alone in GFLOP/s (one core).
func BenchmarkLinear(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	saved2, saved512 := useAVX2, useAVX512
	defer func() { useAVX2, useAVX512 = saved2, saved512 }()
	for _, sh := range []struct{ n, in, out int }{{8, 384, 1536}, {256, 384, 1536}, {256, 1536, 384}, {4096, 384, 1536}} {
		for _, k := range []string{"avx2", "avx512"} {
			b.Run(fmt.Sprintf("%dx%dx%d/%s", sh.n, sh.in, sh.out, k), func(b *testing.B) {
				useAVX2, useAVX512 = saved2, saved512 && k == "avx512"
				if k == "avx512" && !saved512 {
					b.Skip("no AVX-512")
				}
				w := make([]float32, sh.in*sh.out)
				for i := range w {
					w[i] = rng.Float32()
				}
				l := newLinear(w, make([]float32, sh.out), sh.out, sh.in)
				src := make([]float32, sh.n*sh.in)
				dst := make([]float32, sh.n*sh.out)
				for b.Loop() {
					l.apply(dst, src, sh.n, 0, l.panels())
				}
				b.ReportMetric(float64(2*sh.n*sh.in*sh.out)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
