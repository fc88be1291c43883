package memory

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// unblockRecords rewrites bucket name of conversation conv in dir's vc.db
// as earlier versions laid it out: every record one per seqKey, in the
// form form gives (the record bytes of this version in, the old value
// out). It returns how many records it wrote.
func unblockRecords(t *testing.T, dir, conv string, name []byte, form func(rec []byte) ([]byte, error)) int {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(convBucketName(conv)).Bucket(name)
		type rec struct {
			id int
			v  []byte
		}
		var recs []rec
		if err := forEachRecord(b, func(id int, v []byte) error {
			old, err := form(v)
			recs = append(recs, rec{id, old})
			return err
		}); err != nil {
			return err
		}
		var keys [][]byte
		if err := b.ForEach(func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			return nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		for _, r := range recs {
			if err := b.Put(seqKey(r.id), r.v); err != nil {
				return err
			}
		}
		n = len(recs)
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// countBlocks counts the record blocks and one-record keys of a bucket.
func countBlocks(t *testing.T, dir, conv string, name []byte) (blocks, single int) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(convBucketName(conv)).Bucket(name).ForEach(func(k, _ []byte) error {
			if isBlockKey(k) {
				blocks++
			} else {
				single++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return blocks, single
}

// TestPerRecordDBOpens: a vc.db of the previous version, one binary record
// per turn and per segment, opens and answers as before, takes new writes
// (into blocks, beside the old records) and answers the same after a
// reopen and after a rebuild.
func TestPerRecordDBOpens(t *testing.T) {
	dir := t.TempDir()
	before := buildDerivedState(t, dir)
	if blocks, _ := countBlocks(t, dir, "c", bucketTurns); blocks == 0 {
		t.Fatal("setup: no block of turns")
	}
	same := func(rec []byte) ([]byte, error) { return bytes.Clone(rec), nil }
	turns := unblockRecords(t, dir, "c", bucketTurns, same)
	unblockRecords(t, dir, "c", bucketSegments, same)

	opts := Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Summarizer: &countingSummarizer{fail: true}, Tagger: &countingTagger{fail: true}, Splitter: &refusingSplitter{}}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	compareSnapshots(t, before, observe(t, s, "c"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// New turns and a compaction write blocks beside the old records.
	opts = Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2}
	s, err = Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var more []Message
	for i := 0; i < 80; i++ { // fills the second block of turns
		more = append(more, msg("user", "Ana", fmt.Sprintf("Kyoto note %d: the temple at %d am.", i, 6+i%5), t0.Add(time.Duration(2000+i)*time.Minute)))
	}
	for i := 0; i < len(more); i += 10 {
		ingest(t, s, "c", more[i:i+10])
	}
	want := observe(t, s, "c")
	st, err := s.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Turns != turns+len(more) {
		t.Fatalf("%d turns after adding %d to %d", st.Totals.Turns, len(more), turns)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if blocks, single := countBlocks(t, dir, "c", bucketTurns); blocks == 0 || single == 0 {
		t.Fatalf("setup: turns in %d blocks and %d one-record keys, want both", blocks, single)
	}
	s, err = Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	compareSnapshots(t, want, observe(t, s, "c"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Rebuild(context.Background(), opts, nil); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, opts)
	compareSnapshots(t, want, observe(t, s, "c"))
}

// TestRecordBlocks: putBlocked keeps records of a block not yet full one
// per key, packs a block when it is full (with one-record keys of earlier
// versions), rewrites records inside packed blocks, and forEachRecord gives
// every record back once, by id.
func TestRecordBlocks(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "b.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := map[int][]byte{}
	put := func(b *bolt.Bucket, ids ...int) error {
		recs := map[int][]byte{}
		for _, id := range ids {
			recs[id] = []byte(fmt.Sprintf("record %d, version %d", id, len(want[id])))
			want[id] = recs[id]
		}
		return putBlocked(b, 4, recs)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("r"))
		if err != nil {
			return err
		}
		// Records 9 and 2 as an earlier version stored them.
		for _, id := range []int{9, 2} {
			want[id] = []byte(fmt.Sprintf("old %d", id))
			if err := b.Put(seqKey(id), want[id]); err != nil {
				return err
			}
		}
		if err := put(b, 1, 3, 4); err != nil { // with the old 2, block 0 is full: packed
			return err
		}
		if err := put(b, 5, 6, 7, 8, 10); err != nil { // block 1 full; 10 waits beside the old 9
			return err
		}
		return put(b, 2, 6) // rewritten inside their blocks
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("r"))
		forms := map[string]byte{}
		if err := b.ForEach(func(k, v []byte) error {
			forms[fmt.Sprintf("%x", k)] = v[0]
			return nil
		}); err != nil {
			return err
		}
		wantForms := map[string]byte{
			fmt.Sprintf("%x", seqKey(9)):   'o',
			fmt.Sprintf("%x", seqKey(10)):  'r',
			fmt.Sprintf("%x", blockKey(0)): blockDeflate,
			fmt.Sprintf("%x", blockKey(1)): blockDeflate,
		}
		if !reflect.DeepEqual(forms, wantForms) {
			t.Errorf("keys and forms %v, want %v", forms, wantForms)
		}
		got := map[int][]byte{}
		last := 0
		if err := forEachRecord(b, func(id int, rec []byte) error {
			if id <= last {
				t.Errorf("record %d after %d", id, last)
			}
			last = id
			got[id] = bytes.Clone(rec)
			return nil
		}); err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("records %v, want %v", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{{}, {0x09}, {0x02, 1, 1, 'a'}, {blockDeflate, 1, 2, 3}} {
		if _, err := decodeBlock(bad); err == nil {
			t.Errorf("decodeBlock(%x): no error", bad)
		}
	}
}
