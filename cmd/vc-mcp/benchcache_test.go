package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/embed"
)

// TestVectorCache: vectors come back equal to the model's, a second run
// embeds nothing, and a torn last record (a run killed mid-write) is
// dropped, not misread.
func TestVectorCache(t *testing.T) {
	ctx := context.Background()
	m, err := embed.Load(ctx, tinyCopy(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	texts := []string{"the first turn", "a second one", "the first turn", "third"}
	want, err := m.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	run := func(texts []string) (*vectorCache, [][]float32) {
		t.Helper()
		c, err := openVectorCache(m, dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		if err := c.Close(&log); err != nil {
			t.Fatal(err)
		}
		return c, got
	}
	c, got := run(texts)
	if c.hits != 0 || c.miss != 4 {
		t.Errorf("first run: %d hits, %d embedded; want 0, 4", c.hits, c.miss)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("text %d: cached vector differs from the model's", i)
		}
	}
	c, got = run(texts)
	if c.hits != 4 || c.miss != 0 {
		t.Errorf("second run: %d hits, %d embedded; want 4, 0", c.hits, c.miss)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("second run, text %d: vector differs from the model's", i)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "vectors-*.bin"))
	if err != nil || len(files) != 1 {
		t.Fatalf("cache files %v (%v), want one", files, err)
	}
	st, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	rec := int64(32 + 4*m.Dim())
	if st.Size() != 3*rec { // three distinct texts
		t.Fatalf("cache file is %d bytes, want %d", st.Size(), 3*rec)
	}
	if err := os.Truncate(files[0], 3*rec-7); err != nil {
		t.Fatal(err)
	}
	c, got = run(texts)
	if c.hits != 3 || c.miss != 1 {
		t.Errorf("after a torn record: %d hits, %d embedded; want 3, 1", c.hits, c.miss)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("after a torn record, text %d: vector differs from the model's", i)
		}
	}
	st, err = os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 3*rec {
		t.Errorf("after a torn record the file is %d bytes, want %d", st.Size(), 3*rec)
	}
}

// TestBenchVectorCacheWiring: bench assistant with --vector-cache gives the
// same tables on a re-run, which embeds nothing.
func TestBenchVectorCacheWiring(t *testing.T) {
	model, cache := tinyCopy(t), t.TempDir()
	args := []string{"assistant", "--conversations", "1", "--filler", "3", "--budgets", "1000",
		"--methods", "bm25,dense,vc-mcp", "--model", model, "--vector-cache", cache}
	run := func() (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if err := runBench(context.Background(), args, &out, &errb); err != nil {
			t.Fatalf("bench assistant: %v\n%s", err, errb.String())
		}
		return out.String(), errb.String()
	}
	first, log1 := run()
	second, log2 := run()
	if !strings.Contains(log1, "vector cache") || strings.Contains(log1, " 0 embedded") {
		t.Errorf("first run's cache report: %q", lastLine(log1))
	}
	if !strings.Contains(log2, " 0 embedded") {
		t.Errorf("second run embedded again: %q", lastLine(log2))
	}
	// The tables without the latency column, which varies.
	if stripLatency(first) != stripLatency(second) {
		t.Errorf("a cached re-run changed the figures:\n%s\n---\n%s", first, second)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func stripLatency(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "| ") {
			cells := strings.Split(l, "|")
			if len(cells) > 3 {
				l = strings.Join(cells[:len(cells)-2], "|")
			}
		}
		if strings.HasPrefix(l, "Preparation time") {
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}
