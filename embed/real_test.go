package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/realmodel"
)

// The real-model tests run on the all-MiniLM-L6-v2 that `make model`
// installs (Maven Central's langchain4j jar, the published ONNX export,
// sha256-checked) against onnxruntime from PyPI (`make refenv`) on the same
// ONNX file. They fail with the command to run when either is missing.

func loadReal(t testing.TB) *Model {
	t.Helper()
	m, err := Load(context.Background(), realmodel.Dir(t), &Options{CacheSize: -1})
	if err != nil {
		t.Fatalf("load the real model: %v", err)
	}
	return m
}

// realParityTexts: every sixth sentence of gen/sentences.py (punctuation,
// accents, CJK, emoji, code, control characters, literal special tokens)
// and every one that is truncated at 256 word pieces.
func realParityTexts(t testing.TB) []string {
	var texts []string
	for i, g := range readGolden[goldenTokens](t, tokenizerGold) {
		if i%6 == 0 || len(g.IDs) == DefaultMaxTokens {
			texts = append(texts, g.Text)
		}
	}
	return texts
}

type ortOutput struct {
	IDs     [][]int     `json:"ids"`
	Vectors [][]float32 `json:"vectors"`
}

func runReference(t testing.TB, mode string, texts []string) []byte {
	t.Helper()
	py := realmodel.Python(t)
	onnx, tok := realmodel.Source(t)
	in, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/ref/ort_ref.py", mode, onnx, tok)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("onnxruntime reference: %v\n%s", err, stderr.String())
	}
	return out
}

func TestRealParityWithOnnxruntime(t *testing.T) {
	m := loadReal(t)
	texts := realParityTexts(t)
	var ref ortOutput
	if err := json.Unmarshal(runReference(t, "vectors", texts), &ref); err != nil {
		t.Fatalf("parse the reference's output: %v", err)
	}
	if len(ref.IDs) != len(texts) || len(ref.Vectors) != len(texts) {
		t.Fatalf("reference gave %d ids and %d vectors for %d texts", len(ref.IDs), len(ref.Vectors), len(texts))
	}
	got, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	worst, truncated := 0.0, 0
	for i, text := range texts {
		ids := m.Tokenizer().Encode(text)
		if !equalInts(ids, ref.IDs[i]) {
			t.Errorf("token ids of %q:\n go  %v\n ref %v", short(text), ids, ref.IDs[i])
			continue
		}
		if len(ids) == DefaultMaxTokens {
			truncated++
		}
		d := maxDiff(got[i], ref.Vectors[i])
		worst = max(worst, d)
		if d > 1e-5 {
			t.Errorf("vector of %q differs from onnxruntime's by %.2g (limit 1e-5)", short(text), d)
		}
	}
	if truncated == 0 {
		t.Error("no sentence reached the 256-token truncation")
	}
	t.Logf("%d sentences (%d truncated at 256 tokens): token ids equal, max abs diff %.2g", len(texts), truncated, worst)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func cosine(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// TestRealSanityPairs: the real model ranks related meanings above
// unrelated ones (random weights would not).
func TestRealSanityPairs(t *testing.T) {
	m := loadReal(t)
	tests := []struct{ anchor, near, far string }{
		{"food", "bread", "horse"},
		{"king", "queen", "carrot"},
		{"A man is playing a guitar.", "Someone is performing music on an instrument.", "A chef is chopping onions."},
		{"How do I reset my password?", "I forgot my login credentials.", "The weather is sunny today."},
		{"We switched the feed to materialized views.", "the database caching trick for the feed", "my flight to Boston is delayed"},
		{"The Go compiler reported a type error.", "The build failed because of a typing mistake.", "We adopted a puppy last weekend."},
	}
	for _, tt := range tests {
		v, err := m.Embed(context.Background(), []string{tt.anchor, tt.near, tt.far})
		if err != nil {
			t.Fatal(err)
		}
		near, far := cosine(v[0], v[1]), cosine(v[0], v[2])
		if !(near > far) || math.IsNaN(near) {
			t.Errorf("cos(%q, %q) = %.3f is not above cos(%q, %q) = %.3f", tt.anchor, tt.near, near, tt.anchor, tt.far, far)
		}
		t.Logf("%-45q near %.3f far %.3f", tt.anchor, near, far)
	}
}
