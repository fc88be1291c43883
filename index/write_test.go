package index

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// bleveCount reads Bleve's own count, bypassing the write buffer.
func bleveCount(t *testing.T, ix *Index) uint64 {
	t.Helper()
	n, err := ix.bi.DocCount()
	if err != nil {
		t.Fatalf("DocCount: %v", err)
	}
	return n
}

func TestWriteBuffer(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(filepath.Join(t.TempDir(), "idx"), &Options{BatchSize: 7, FlushDelay: time.Hour})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer ix.Close()

	// 10 docs with BatchSize 7: one full batch written, 3 buffered.
	if err := ix.Add(ctx, synthDocs(10, 21)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if got := bleveCount(t, ix); got != 7 {
		t.Errorf("after Add: bleve holds %d docs, want 7 (3 buffered)", got)
	}

	// Changes to one ID inside the buffer apply in call order.
	steps := []struct {
		name string
		do   func() error
		want []string
	}{
		{"add", func() error { return ix.Add(ctx, []Doc{{ID: "x", Text: "zebra"}}) }, []string{"x"}},
		{"delete after add", func() error { return ix.Delete(ctx, []string{"x"}) }, nil},
		{"add after delete", func() error { return ix.Add(ctx, []Doc{{ID: "x", Text: "zebra again"}}) }, []string{"x"}},
		{"replace", func() error { return ix.Add(ctx, []Doc{{ID: "x", Text: "okapi"}}) }, nil},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		// Search writes the buffer out first, so it sees every change.
		if got := ids(search(t, ix, Query{Text: "zebra"})); !slices.Equal(got, st.want) {
			t.Errorf("%s: got %v, want %v", st.name, got, st.want)
		}
	}
	if n, err := ix.Count(); err != nil || n != 11 {
		t.Errorf("got count %d, %v, want 11", n, err)
	}
}

func TestBackgroundFlush(t *testing.T) {
	ix, err := Open(filepath.Join(t.TempDir(), "idx"), &Options{FlushDelay: time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer ix.Close()
	if err := ix.Add(context.Background(), synthDocs(5, 22)); err != nil {
		t.Fatalf("Add: %v", err)
	}
	// No read forces the write; the timer must. Wait generously.
	deadline := time.Now().Add(10 * time.Second)
	for bleveCount(t, ix) != 5 {
		if time.Now().After(deadline) {
			t.Fatalf("bleve holds %d docs after 10s, want 5", bleveCount(t, ix))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
