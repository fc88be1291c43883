package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/memory/vcdb"
)

// freeBytes opens vc.db (the store closed) and returns its free pages'
// bytes and its high-water mark.
func freeBytes(t *testing.T, dir string) (free, hwm int64) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error { hwm = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	return int64(db.Stats().FreePageN) * int64(db.Info().PageSize), hwm
}

func noCompactionLeftovers(t *testing.T, dir string) {
	t.Helper()
	for _, suffix := range []string{vcdb.CompactingSuffix, vcdb.CompactedSuffix} {
		if _, err := os.Stat(filepath.Join(dir, dbFile+suffix)); err == nil {
			t.Errorf("%s left behind", dbFile+suffix)
		}
	}
}

// TestCloseCompactsDB: a vc.db whose compactions left many free pages is
// compacted in place by Close (same file, same answers after a reopen).
// When vcdb compacts, and how, is tested there; 3,200 turns leave about
// 190 KB of 440 unused, past its thresholds (128 KiB and an eighth).
func TestCloseCompactsDB(t *testing.T) {
	if !vcdb.CompactsInPlace {
		t.Skip("no flock: vc.db is not compacted in place here")
	}
	dir := t.TempDir()
	opts := Options{Dir: dir, ContextWindow: 4000, ProtectedTurns: 4}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	msgs := chat(3200, t0)
	for i := 0; i < len(msgs); i += 100 {
		ingest(t, s, "c", msgs[i:i+100])
	}
	st, err := s.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Segments == 0 {
		t.Fatal("setup: no compaction")
	}
	before := observe(t, s, "c")
	var hwm int64
	if err := s.db.View(func(tx *bolt.Tx) error { hwm = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, dbFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi2, err := os.Stat(filepath.Join(dir, dbFile))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(fi, fi2) {
		t.Error("vc.db was replaced by another file; it must keep its inode (its lock)")
	}
	after, afterHWM := freeBytes(t, dir)
	if after*8 >= afterHWM || afterHWM >= hwm || fi2.Size() != afterHWM {
		t.Errorf("after Close: %d free bytes, pages end at %d (were %d), file %d bytes", after, afterHWM, hwm, fi2.Size())
	}
	noCompactionLeftovers(t, dir)
	s = openTest(t, opts)
	compareSnapshots(t, before, observe(t, s, "c"))
}

// TestInterruptedCompactionFinishes: a crash while a compacted vc.db was
// being written over the old one leaves vc.db damaged beside a complete
// vc.db.compacted; the next Open (or Rebuild) finishes the copy first.
// Should the copy itself be damaged, neither file can be used: Open says
// to rebuild, and Rebuild remakes vc.db from the logs.
func TestInterruptedCompactionFinishes(t *testing.T) {
	if !vcdb.CompactsInPlace {
		t.Skip("no flock: vc.db is not compacted in place here")
	}
	tests := []struct {
		name, how string
		// copy makes vc.db.compacted from the good file.
		copy func(good []byte) []byte
	}{
		{"Open", "Open", nil},
		{"Rebuild", "Rebuild", nil},
		{"Open, copy cut short", "Open", func(good []byte) []byte { return good[:len(good)/2] }},
		{"Rebuild, copy cut short", "Rebuild", func(good []byte) []byte { return good[:len(good)/2] }},
		{"Rebuild, copy not bbolt", "Rebuild", func(good []byte) []byte { return make([]byte, len(good)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			before := buildDerivedState(t, dir) // the store is closed
			path := filepath.Join(dir, dbFile)
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			compacted := good
			if tt.copy != nil {
				compacted = tt.copy(good)
			}
			if err := os.WriteFile(path+vcdb.CompactedSuffix, compacted, 0o600); err != nil {
				t.Fatal(err)
			}
			// Half written over: the meta pages and more are garbage.
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(make([]byte, 3*4096), 0); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			opts := Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Summarizer: &countingSummarizer{fail: true}, Tagger: &countingTagger{fail: true}, Splitter: &refusingSplitter{}}
			if tt.how == "Rebuild" {
				if err := Rebuild(context.Background(), opts, nil); err != nil {
					t.Fatal(err)
				}
			} else if tt.copy != nil {
				_, err := Open(context.Background(), opts)
				var se *StorageError
				if !errors.As(err, &se) || !strings.Contains(se.Message, "vc-mcp rebuild") {
					t.Fatalf("open beside a damaged compacted copy: %v; want a StorageError naming vc-mcp rebuild", err)
				}
				return
			}
			s := openTest(t, opts)
			compareSnapshots(t, before, observe(t, s, "c"))
			noCompactionLeftovers(t, dir)
		})
	}
}
