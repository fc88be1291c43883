package index

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/blevesearch/bleve/v2"
)

// One failed write must not fail every later one, and the documents it
// dropped are named so that the caller can add them again.
func TestFailedWriteIsNotSticky(t *testing.T) {
	ctx := context.Background()
	var notified atomic.Int64
	ix, err := Open(filepath.Join(t.TempDir(), "idx"), &Options{OnLost: func() { notified.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	real := ix.batchFn
	fail := true
	ix.batchFn = func(b *bleve.Batch) error {
		if fail {
			fail = false
			return errors.New("disk full")
		}
		return real(b)
	}
	if err := ix.Add(ctx, []Doc{{ID: "c/t1", Kind: "turn", Text: "alpha apples"}, {ID: "c/t2", Kind: "turn", Text: "beta bananas"}}); err != nil {
		t.Fatal(err) // buffered: the failure comes at the flush
	}
	if _, err := ix.Search(ctx, Query{Text: "apples"}); err == nil {
		t.Fatal("search after a failed flush reported no error")
	}
	if notified.Load() != 1 {
		t.Fatalf("OnLost called %d times, want 1", notified.Load())
	}
	lost := ix.TakeLost()
	slices.Sort(lost)
	if !slices.Equal(lost, []string{"c/t1", "c/t2"}) {
		t.Fatalf("lost %v, want [c/t1 c/t2]", lost)
	}
	if again := ix.TakeLost(); len(again) != 0 {
		t.Fatalf("TakeLost twice: %v", again)
	}
	// Later writes work, and re-adding the lost ones makes them searchable.
	if err := ix.Add(ctx, []Doc{{ID: "c/t1", Kind: "turn", Text: "alpha apples"}, {ID: "c/t3", Kind: "turn", Text: "gamma grapes"}}); err != nil {
		t.Fatalf("Add after a failed write: %v", err)
	}
	hits, err := ix.Search(ctx, Query{Text: "apples grapes"})
	if err != nil {
		t.Fatalf("Search after a failed write: %v", err)
	}
	if got := ids(hits); len(got) != 2 {
		t.Fatalf("hits %v, want c/t1 and c/t3", got)
	}
	if err := ix.Close(); err != nil {
		t.Fatalf("Close after a failed write: %v", err)
	}
}

func TestCreatedReportsANewIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "idx")
	ix, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ix.Created() {
		t.Fatal("a new index does not say it was created")
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if ix.Created() {
		t.Fatal("a reopened index says it was created")
	}
}
