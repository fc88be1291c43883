package index

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func zapFiles(t *testing.T, path string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(path, "store"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".zap") {
			n++
		}
	}
	return n
}

// TestCloseMergesSegments: an index written in several batches closes as
// one segment, and answers every search after a reopen as it did before.
func TestCloseMergesSegments(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "idx")
	ix, err := Open(path, &Options{BatchSize: 40, FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	docs := synthDocs(400, 7)
	rememberTexts(docs)
	for from := 0; from < len(docs); from += 40 {
		if err := ix.Add(ctx, docs[from:from+40]); err != nil {
			t.Fatal(err)
		}
	}
	queries := []Query{
		{Text: "garden party budget", Limit: 20},
		{Text: "database migration rain", Limit: 20},
		{Phrases: []string{"last week"}, Text: "hiking trip", Limit: 20},
		{Text: "tonight coffee", Conversations: []string{"c3"}, Limit: 50, Highlight: true},
	}
	before := make([][]Hit, len(queries))
	for i, q := range queries {
		before[i] = search(t, ix, q)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if n := zapFiles(t, path); n != 1 {
		t.Errorf("after Close: %d segment files, want 1", n)
	}
	ix, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if n, err := ix.Count(); err != nil || n != uint64(len(docs)) {
		t.Fatalf("after reopen: %d docs, %v; want %d", n, err, len(docs))
	}
	hits := 0
	for i, q := range queries {
		after := search(t, ix, q)
		hits += len(after)
		if len(after) != len(before[i]) {
			t.Errorf("%+v: %d hits after the merge, %d before", q, len(after), len(before[i]))
			continue
		}
		for j := range after {
			a, b := after[j], before[i][j]
			if a.ID != b.ID || math.Abs(a.Score-b.Score) > 1e-9 || len(a.Matches) != len(b.Matches) {
				t.Errorf("%+v: hit %d is %s (%.6f, %d matches) after the merge, %s (%.6f, %d matches) before", q, j, a.ID, a.Score, len(a.Matches), b.ID, b.Score, len(b.Matches))
			}
		}
	}
	if hits == 0 {
		t.Fatal("setup: no query found anything")
	}
}
