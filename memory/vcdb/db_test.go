package vcdb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// put writes keys from to to ("%06d") of size-byte values ("v...") into
// bucket "b" of db, in key order, with the bucket's fill percent.
func put(t *testing.T, db *bolt.DB, from, to, size int, fillPercent float64) {
	t.Helper()
	value := []byte(strings.Repeat("v", size))
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		b.FillPercent = fillPercent
		for i := from; i < to; i++ {
			if err := b.Put(fmt.Appendf(nil, "%06d", i), value); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// fill puts n keys into the bbolt file at path (put), then deletes every
// key whose number is not a multiple of keepEvery (1: none). It returns
// what the file then holds.
func fill(t *testing.T, path string, n, size int, fillPercent float64, keepEvery int) map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put(t, db, 0, n, size, fillPercent)
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		for i := range n {
			if i%keepEvery != 0 {
				if err := b.Delete(fmt.Appendf(nil, "%06d", i)); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i < n; i += keepEvery {
		want[fmt.Sprintf("%06d", i)] = strings.Repeat("v", size)
	}
	return want
}

// overwrite writes data over the file at path from byte off: the file
// keeps its inode, as a damaged disk or a cut-short copy leaves it.
func overwrite(t *testing.T, path string, data []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(data, off)
	if err = errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
}

// contents reads every key of bucket "b" of the bbolt file at path.
func contents(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := map[string]string{}
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("b")).ForEach(func(k, v []byte) error {
			got[string(k)] = string(v)
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func sameContents(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %s: %d bytes, want %d", k, len(got[k]), len(v))
		}
	}
}

// TestGuard: a panic in a call is an error that IsDamaged reports, made
// by Damaged when it is set (called once, as the panic is recovered);
// an error the function returns is returned as it is.
func TestGuard(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "vc.db"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mine := errors.New("mine")
	calls := map[string]func(d DB, f func() error) error{
		"View":   func(d DB, f func() error) error { return d.View(func(*bolt.Tx) error { return f() }) },
		"Update": func(d DB, f func() error) error { return d.Update(func(*bolt.Tx) error { return f() }) },
		"Guard":  func(d DB, f func() error) error { return Guard(d.Damaged, f) },
	}
	for name, call := range calls {
		for _, withDamaged := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s damaged=%v", name, withDamaged), func(t *testing.T) {
				d := DB{DB: db}
				var seen []*PanicError
				if withDamaged {
					d.Damaged = func(pe *PanicError) error {
						seen = append(seen, pe)
						return fmt.Errorf("the store's error: %w", pe)
					}
				}
				err := call(d, func() error { panic("boom") })
				var pe *PanicError
				if !errors.As(err, &pe) || pe.Value != "boom" || !IsDamaged(err) || !errors.Is(err, berrors.ErrInvalid) {
					t.Fatalf("a panic: %v (%T); want a *PanicError of boom, damaged", err, err)
				}
				want := "invalid database: bbolt: boom"
				if withDamaged {
					want = "the store's error: " + want
					if len(seen) != 1 || seen[0] != pe {
						t.Errorf("Damaged called with %v; want once, with the error returned", seen)
					}
				}
				if err.Error() != want {
					t.Errorf("a panic: %q, want %q", err, want)
				}
				if err := call(d, func() error { return mine }); err != mine {
					t.Errorf("a returned error: %v, want it as it was", err)
				}
				if err := call(d, func() error { return nil }); err != nil || len(seen) > 1 {
					t.Errorf("no error: %v (Damaged called %d times)", err, len(seen))
				}
			})
		}
	}
}

