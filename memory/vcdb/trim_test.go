package vcdb

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestTrim: a file bbolt grew ahead of its pages is cut to its high-water
// mark, then opens and grows again as before; a DB closed already (a
// failed open) is left alone.
func TestTrim(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows cannot truncate a mapped file; Trim does nothing there")
	}
	path := filepath.Join(t.TempDir(), "vc.db")
	for round := range 2 {
		db, err := Open(path, &bolt.Options{Timeout: time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		put(t, db, round*3000, (round+1)*3000, 300, 0.5)
		var hwm int64
		if err := db.View(func(tx *bolt.Tx) error { hwm = tx.Size(); return nil }); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() <= hwm {
			t.Fatalf("round %d: setup: the file does not reach past its pages (%d): %v", round, hwm, err)
		}
		if err := (DB{DB: db}).Trim(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != hwm {
			t.Fatalf("round %d: after Trim the file is %d bytes, its pages end at %d", round, fi.Size(), hwm)
		}
		if err := (DB{DB: db}).Trim(); err != nil {
			t.Errorf("Trim of a closed DB: %v", err)
		}
	}
	if got := len(contents(t, path)); got != 6000 {
		t.Errorf("after two trims: %d keys, want 6000", got)
	}
}
