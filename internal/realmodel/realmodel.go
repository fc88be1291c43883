// Package realmodel finds, for tests, the real all-MiniLM-L6-v2 that
// `make model` installs and the onnxruntime reference that `make refenv`
// installs. A test that needs them fails with the command to run when they
// are absent; only VC_SKIP_REAL_MODEL=1 (for machines without registry
// access; CI never sets it) turns that into a skip.
package realmodel

import (
	"os"
	"path/filepath"
	"testing"
)

// SkipEnv is the variable that lets real-model tests skip.
const SkipEnv = "VC_SKIP_REAL_MODEL"

// Root is the repository root (the nearest directory above the working
// directory holding go.mod).
func Root() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// DefaultDir is where `make model` puts the imported model for tests:
// $VC_REAL_MODEL_DIR, else .cache/models/all-MiniLM-L6-v2 in the repository.
func DefaultDir() string {
	if d := os.Getenv("VC_REAL_MODEL_DIR"); d != "" {
		return d
	}
	return filepath.Join(Root(), ".cache", "models", "all-MiniLM-L6-v2")
}

func need(tb testing.TB, path, what, cmd string) string {
	tb.Helper()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if os.Getenv(SkipEnv) == "1" {
		tb.Skipf("%s absent at %s and %s=1: skipping the real-model test", what, path, SkipEnv)
	}
	tb.Fatalf("%s absent at %s: run `%s` first (or set %s=1 on a machine without registry access)", what, path, cmd, SkipEnv)
	return ""
}

// Dir returns the imported real model's directory.
func Dir(tb testing.TB) string {
	tb.Helper()
	d := DefaultDir()
	need(tb, filepath.Join(d, "model.vcmcp.bin"), "the real all-MiniLM-L6-v2", "make model")
	return d
}

// Source returns the verified ONNX file and tokenizer.json `make model`
// imported from.
func Source(tb testing.TB) (onnx, tokenizer string) {
	tb.Helper()
	src := filepath.Join(Root(), ".cache", "models", "src")
	onnx = need(tb, filepath.Join(src, "all-minilm-l6-v2.onnx"), "the real model's ONNX file", "make model")
	tokenizer = need(tb, filepath.Join(src, "all-minilm-l6-v2-tokenizer.json"), "the real model's tokenizer.json", "make model")
	return onnx, tokenizer
}

// Python returns the interpreter of the reference venv.
func Python(tb testing.TB) string {
	tb.Helper()
	return need(tb, filepath.Join(Root(), ".cache", "venv", "bin", "python"), "the onnxruntime reference venv", "make refenv")
}
