package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/internal/realmodel"
)

// TestModelImportReal imports the real ONNX export `make model` verified,
// as a user with that file would, and embeds with the result.
func TestModelImportReal(t *testing.T) {
	onnx, tok := realmodel.Source(t)
	dir := t.TempDir()
	ctx := context.Background()
	var out, errb bytes.Buffer
	args := []string{"import", "--onnx", onnx, "--tokenizer", tok, "--dir", dir,
		"--sha256", "759c3cd2b7fe7e93933ad23c4c9181b7396442a2ed746ec7c1d46192c469c46e"}
	if err := runModel(ctx, args, nil, &out, &errb); err != nil {
		t.Fatalf("import: %v (stderr %s)", err, errb.String())
	}
	if !strings.Contains(out.String(), "6 layers, 12 heads, 384-d vectors; config from graph") {
		t.Errorf("import said %q", out.String())
	}
	out.Reset()
	if err := runModel(ctx, []string{"embed", "--model", dir}, strings.NewReader("food\nbread\nhorse\n"), &out, &errb); err != nil {
		t.Fatalf("embed: %v (stderr %s)", err, errb.String())
	}
	var v [3][]float64
	for i, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if err := json.Unmarshal([]byte(line), &v[i]); err != nil {
			t.Fatal(err)
		}
	}
	dot := func(a, b []float64) (s float64) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	if !(dot(v[0], v[1]) > dot(v[0], v[2])) {
		t.Errorf("cos(food, bread) %.3f <= cos(food, horse) %.3f", dot(v[0], v[1]), dot(v[0], v[2]))
	}

	errb.Reset()
	err := runModel(ctx, []string{"import", "--onnx", onnx, "--tokenizer", tok, "--dir", t.TempDir(), "--sha256", strings.Repeat("ab", 32)}, nil, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("wrong sha256: got %v", err)
	}
	errb.Reset()
	if err := runModel(ctx, []string{"import"}, nil, &out, &errb); !errors.Is(err, errUsage) || !strings.Contains(errb.String(), "--onnx FILE is required") {
		t.Errorf("no --onnx: got %v, stderr %q", err, errb.String())
	}
}
