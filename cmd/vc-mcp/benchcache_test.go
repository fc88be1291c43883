package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
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
