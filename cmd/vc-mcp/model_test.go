package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tinyModel = "../../embed/testdata/tiny"

// tinyCopy copies the embed package's test model so that converting it
// leaves testdata alone.
func tinyCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"config.json", "vocab.txt", "tokenizer_config.json", "pytorch_model.bin"} {
		b, err := os.ReadFile(filepath.Join(tinyModel, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestModelTokenize(t *testing.T) {
	var out, errb bytes.Buffer
	in := strings.NewReader("Hello, world!\r\nstate-of-the-art\n\nCafé 東京")
	err := runModel(context.Background(), []string{"tokenize", "--model", tinyModel}, in, &out, &errb)
	if err != nil {
		t.Fatalf("tokenize: %v (stderr %s)", err, errb.String())
	}
	want := "[101,7592,1010,2088,999,102]\n[101,2110,1011,1997,1011,1996,1011,2396,102]\n[101,102]\n[101,7668,1879,1755,102]\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestModelEmbed(t *testing.T) {
	dir := tinyCopy(t)
	var out, errb bytes.Buffer
	in := strings.NewReader("that caching trick for the feed\n   \nmaterialized views")
	if err := runModel(context.Background(), []string{"embed", "--model", dir}, in, &out, &errb); err != nil {
		t.Fatalf("embed: %v (stderr %s)", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(lines), out.String())
	}
	if lines[1] != "null" {
		t.Errorf("blank line: got %s, want null", lines[1])
	}
	for _, i := range []int{0, 2} {
		var v []float64
		if err := json.Unmarshal([]byte(lines[i]), &v); err != nil {
			t.Fatal(err)
		}
		norm := 0.0
		for _, x := range v {
			norm += x * x
		}
		if len(v) != 32 || math.Abs(norm-1) > 1e-5 {
			t.Errorf("line %d: got %d values with norm %g, want 32 with norm 1", i, len(v), norm)
		}
	}
}

func TestModelStatus(t *testing.T) {
	tests := []struct {
		name string
		dir  func(t *testing.T) string
		want string
	}{
		{"ready", tinyCopy, "ready (2 layers, 32-d vectors"},
		{"missing", func(t *testing.T) string { return t.TempDir() }, "not ready: no model at"},
		{"corrupt", func(t *testing.T) string {
			dir := tinyCopy(t)
			os.WriteFile(filepath.Join(dir, "pytorch_model.bin"), []byte("junk"), 0o644)
			return dir
		}, "not ready: model corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if err := runModel(context.Background(), []string{"status", "--model", tt.dir(t)}, nil, &out, &errb); err != nil {
				t.Fatalf("status: %v", err)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("got\n%s\nwant it to contain %q", out.String(), tt.want)
			}
		})
	}
}

func TestModelUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no subcommand", nil},
		{"unknown subcommand", []string{"frobnicate"}},
		{"unknown flag", []string{"status", "--nope"}},
		{"extra argument", []string{"status", "extra"}},
		{"two names", []string{"pull", "a/b", "c/d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := runModel(context.Background(), tt.args, nil, &out, &errb)
			if !errors.Is(err, errUsage) {
				t.Errorf("got %v, want errUsage", err)
			}
			if errb.Len() == 0 {
				t.Error("got nothing on stderr, want the usage")
			}
			if out.Len() != 0 {
				t.Errorf("got stdout %q, want nothing", out.String())
			}
		})
	}
}
