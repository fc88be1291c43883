package memory

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// dbSizes returns vc.db's size on disk and its high-water mark (bbolt's
// pages in use or free).
func dbSizes(t *testing.T, dir string) (file, hwm int64) {
	t.Helper()
	path := filepath.Join(dir, dbFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error { hwm = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	return fi.Size(), hwm
}

// TestCloseTrimsDB: Close leaves vc.db no larger than its pages, and a
// trimmed file opens, grows and answers as before.
func TestCloseTrimsDB(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows cannot truncate a mapped file; vcdb's Trim does nothing there")
	}
	dir := t.TempDir()
	opts := Options{Dir: dir}
	msgs := chat(2600, t0)
	var want int
	for round, part := range [][]Message{msgs[:2200], msgs[2200:]} {
		s, err := Open(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(part); i += 200 {
			ingest(t, s, "c", part[i:min(i+200, len(part))])
		}
		want += len(part)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		file, hwm := dbSizes(t, dir)
		if file < 128<<10 {
			t.Fatalf("round %d: setup: vc.db is only %d bytes", round, file)
		}
		if file != hwm {
			t.Errorf("round %d: vc.db is %d bytes after Close, its pages end at %d", round, file, hwm)
		}
	}
	s := openTest(t, opts)
	st, err := s.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Turns != want {
		t.Fatalf("after reopening a trimmed vc.db: %d turns, want %d", st.Totals.Turns, want)
	}
	res, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "Kyoto ryokan nights", MaxTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text == "" {
		t.Error("recall over a trimmed vc.db found nothing")
	}
}