// TestADamagedPageIsAnError: a page overwritten on disk makes bbolt panic
// when a transaction reads it; View answers the panic as an error, and
// the file is still closed cleanly.
func TestADamagedPageIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vc.db")
	fill(t, path, 3000, 300, 0.5, 1)
	raw, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var root int64
	if err := raw.View(func(tx *bolt.Tx) error { root = int64(tx.Bucket([]byte("b")).Root()); return nil }); err != nil {
		t.Fatal(err)
	}
	pageSize := int64(raw.Info().PageSize)
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, pageSize)
	for i := range noise {
		noise[i] = byte(i*131 + 17) // not a page: neither its id nor its type holds
	}
	overwrite(t, path, noise, root*pageSize)

	db, err := Open(path, &bolt.Options{Timeout: time.Second}, nil)
	if err != nil {
		t.Fatalf("open with a damaged page (not a meta page): %v", err)
	}
	err = DB{DB: db}.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("b")).ForEach(func(_, _ []byte) error { return nil })
	})
	var pe *PanicError
	if !errors.As(err, &pe) || !IsDamaged(err) {
		t.Errorf("reading a damaged page: %v; want bbolt's panic as a *PanicError", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("close after a damaged page: %v", err)
	}
}

// TestOpenRefusesAnUnusableFile: a vc.db bbolt cannot use is an error
// IsDamaged reports, never a crash: one cut short below the pages its meta
// names faulted the process (SIGBUS) at its first read. A missing or
// empty file is made.
func TestOpenRefusesAnUnusableFile(t *testing.T) {
	page := os.Getpagesize()
	tests := []struct {
		name    string
		damage  func(data []byte) []byte
		damaged string // in the error; "" for none
	}{
		{"missing", nil, ""},
		{"empty", func([]byte) []byte { return nil }, ""},
		{"not a bbolt file", func(data []byte) []byte {
			return []byte(strings.Repeat("not a bbolt file ", len(data)/17))
		}, "invalid database"},
		{"cut short", func(data []byte) []byte { return data[:3*page] }, "the file was cut short"},
		// bbolt has no sentinel for it: OpenReadOnly reads its message.
		{"one page", func(data []byte) []byte { return data[:page] }, "file size too small"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vc.db")
			if tt.damage != nil {
				fill(t, path, 3000, 300, 0.5, 1)
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if len(data) <= 3*page {
					t.Fatalf("setup: %d bytes, too small to cut", len(data))
				}
				if err := os.WriteFile(path, tt.damage(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			db, err := Open(path, &bolt.Options{Timeout: time.Second}, nil)
			if tt.damaged == "" {
				if err != nil {
					t.Fatal(err)
				}
				if db.AllocSize != growStep {
					t.Errorf("grows %d bytes at a time, want %d", db.AllocSize, growStep)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				_ = db.Close()
				t.Fatal("opened")
			}
			if !IsDamaged(err) || !strings.Contains(err.Error(), tt.damaged) {
				t.Errorf("Open: %v; want an error IsDamaged reports, saying %q", err, tt.damaged)
			}
		})
	}
}

// TestOpenTimesOutWhileAnotherHoldsTheFile: a lock another holder keeps
// is bolt.ErrTimeout, not damage.
func TestOpenTimesOutWhileAnotherHoldsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vc.db")
	fill(t, path, 10, 10, 0.5, 1)
	held, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := Open(path, &bolt.Options{Timeout: 50 * time.Millisecond}, nil); !errors.Is(err, berrors.ErrTimeout) || IsDamaged(err) {
		t.Errorf("Open of a held file: %v; want bolt.ErrTimeout", err)
	}
}

// TestProbeWaitsForAGrowingWriter: a vc.db that another process holds,
// grows and lets go while a start waits for it is whole, not cut short:
// its size is read once the lock is held. (It was read before the wait,
// and a healthy file was called damaged.)
func TestProbeWaitsForAGrowingWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vc.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- probe(path, 10*time.Second) }()
	time.Sleep(100 * time.Millisecond) // the probe waits for the lock
	put(t, db, 0, 3000, 300, 0.5)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("probe of a file grown while it waited: %v", err)
	}
}

func TestIsDamaged(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{berrors.ErrInvalid, true},
		{berrors.ErrChecksum, true},
		{berrors.ErrVersionMismatch, true},
		{fmt.Errorf("open: %w", berrors.ErrInvalid), true},
		{&PanicError{Value: "unreachable"}, true},
		{berrors.ErrTimeout, false},
		{os.ErrPermission, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := IsDamaged(tt.err); got != tt.want {
			t.Errorf("IsDamaged(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
