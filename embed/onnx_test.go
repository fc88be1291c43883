package embed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// onnxBuilder writes an ONNX ModelProto the way torch.onnx exports a BERT:
// named embeddings, LayerNorm parameters and biases, anonymous [in, out]
// MatMul weights, attention-head split through Concat(Unsqueeze(Constant)),
// LayerNorm as Sqrt(Add(variance, eps)), GELU through Erf.
type onnxBuilder struct {
	graph []byte
	n     int
}

func (b *onnxBuilder) name() string { b.n++; return fmt.Sprintf("v%d", b.n) }

func tensorProto(name string, dims []int64, dtype int, vals []float32, ints []int64, raw bool) []byte {
	var t []byte
	for _, d := range dims {
		t = protowire.AppendTag(t, tensorDims, protowire.VarintType)
		t = protowire.AppendVarint(t, uint64(d))
	}
	t = protowire.AppendTag(t, tensorDataType, protowire.VarintType)
	t = protowire.AppendVarint(t, uint64(dtype))
	if name != "" {
		t = protowire.AppendTag(t, tensorName, protowire.BytesType)
		t = protowire.AppendString(t, name)
	}
	switch {
	case dtype == onnxInt64:
		var packed []byte
		for _, v := range ints {
			packed = protowire.AppendVarint(packed, uint64(v))
		}
		t = protowire.AppendTag(t, tensorInt64Data, protowire.BytesType)
		t = protowire.AppendBytes(t, packed)
	case raw:
		buf := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		t = protowire.AppendTag(t, tensorRawData, protowire.BytesType)
		t = protowire.AppendBytes(t, buf)
	default: // float_data, packed
		buf := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		t = protowire.AppendTag(t, tensorFloatData, protowire.BytesType)
		t = protowire.AppendBytes(t, buf)
	}
	return t
}

func (b *onnxBuilder) init(name string, dims []int64, vals []float32, raw bool) {
	b.graph = protowire.AppendTag(b.graph, graphInitializer, protowire.BytesType)
	b.graph = protowire.AppendBytes(b.graph, tensorProto(name, dims, onnxFloat, vals, nil, raw))
}

// node appends a node; attrs are (name, int) pairs or a tensor "value".
func (b *onnxBuilder) node(op string, inputs []string, value []byte, intAttr map[string]int64) string {
	out := b.name()
	var n []byte
	for _, in := range inputs {
		n = protowire.AppendTag(n, nodeInput, protowire.BytesType)
		n = protowire.AppendString(n, in)
	}
	n = protowire.AppendTag(n, nodeOutput, protowire.BytesType)
	n = protowire.AppendString(n, out)
	n = protowire.AppendTag(n, nodeOpType, protowire.BytesType)
	n = protowire.AppendString(n, op)
	if value != nil {
		var a []byte
		a = protowire.AppendTag(a, attrName, protowire.BytesType)
		a = protowire.AppendString(a, "value")
		a = protowire.AppendTag(a, attrT, protowire.BytesType)
		a = protowire.AppendBytes(a, value)
		n = protowire.AppendTag(n, nodeAttribute, protowire.BytesType)
		n = protowire.AppendBytes(n, a)
	}
	for k, v := range intAttr {
		var a []byte
		a = protowire.AppendTag(a, attrName, protowire.BytesType)
		a = protowire.AppendString(a, k)
		a = protowire.AppendTag(a, attrI, protowire.VarintType)
		a = protowire.AppendVarint(a, uint64(v))
		n = protowire.AppendTag(n, nodeAttribute, protowire.BytesType)
		n = protowire.AppendBytes(n, a)
	}
	b.graph = protowire.AppendTag(b.graph, graphNode, protowire.BytesType)
	b.graph = protowire.AppendBytes(b.graph, n)
	return out
}

func (b *onnxBuilder) model() []byte {
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.VarintType) // ir_version
	m = protowire.AppendVarint(m, 6)
	m = protowire.AppendTag(m, modelGraph, protowire.BytesType)
	return protowire.AppendBytes(m, b.graph)
}

func transposed(w []float32, out, in int) []float32 {
	t := make([]float32, len(w))
	for o := 0; o < out; o++ {
		for i := 0; i < in; i++ {
			t[i*out+o] = w[o*in+i]
		}
	}
	return t
}

