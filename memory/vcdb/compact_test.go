package vcdb

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func noCompactionLeftovers(t *testing.T, path string) {
	t.Helper()
	for _, suffix := range []string{CompactingSuffix, CompactedSuffix, ".compact"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Errorf("%s left behind", filepath.Base(path+suffix))
		}
	}
}

// hwmOf returns the high-water mark of the closed bbolt file at path.
func hwmOf(t *testing.T, path string) int64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var hwm int64
	if err := db.View(func(tx *bolt.Tx) error { hwm = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	return hwm
}

// TestCompact: a file whose free pages and unused page bytes are at least
// an eighth of it and 128 KiB is compacted in place (same inode, cut to
// its new pages, same contents); one with less is left as it was.
func TestCompact(t *testing.T) {
	if !CompactsInPlace {
		t.Skip("no flock: vc.db is not compacted in place here")
	}
	tests := []struct {
		name        string
		n, size     int
		fillPercent float64
		keepEvery   int
		want        bool
	}{
		// 1.2 MB, nine tenths deleted: about 1 MB unused.
		{"mostly free", 4000, 300, 0.5, 10, true},
		// Half of it unused, but under 128 KiB.
		{"few bytes free", 100, 300, 0.5, 2, false},
		// Full pages, nothing deleted: a small share unused.
		{"little free", 4000, 300, 1.0, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vc.db")
			want := fill(t, path, tt.n, tt.size, tt.fillPercent, tt.keepEvery)
			db, err := Open(path, &bolt.Options{Timeout: time.Second}, nil)
			if err != nil {
				t.Fatal(err)
			}
			hwm, used, err := dbUse(db)
			if err != nil {
				t.Fatal(err)
			}
			if waste := hwm - used; (waste >= compactMinFree && waste*compactMinShare >= hwm) != tt.want {
				t.Fatalf("setup: %d of %d bytes unused", waste, hwm)
			}
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			compacted, err := DB{DB: db}.Compact()
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if compacted != tt.want {
				t.Fatalf("compacted %v, want %v (%d of %d bytes unused)", compacted, tt.want, hwm-used, hwm)
			}
			fi2, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(fi, fi2) {
				t.Error("vc.db was replaced by another file; it must keep its inode (its lock)")
			}
			noCompactionLeftovers(t, path)
			sameContents(t, contents(t, path), want)
			if !tt.want {
				if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
					t.Errorf("a file not worth compacting was changed (%v)", err)
				}
				return
			}
			if afterHWM := hwmOf(t, path); afterHWM >= hwm || fi2.Size() != afterHWM {
				t.Errorf("after Compact: pages end at %d (were %d), file %d bytes", afterHWM, hwm, fi2.Size())
			}
		})
	}
}

// TestFinishCompaction: a crash while the compacted copy was written over
// vc.db leaves vc.db damaged beside a complete vc.db.compacted; before an
// open the copy is finished, in place, unless another process holds the
// file (it finishes its own).
func TestFinishCompaction(t *testing.T) {
	if !CompactsInPlace {
		t.Skip("no flock: vc.db is not compacted in place here")
	}
	tests := []struct {
		name     string
		held     bool // another holds vc.db's lock
		noDB     bool // vc.db is missing
		cutCopy  bool // vc.db.compacted is cut short: damaged
		finishes bool
	}{
		{"interrupted", false, false, false, true},
		{"held by another", true, false, false, false},
		{"no vc.db", false, true, false, false},
		{"copy cut short", false, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vc.db")
			want := fill(t, path, 2000, 300, 0.5, 1)
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			compacted := good
			if tt.cutCopy {
				compacted = good[:len(good)/2]
			}
			if err := os.WriteFile(path+CompactedSuffix, compacted, 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.held {
				held, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer held.Close()
			}
			if tt.noDB {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else {
				// Half written over: the meta pages and more are garbage.
				overwrite(t, path, make([]byte, 3*4096), 0)
			}
			fi, _ := os.Stat(path)
			if err := FinishCompaction(path); tt.cutCopy != IsDamaged(err) || (!tt.cutCopy && err != nil) {
				t.Fatalf("FinishCompaction: %v (damaged %v), want damaged %v", err, IsDamaged(err), tt.cutCopy)
			}
			_, leftErr := os.Stat(path + CompactedSuffix)
			if !tt.finishes {
				if leftErr != nil {
					t.Errorf("vc.db.compacted was removed: %v", leftErr)
				}
				if _, err := os.Stat(path); tt.noDB && err == nil {
					t.Error("a missing vc.db was made")
				}
				return
			}
			noCompactionLeftovers(t, path)
			fi2, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(fi, fi2) {
				t.Error("vc.db was replaced by another file; it must keep its inode (its lock)")
			}
			sameContents(t, contents(t, path), want)
			if err := FinishCompaction(path); err != nil {
				t.Errorf("with nothing to finish: %v", err)
			}
		})
	}
}

// TestScrubAndRewrite: after a forget no free page may keep a deleted
// value's bytes. Scrub compacts the open file in place, keeping its inode
// (so a process waiting for its lock gets this file), even when that
// saves nothing; Rewrite copies the closed file into a fresh one.
func TestScrubAndRewrite(t *testing.T) {
	tests := []struct {
		name string
		// keepEvery: 1 deletes nothing but the value, so that the
		// compaction saves almost nothing.
		keepEvery int
		scrub     bool
	}{
		{"scrub, little to save", 1, true},
		{"scrub, mostly free", 10, true},
		{"rewrite", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.scrub && !CompactsInPlace {
				t.Skip("no flock: vc.db is not compacted in place here")
			}
			path := filepath.Join(t.TempDir(), "vc.db")
			want := fill(t, path, 2000, 300, 0.5, tt.keepEvery)
			secret := []byte("a forgotten message")
			db, err := Open(path, &bolt.Options{Timeout: time.Second}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, put := range []bool{true, false} {
				if err := db.Update(func(tx *bolt.Tx) error {
					if put {
						return tx.Bucket([]byte("b")).Put([]byte("secret"), secret)
					}
					return tx.Bucket([]byte("b")).Delete([]byte("secret"))
				}); err != nil {
					t.Fatal(err)
				}
			}
			if data, err := os.ReadFile(path); err != nil || !bytes.Contains(data, secret) {
				t.Fatalf("setup: the deleted value is not in a free page (%v)", err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if tt.scrub {
				if scrubbed, err := (DB{DB: db}).Scrub(); err != nil || !scrubbed {
					t.Fatalf("Scrub: %v, %v", scrubbed, err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if !tt.scrub {
				if err := Rewrite(path); err != nil {
					t.Fatal(err)
				}
			}
			noCompactionLeftovers(t, path)
			sameContents(t, contents(t, path), want)
			if data, err := os.ReadFile(path); err != nil || bytes.Contains(data, secret) {
				t.Errorf("the file still holds the deleted value (%v)", err)
			}
			fi2, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if same := os.SameFile(fi, fi2); same != tt.scrub {
				t.Errorf("same inode afterwards: %v, want %v", same, tt.scrub)
			}
		})
	}
}
