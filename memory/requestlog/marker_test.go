package requestlog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func markerExists(t *testing.T, h *History) bool {
	t.Helper()
	_, err := os.Stat(h.markerPath())
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

func listed(t *testing.T, path string) []string {
	t.Helper()
	names, err := ScopeAll(filepath.Dir(path), testFormat)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestTrimRemovesTheMarker: a trim that keeps no scope-all record removes
// the history's marker, and the history is no longer listed; one that
// keeps one, or whose history has one queued, keeps it; one that reads
// the file afresh finds them from the members.
func TestTrimRemovesTheMarker(t *testing.T) {
	t.Run("trimmed away", func(t *testing.T) {
		path := historyPath(t)
		h := New(path, testFormat)
		appendT(t, h, nil, 1, "all")
		if !markerExists(t, h) || !slices.Equal(listed(t, path), []string{"c"}) {
			t.Fatalf("no marker for a scope-all record (listed %v)", listed(t, path))
		}
		appendT(t, h, nil, Retention+Retention/2, "") // 301 members: trimmed to Retention
		if got := readSeqs(t, h); len(got) != Retention || got[0] != Retention/2+2 {
			t.Fatalf("after the trim: %d records from %d", len(got), got[0])
		}
		if markerExists(t, h) || len(listed(t, path)) != 0 {
			t.Fatalf("the marker outlived the history's last scope-all record (listed %v)", listed(t, path))
		}
		appendT(t, h, nil, 1, "all") // marked again
		if !markerExists(t, h) {
			t.Fatal("no marker for a scope-all record after one was removed")
		}
	})
	t.Run("kept", func(t *testing.T) {
		path := historyPath(t)
		h := New(path, testFormat)
		appendT(t, h, nil, Retention, "")
		appendT(t, h, nil, 1, "all")
		appendT(t, h, nil, Retention/2, "")
		if len(h.ends) != Retention {
			t.Fatalf("%d members, want a trim to %d", len(h.ends), Retention)
		}
		if !markerExists(t, h) {
			t.Fatal("a trim that kept a scope-all record removed the marker")
		}
	})
	t.Run("queued", func(t *testing.T) {
		path := historyPath(t)
		h := New(path, testFormat)
		appendT(t, h, nil, 1, "all")
		appendT(t, h, nil, 10, "")
		if err := h.Append(&testRec{Scope: "all"}, nil, nil); err != nil { // queued, not written
			t.Fatal(err)
		}
		h.file.Lock()
		err := h.trim(5)
		h.file.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if !markerExists(t, h) {
			t.Fatal("a trim removed the marker of a history with a scope-all record queued")
		}
		if err := h.Flush(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("read afresh", func(t *testing.T) {
		path := historyPath(t)
		appendT(t, New(path, testFormat), nil, 1, "all")
		appendT(t, New(path, testFormat), nil, 10, "")
		for _, tc := range []struct {
			keep   int
			marked bool
		}{{11, true}, {10, false}} {
			h := New(path, testFormat) // the next process
			if err := h.Open(); err != nil {
				t.Fatal(err)
			}
			if err := mark(h.markerPath()); err != nil {
				t.Fatal(err)
			}
			h.file.Lock()
			h.ends = nil // not known: the trim reads the file's members
			err := h.trim(tc.keep)
			h.file.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if markerExists(t, h) != tc.marked {
				t.Fatalf("trim to %d: marker %v, want %v", tc.keep, !tc.marked, tc.marked)
			}
		}
	})
}

// TestRewriteKeepsTheMarkerInStep: a rewrite (a scrub) that leaves no
// scope-all record, or empties the history, removes its marker; one that
// leaves one keeps it, or makes it when it was lost.
func TestRewriteKeepsTheMarkerInStep(t *testing.T) {
	path := historyPath(t)
	h := New(path, testFormat)
	appendT(t, h, nil, 2, "all")
	appendT(t, h, nil, 2, "")
	update := func(fn func(r *testRec) bool) {
		t.Helper()
		if err := h.Update(func(lines [][]byte) ([][]byte, bool, error) {
			var out [][]byte
			for _, line := range lines {
				var r testRec
				if err := json.Unmarshal(line, &r); err != nil {
					return nil, false, err
				}
				if !fn(&r) {
					continue
				}
				b, err := json.Marshal(&r)
				if err != nil {
					return nil, false, err
				}
				out = append(out, b)
			}
			return out, true, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(h.markerPath()); err != nil { // lost
		t.Fatal(err)
	}
	update(func(r *testRec) bool { return r.Seq != 1 }) // r2 is still of scope all
	if !markerExists(t, h) || !slices.Equal(readSeqs(t, h), []int{2, 3, 4}) {
		t.Fatalf("after a rewrite keeping a scope-all record: marker %v, records %v", markerExists(t, h), readSeqs(t, h))
	}
	update(func(r *testRec) bool { r.Scope = ""; return true })
	if markerExists(t, h) || len(listed(t, path)) != 0 {
		t.Fatal("the marker outlived a rewrite that left no scope-all record")
	}
	appendT(t, h, nil, 1, "all")
	update(func(*testRec) bool { return false }) // emptied
	if markerExists(t, h) || len(readSeqs(t, h)) != 0 {
		t.Fatalf("after emptying the history: marker %v, records %v", markerExists(t, h), readSeqs(t, h))
	}
	if h.Next() != 6 {
		t.Fatalf("next %d after emptying, want 6 (the numbering goes on)", h.Next())
	}
}

// TestScopeAllMarksEarlierHistoriesOnce: in a directory of an earlier
// version (no MarkersMade), the first listing looks through every history,
// compressed or plain, and marks those with a scope-all record (and one it
// cannot read); later listings read the markers only.
func TestScopeAllMarksEarlierHistoriesOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "requests")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	member := func(line string) []byte {
		b, err := appendMember(nil, []byte(line))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	write("a"+Ext, member(`{"seq":1,"scope":"all"}`))
	write("b"+Ext, member(`{"seq":1,"scope":"conversation"}`))
	write("c"+PlainExt, []byte(`{"seq":1,"scope":"all"}`+"\n"))
	write("d"+MarkerExt, nil)
	write("e"+Ext, []byte("not gzip"))
	want := []string{"a", "c", "d", "e"}
	if got, err := ScopeAll(dir, testFormat); err != nil || !slices.Equal(got, want) {
		t.Fatalf("first listing %v, %v; want %v", got, err, want)
	}
	for _, name := range []string{"a" + MarkerExt, "c" + MarkerExt, "e" + MarkerExt, MarkersMade} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("after the first listing: %v", err)
		}
	}
	write("f"+Ext, member(`{"seq":1,"scope":"all"}`)) // no marker: not looked for again
	if got, err := ScopeAll(dir, testFormat); err != nil || !slices.Equal(got, want) {
		t.Fatalf("second listing %v, %v; want %v", got, err, want)
	}
	if got, err := ScopeAll(filepath.Join(dir, "none"), testFormat); err != nil || got != nil {
		t.Fatalf("listing a directory that is not there: %v, %v", got, err)
	}
}