// tinyONNX exports the committed tiny model's weights as ONNX. withHeads
// false leaves out the Reshape that tells the number of heads.
func tinyONNX(t *testing.T, withHeads bool) []byte {
	t.Helper()
	ts, err := readPytorch(filepath.Join(tinyDir, pytorchFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := readConfig(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	H, F := int64(cfg.HiddenSize), int64(cfg.IntermediateSize)
	b := &onnxBuilder{}
	for i, name := range []string{"embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight", "embeddings.token_type_embeddings.weight"} {
		v := ts[name]
		b.init(name, []int64{int64(len(v)) / H, H}, v, i != 1)
	}
	b.init("embeddings.LayerNorm.weight", []int64{H}, ts["embeddings.LayerNorm.weight"], true)
	b.init("embeddings.LayerNorm.bias", []int64{H}, ts["embeddings.LayerNorm.bias"], false)
	eps := tensorProto("", nil, onnxFloat, []float32{1e-12}, nil, true)
	b.node("Sqrt", []string{b.node("Add", []string{"variance", b.node("Constant", nil, eps, nil)}, nil, nil)}, nil, nil)
	b.node("Erf", []string{"x"}, nil, nil)
	if withHeads {
		c := func(v int64) string {
			return b.node("Unsqueeze", []string{b.node("Constant", nil, tensorProto("", nil, onnxInt64, nil, []int64{v}, false), nil)}, nil, nil)
		}
		shape := b.node("Concat", []string{"batch", "seq", c(int64(cfg.NumAttentionHeads)), c(H / int64(cfg.NumAttentionHeads))}, nil, map[string]int64{"axis": 0})
		b.node("Reshape", []string{"q", shape}, nil, nil)
		merge := b.node("Concat", []string{"batch", "seq", c(H)}, nil, map[string]int64{"axis": 0})
		b.node("Reshape", []string{"ctx", merge}, nil, nil)
	}
	k := 700
	linear := func(module string, out, in int64, gemm bool) {
		w, bias := ts[module+".weight"], ts[module+".bias"]
		b.init(module+".bias", []int64{out}, bias, true)
		k++
		wname := fmt.Sprintf("onnx::MatMul_%d", k)
		if gemm { // Gemm(x, W[out,in], B, transB=1)
			b.init(wname, []int64{out, in}, w, true)
			b.node("Gemm", []string{"x", wname, module + ".bias"}, nil, map[string]int64{"transB": 1})
			return
		}
		b.init(wname, []int64{in, out}, transposed(w, int(out), int(in)), k%2 == 0)
		mm := b.node("MatMul", []string{"x", wname}, nil, nil)
		if k%3 == 0 {
			b.node("Add", []string{module + ".bias", mm}, nil, nil)
		} else {
			b.node("Add", []string{mm, module + ".bias"}, nil, nil)
		}
	}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		for _, n := range []string{"query", "key", "value"} {
			linear(p+"attention.self."+n, H, H, false)
		}
		linear(p+"attention.output.dense", H, H, false)
		linear(p+"intermediate.dense", F, H, i == 1)
		linear(p+"output.dense", H, F, false)
		for _, n := range []string{"attention.output.LayerNorm", "output.LayerNorm"} {
			b.init(p+n+".weight", []int64{H}, ts[p+n+".weight"], true)
			b.init(p+n+".bias", []int64{H}, ts[p+n+".bias"], true)
		}
	}
	return b.model()
}

func TestImportONNXMatchesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	onnx := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(onnx, tinyONNX(t, true), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, _, err := fileSHA256(onnx)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want, err := Load(ctx, copyTiny(t), &Options{CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		opts  ImportOptions
		found string
	}{
		{"config from the graph, tokenizer.json", ImportOptions{Tokenizer: filepath.Join(realTokenizers, "tokenizer.json")}, "graph"},
		{"config.json and vocab.txt", ImportOptions{Tokenizer: filepath.Join(tinyDir, "vocab.txt"), Config: filepath.Join(tinyDir, configFile)}, filepath.Join(tinyDir, configFile)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.ONNX, o.Dir, o.SHA256 = onnx, t.TempDir(), strings.ToUpper(sum)
			res, err := ImportONNX(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if res.ConfigFrom != tt.found || res.Heads != 2 || res.Layers != 2 || res.Dim != 32 || res.SHA256 != sum {
				t.Errorf("got %+v", res)
			}
			got, err := Load(ctx, o.Dir, &Options{CacheSize: -1})
			if err != nil {
				t.Fatal(err)
			}
			texts := []string{"Hello, world!", "that caching trick for the feed", "東京は日本の首都です。", "Ünïcödé ÜBER ALLES"}
			a, err := want.Embed(ctx, texts)
			if err != nil {
				t.Fatal(err)
			}
			b, err := got.Embed(ctx, texts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range texts {
				if d := maxDiff(a[i], b[i]); d != 0 {
					t.Errorf("%q: imported model differs from the checkpoint by %g", texts[i], d)
				}
			}
		})
	}
}

func TestImportONNXErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := filepath.Join(dir, "model.onnx")
	model := tinyONNX(t, true)
	if err := os.WriteFile(good, model, 0o644); err != nil {
		t.Fatal(err)
	}
	noHeads := filepath.Join(dir, "noheads.onnx")
	if err := os.WriteFile(noHeads, tinyONNX(t, false), 0o644); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.onnx")
	if err := os.WriteFile(truncated, model[:len(model)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.onnx")
	if err := os.WriteFile(garbage, []byte("this is not a protobuf at all, just text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(realTokenizers, "tokenizer.json")
	tests := []struct {
		name string
		opts ImportOptions
		is   error
		msg  string
	}{
		{"checksum", ImportOptions{ONNX: good, Tokenizer: tok, SHA256: strings.Repeat("0", 64)}, ErrChecksum, "expected"},
		{"no heads in the graph", ImportOptions{ONNX: noHeads, Tokenizer: tok}, ErrCorrupt, "pass the model's config.json"},
		{"truncated", ImportOptions{ONNX: truncated, Tokenizer: tok}, ErrCorrupt, "truncated.onnx"},
		{"garbage", ImportOptions{ONNX: garbage, Tokenizer: tok}, ErrCorrupt, "garbage.onnx"},
		{"no tokenizer", ImportOptions{ONNX: good}, ErrNoModel, "no tokenizer.json or vocab.txt"},
		{"missing file", ImportOptions{ONNX: filepath.Join(dir, "absent.onnx"), Tokenizer: tok}, os.ErrNotExist, "absent.onnx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Dir = t.TempDir()
			_, err := ImportONNX(ctx, o)
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want %v mentioning %q", err, tt.is, tt.msg)
			}
		})
	}
}

func FuzzParseONNX(f *testing.F) {
	f.Add([]byte{})
	f.Add(protowire.AppendBytes(protowire.AppendTag(nil, modelGraph, protowire.BytesType), []byte{0x2a, 0x03, 0x08, 0x02, 0x10}))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := parseONNX(b)
		if err != nil {
			return
		}
		g.bertTensors() // must not panic
	})
}
