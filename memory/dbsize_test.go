package memory

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// turnSegments returns each turn's segment name as Turn reports it.
func turnSegments(t *testing.T, s *Store, conv string) []string {
	t.Helper()
	st, err := s.Status(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, st.Totals.Turns)
	for i := range out {
		tr, err := s.Turn(context.Background(), conv, turnID(i+1))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = tr.Segment
	}
	return out
}

// TestTurnSegmentsFromRanges: a compaction does not rewrite its turns'
// records in vc.db; loading gives each turn its segment from the
// segments' ranges, the same after a reopen and after a rebuild.
func TestTurnSegmentsFromRanges(t *testing.T) {
	dir := t.TempDir()
	buildDerivedState(t, dir) // closes the store at cleanup: reopen below
	opts := Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := turnSegments(t, s, "c")
	inSegment := 0
	for _, sg := range want {
		if sg != "" {
			inSegment++
		}
	}
	if inSegment == 0 {
		t.Fatal("setup: no turn is in a segment")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The stored records of compacted turns carry no segment, but for the
	// few a tag split rewrote afterwards (with the segment they are in).
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(convBucketName("c")).Bucket(bucketTurns).ForEach(func(_, v []byte) error {
			tm, err := decodeTurn(v)
			if tm.Segment != 0 {
				stored++
			}
			return err
		})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if stored >= inSegment/2 {
		t.Errorf("%d turn records of %d compacted turns in vc.db hold a segment; want only those a split rewrote", stored, inSegment)
	}

	for _, how := range []string{"reopen", "rebuild"} {
		if how == "rebuild" {
			for _, p := range []string{dbFile, indexDir} {
				if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
					t.Fatal(err)
				}
			}
		}
		s := openTest(t, opts)
		got := turnSegments(t, s, "c")
		if len(got) != len(want) {
			t.Fatalf("%s: %d turns, want %d", how, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: turn %d is in segment %q, want %q", how, i+1, got[i], want[i])
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
