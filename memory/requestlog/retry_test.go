package requestlog

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fullDisk makes every append to a history fail with ENOSPC while it is
// set, having first run also (when not nil) with the history's path.
func fullDisk(t *testing.T, also func(path string)) *atomic.Bool {
	var full atomic.Bool
	SetWriteHook(func(path string) error {
		if !full.Load() {
			return nil
		}
		if also != nil {
			also(path)
		}
		return syscall.ENOSPC
	})
	t.Cleanup(func() { SetWriteHook(nil) })
	return &full
}

func seqRange(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestFailedWriteIsRetried: the records of a write that failed (a full
// disk) stay queued, are read meanwhile, and are written by the next
// write once the disk takes them, in order, ahead of newer ones, once
// each; what the disk took of the failed write is cut off the file.
func TestFailedWriteIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		took func(path string) // what the disk took of the failed write
	}{
		{"nothing written", nil},
		{"part written", func(path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				var part []byte
				part, _ = appendMember(nil, []byte(`{"id":"r3","seq":3}`))
				f.Write(part[:len(part)/2])
				f.Close()
			}
		}},
		{"a whole member written", func(path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				part, _ := appendMember(nil, []byte(`{"id":"r3","seq":3}`))
				f.Write(part)
				f.Close()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := fullDisk(t, tc.took)
			path := historyPath(t)
			h := New(path, testFormat)
			appendT(t, h, nil, 2, "")
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			full.Store(true)
			for range 3 {
				if err := h.Append(&testRec{}, nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.Flush(); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("flush on a full disk: %v, want ENOSPC", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Fatalf("the failed write left %d bytes in the file", len(after)-len(before))
			}
			if got := readSeqs(t, h); !slices.Equal(got, seqRange(1, 5)) {
				t.Fatalf("read during the fault: %v, want 1 to 5 (3 to 5 queued)", got)
			}
			if err := h.Flush(); !errors.Is(err, syscall.ENOSPC) { // still full: still kept
				t.Fatalf("second flush on a full disk: %v, want ENOSPC", err)
			}
			full.Store(false)
			if err := h.Append(&testRec{}, nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := h.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := readSeqs(t, New(path, testFormat)); !slices.Equal(got, seqRange(1, 6)) {
				t.Fatalf("after the fault: the file holds %v, want 1 to 6 once each", got)
			}
			if f, err := load(path, false, nil); err != nil || f.good != len(f.data) || len(f.ends) != 6 {
				t.Fatalf("file: %d members, %d of %d bytes whole, %v", len(f.ends), f.good, len(f.data), err)
			}
		})
	}
}

// TestFailedWritesKeepAtMostRetention: while writes fail, at most
// Retention records wait, the oldest dropped first, and the error says so.
func TestFailedWritesKeepAtMostRetention(t *testing.T) {
	full := fullDisk(t, nil)
	path := historyPath(t)
	h := New(path, testFormat)
	full.Store(true)
	for range Retention + 10 {
		if err := h.Append(&testRec{}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	err := h.Flush()
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "10 record(s) dropped") {
		t.Fatalf("flush on a full disk: %v, want ENOSPC saying 10 were dropped", err)
	}
	full.Store(false)
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := readSeqs(t, New(path, testFormat)); !slices.Equal(got, seqRange(11, Retention+10)) {
		t.Fatalf("after the fault: the file holds %d records, %v...; want 11 to %d", len(got), got[:min(3, len(got))], Retention+10)
	}
}

// TestWriterRetriesAFailedWrite: the writer reports a failed write and
// keeps its record, which reaches the file with the next record it is
// sent, in order.
func TestWriterRetriesAFailedWrite(t *testing.T) {
	defer func(d time.Duration) { retryDelay = d }(retryDelay)
	retryDelay = 0
	full := fullDisk(t, nil)
	path := historyPath(t)
	h := New(path, testFormat)
	reports := make(chan error, 10)
	w := StartWriter(func(err error) { reports <- err })
	full.Store(true)
	if err := h.Append(&testRec{}, w, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-reports; !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("the writer reported %v, want ENOSPC", err)
	}
	full.Store(false)
	if err := h.Append(&testRec{}, w, nil); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	close(reports)
	for err := range reports {
		t.Errorf("reported after the fault: %v", err)
	}
	if got := readSeqs(t, New(path, testFormat)); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("the file holds %v, want [1 2]", got)
	}
}

// TestFailingDiskIsTriedOnceASecond: while the disk stays full, the writer
// and the callers try a write at most once every retryDelay, not once a
// record, and a caller never waits for the disk then; at most Retention
// wait, and Flush (Close's last try) still tries.
func TestFailingDiskIsTriedOnceASecond(t *testing.T) {
	var attempts atomic.Int64
	SetWriteHook(func(string) error {
		attempts.Add(1)
		return syscall.ENOSPC
	})
	t.Cleanup(func() { SetWriteHook(nil) })
	h := New(historyPath(t), testFormat)
	var reports atomic.Int64
	w := StartWriter(func(error) { reports.Add(1) })
	start := time.Now()
	for range 4 * Retention {
		if err := h.Append(&testRec{}, w, nil); err != nil {
			t.Fatal(err)
		}
	}
	w.Stop()
	took := time.Since(start)
	if max := int64(took/retryDelay) + 2; attempts.Load() > max || reports.Load() > max {
		t.Fatalf("%d appends in %v: %d write attempts and %d reports, want at most %d", 4*Retention, took, attempts.Load(), reports.Load(), max)
	}
	before := attempts.Load()
	if err := h.Flush(); !errors.Is(err, syscall.ENOSPC) || attempts.Load() != before+1 {
		t.Fatalf("Flush on a full disk: %v after %d attempts, want ENOSPC after one more", err, attempts.Load()-before)
	}
	if got := len(readSeqs(t, h)); got != Retention {
		t.Fatalf("%d records wait, want %d", got, Retention)
	}
}

// TestUpdateScrubsWhenTheQueueCannotBeWritten: a rewrite (a forget's
// scrub) goes on with the file when writing the queue first fails: the
// queued records are dropped, never left to escape it, and the scrub is
// not skipped.
func TestUpdateScrubsWhenTheQueueCannotBeWritten(t *testing.T) {
	full := fullDisk(t, nil)
	path := historyPath(t)
	h := New(path, testFormat)
	appendT(t, h, nil, 3, "")
	full.Store(true)
	if err := h.Append(&testRec{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	err := h.Update(func(lines [][]byte) ([][]byte, bool, error) {
		if len(lines) != 3 {
			t.Errorf("the scrub got %d lines, want the file's 3", len(lines))
		}
		return nil, true, nil // forget them all
	})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "1 request records dropped") {
		t.Fatalf("Update: %v, want the failed write and the dropped record said", err)
	}
	if got := readSeqs(t, New(path, testFormat)); len(got) != 0 {
		t.Fatalf("after the scrub the file holds %v, want nothing", got)
	}
	if got := readSeqs(t, h); len(got) != 0 {
		t.Fatalf("after the scrub the history reads %v, want nothing", got)
	}
}

// TestScrubThatCannotRewriteClears: when a scrub's new copy of a history
// cannot be written (a disk too full for it), the history is cleared
// rather than left holding what the scrub was to remove.
func TestScrubThatCannotRewriteClears(t *testing.T) {
	path := historyPath(t)
	h := New(path, testFormat)
	appendT(t, h, nil, 3, "all")
	rewriteHook = func(string) error { return syscall.ENOSPC }
	t.Cleanup(func() { rewriteHook = nil })
	err := h.Update(func(lines [][]byte) ([][]byte, bool, error) { return lines[:2], true, nil })
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "cleared instead") {
		t.Fatalf("Update whose rewrite fails: %v, want ENOSPC and the history cleared", err)
	}
	if got := readSeqs(t, New(path, testFormat)); len(got) != 0 {
		t.Fatalf("the file holds %v after the failed scrub, want nothing", got)
	}
	if _, err := os.Stat(h.markerPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the cleared history kept its scope-all marker: %v", err)
	}
	rewriteHook = nil
	appendT(t, h, nil, 1, "") // numbering goes on
	if got := readSeqs(t, New(path, testFormat)); !slices.Equal(got, []int{4}) {
		t.Fatalf("after clearing, the file holds %v, want [4]", got)
	}
}

// TestDamageOutsideMembersDoesNotOutliveWrites: a member cut short in the
// file (a failed write whose cut failed too) is written over by the next
// write, not left inside the file; and a scrub rewrites a file holding a
// damaged member even when its records need no change, so the damaged
// bytes (which it never saw) do not outlive it.
func TestDamageOutsideMembersDoesNotOutliveWrites(t *testing.T) {
	path := historyPath(t)
	h := New(path, testFormat)
	appendT(t, h, nil, 2, "")
	torn, _ := appendMember(nil, []byte(`{"id":"r3","seq":3,"turn_ids":["t1"]}`))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(torn[:len(torn)/2]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	appendT(t, h, nil, 1, "")
	if g, err := load(path, false, nil); err != nil || g.dirty() || len(g.ends) != 3 {
		t.Fatalf("after the next write: %d whole members, dirty %v, %v; want 3 and nothing else", len(g.ends), g.dirty(), err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := load(path, false, nil)
	copy(data[g.starts[1]+12:], "GARBAGE!") // the second member's deflated body
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if g, _ := load(path, false, nil); !g.dirty() {
		t.Fatal("the damaged member is not outside the whole ones: the test damaged nothing")
	}
	if err := h.Update(func(lines [][]byte) ([][]byte, bool, error) { return lines, false, nil }); err != nil {
		t.Fatal(err)
	}
	if g, err := load(path, false, nil); err != nil || g.dirty() || len(g.ends) != 2 {
		t.Fatalf("after the scrub: %d whole members, dirty %v, %v; want the 2 good ones and nothing else", len(g.ends), g.dirty(), err)
	}
}
