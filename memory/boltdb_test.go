package memory

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestADamagedPageIsAnErrorThatNamesTheRepair: a vc.db page overwritten on
// disk made bbolt panic in the middle of a call: the tool answered
// "internal error", a second call hung on the locks the first left held,
// and Close crashed. Now each call that reads the page answers a
// StorageError naming `vc-mcp rebuild`, the other conversations are
// served and written (scope "all" too, saying what it left out), Close
// returns, and the rebuild brings everything back.
func TestADamagedPageIsAnErrorThatNamesTheRepair(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	for i := 0; i < 300; i += 50 {
		if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "big", Messages: chat(50, t0.Add(time.Duration(i)*time.Hour))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "small", Messages: chat(4, t0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Overwrite the root page of big's turns with noise.
	path := filepath.Join(dir, dbFile)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var root int64
	if err := db.View(func(tx *bolt.Tx) error {
		root = int64(tx.Bucket(convBucketName("big")).Bucket(bucketTurns).Root())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pageSize := int64(db.Info().PageSize)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if root == 0 {
		t.Fatal("big's turns are inline: the test needs a page of their own")
	}
	noise := make([]byte, pageSize)
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(noise, root*pageSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// Every call gets an answer: a hang fails the test instead of the run.
	within := func(what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not answer within 30 s", what)
			return nil
		}
	}
	// Served read-only, the damage is copied with the file, and the answer
	// sends the repair to the directory's owner.
	ro, err := Open(ctx, Options{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open with a damaged page: %v", err)
	}
	if err := within("a read-only recall of big", func() error {
		_, err := ro.Recall(ctx, RecallRequest{ConversationID: "big", Message: "the Postgres migration"})
		return err
	}); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "read-only copy of it that it cannot repair: have the directory's owner stop vc-mcp and run `vc-mcp rebuild --data-dir "+dir) {
		t.Errorf("read-only recall of the damaged conversation: %v", err)
	}
	if err := within("a read-only recall of small", func() error {
		_, err := ro.Recall(ctx, RecallRequest{ConversationID: "small", Message: "the vet appointment"})
		return err
	}); err != nil {
		t.Errorf("read-only recall of an intact conversation: %v", err)
	}
	_ = within("Close read-only", ro.Close)

	s, err = Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatalf("open with a damaged page: %v", err)
	}
	for i := range 2 { // the second call must not wait for the first's locks
		err := within("a recall of big", func() error {
			_, err := s.Recall(ctx, RecallRequest{ConversationID: "big", Message: "the Postgres migration"})
			return err
		})
		if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "vc-mcp rebuild --data-dir "+dir) {
			t.Fatalf("recall %d of the damaged conversation: %v; want a StorageError naming the rebuild", i+1, err)
		}
	}
	if err := within("a status of big", func() error { _, err := s.Status(ctx, "big"); return err }); !errors.Is(err, ErrStorage) {
		t.Errorf("status of the damaged conversation: %v; want a StorageError", err)
	}
	// Scope "all" serves the intact conversation and says what it left out.
	var all RecallResult
	if err := within("a recall of all", func() (err error) {
		all, err = s.Recall(ctx, RecallRequest{Message: "the Postgres migration", Scope: ScopeAll})
		return err
	}); err != nil || !strings.Contains(all.Text, "migrate the Postgres database") || !strings.Contains(all.Text, "left out, as they could not be read: big; vc.db in "+dir+" is damaged") {
		t.Errorf("recall of all: %v\n%s", err, all.Text)
	}
	var quotes FindQuoteResult
	if err := within("a search of all", func() (err error) {
		quotes, err = s.FindQuote(ctx, FindQuoteRequest{Query: "migrate", Scope: ScopeAll})
		return err
	}); err != nil || len(quotes.Quotes) == 0 || !strings.Contains(quotes.Note, "could not be read: big") {
		t.Errorf("find_quote over all: %d quotes, note %q, %v", len(quotes.Quotes), quotes.Note, err)
	}
	if err := within("a recall of small", func() error {
		_, err := s.Recall(ctx, RecallRequest{ConversationID: "small", Message: "the vet appointment"})
		return err
	}); err != nil {
		t.Errorf("recall of an intact conversation: %v", err)
	}
	if err := within("an ingest into small", func() error {
		_, err := s.Ingest(ctx, IngestRequest{ConversationID: "small", Messages: []Message{msg("user", "", "one more thing about Rex", time.Time{})}})
		return err
	}); err != nil {
		t.Errorf("a write to an intact conversation: %v", err)
	}
	_ = within("Close", s.Close) // a failed compaction on close is only logged

	if err := Rebuild(ctx, Options{Dir: dir}, nil); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	s = openTest(t, Options{Dir: dir})
	for id, want := range map[string]int{"big": 300, "small": 5} {
		st, err := s.Status(ctx, id)
		if err != nil || st.Totals.Turns != want {
			t.Errorf("after the rebuild, %s: %d turns, %v; want %d", id, st.Totals.Turns, err, want)
		}
	}
}

// TestAnUnusableDBFileNamesTheRepair: a vc.db that bbolt cannot use at all
// made Open fail with bbolt's bare "invalid database", or, cut short below
// the pages its meta names, crashed the process (SIGBUS, which no recover
// catches); `vc-mcp rebuild`, the repair the messages name, failed or
// crashed the same way. Now Open answers a StorageError naming the
// rebuild, and Rebuild brings every turn back from the logs.
func TestAnUnusableDBFileNamesTheRepair(t *testing.T) {
	tests := []struct {
		name   string
		damage func(path string, data []byte) []byte
	}{
		{"not a bbolt file", func(_ string, data []byte) []byte {
			return []byte(strings.Repeat("not a bbolt file ", len(data)/17))
		}},
		{"cut short", func(_ string, data []byte) []byte { return data[:3*os.Getpagesize()] }},
		{"one page", func(_ string, data []byte) []byte { return data[:os.Getpagesize()] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := openTest(t, Options{Dir: dir})
			for i := 0; i < 300; i += 50 {
				ingest(t, s, "c", chat(50, t0.Add(time.Duration(i)*time.Hour)))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, dbFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) <= 3*os.Getpagesize() {
				t.Fatalf("vc.db is %d bytes: too small to cut", len(data))
			}
			if err := os.WriteFile(path, tt.damage(path, data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Open(ctx, Options{Dir: dir})
			if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "vc-mcp rebuild --data-dir "+dir) {
				t.Fatalf("Open: %v; want a StorageError naming the rebuild", err)
			}
			if err := Rebuild(ctx, Options{Dir: dir}, nil); err != nil {
				t.Fatalf("Rebuild: %v", err)
			}
			s = openTest(t, Options{Dir: dir})
			st, err := s.Status(ctx, "c")
			if err != nil || st.Totals.Turns != 300 {
				t.Fatalf("after the rebuild: %+v, %v; want 300 turns", st.Totals, err)
			}
		})
	}
}

// TestAnUndecodableRecordIsADamagedDB: a page overwritten on disk that
// bbolt reads without noticing (its structure intact, a value garbled)
// made the conversation's load fail with a decode error, which every
// tool answered as "internal error". It is vc.db damage like any other:
// the answer names `vc-mcp rebuild`, the other conversations are served,
// scope "all" answers from them, and the rebuild brings everything back.
func TestAnUndecodableRecordIsADamagedDB(t *testing.T) {
	for _, where := range []string{"turn", "header"} {
		t.Run(where, func(t *testing.T) { testUndecodableRecord(t, where) })
	}
}

// testUndecodableRecord garbles one of big's records in vc.db: a turn's,
// or its header (which a start reads to find what to recover).
func testUndecodableRecord(t *testing.T, where string) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "big", chat(50, t0))
	ingest(t, s, "small", chat(4, t0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if where == "header" {
			return tx.Bucket(bucketConvs).Put([]byte("big"), []byte("\x00garbled"))
		}
		return tx.Bucket(convBucketName("big")).Bucket(bucketTurns).Put(seqKey(7), []byte("\xbf\x00garbled"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTest(t, Options{Dir: dir})
	if _, err := s.Status(ctx, "big"); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "vc-mcp rebuild --data-dir "+dir) {
		t.Fatalf("status of the conversation with a garbled record: %v; want a StorageError naming the rebuild", err)
	}
	if _, err := s.Status(ctx, "small"); err != nil {
		t.Errorf("status of an intact conversation: %v", err)
	}
	list, err := s.Conversations(ctx)
	if err != nil || len(list) != 2 || !strings.Contains(list[0].Damaged, "vc-mcp rebuild") || list[1].Damaged != "" || list[1].Turns != 4 {
		t.Errorf("conversations: %+v, %v; want big listed as damaged (naming the rebuild) and small as it is", list, err)
	}
	res, err := s.Recall(ctx, RecallRequest{Scope: ScopeAll, Message: "the vet appointment"})
	if err != nil || !strings.Contains(res.Text, "big") {
		t.Errorf("scope all with one conversation unreadable: %v\n%s\nwant an answer that names what it left out", err, res.Text)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Rebuild(ctx, Options{Dir: dir}, nil); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	if got := readable(t, s, "big"); len(got) != 50 {
		t.Errorf("after the rebuild %d readable turns of big, want 50", len(got))
	}
}
