package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/index"
)

// flakyIndex fails Add while fails is positive.
type flakyIndex struct {
	textIndex
	fails atomic.Int64
}

func (f *flakyIndex) Add(ctx context.Context, docs []index.Doc) error {
	if f.fails.Load() > 0 {
		f.fails.Add(-1)
		return errors.New("injected index failure")
	}
	return f.textIndex.Add(ctx, docs)
}

func waitIndexed(t *testing.T, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitIndexed(ctx); err != nil {
		t.Fatalf("WaitIndexed: %v", err)
	}
}

// quoteAll checks that every turn i+1 of msgs is found exactly once.
func quoteAll(t *testing.T, s *Store, conv string, n int) {
	t.Helper()
	for seq := 1; seq <= n; seq++ {
		want := turnID(seq)
		fq, err := s.FindQuote(context.Background(), FindQuoteRequest{ConversationID: conv, Query: "marker" + want, MaxResults: 5})
		if err != nil {
			t.Fatal(err)
		}
		if fq.CatchingUp || fq.Note != "" {
			t.Fatalf("caught up, but find_quote says %q", fq.Note)
		}
		if len(fq.Quotes) != 1 || fq.Quotes[0].TurnID != want {
			t.Fatalf("find_quote marker%s: %+v, want exactly turn %s", want, fq.Quotes, want)
		}
	}
}

func markedChat(n int) []Message {
	msgs := make([]Message, n)
	for i := range msgs {
		msgs[i] = msg("user", "Ana", "note number "+turnID(i+1)+" says marker"+turnID(i+1)+" about the garden", t0.Add(time.Duration(i)*time.Minute))
	}
	return msgs
}

func TestFailedIndexWriteIsRetried(t *testing.T) {
	hold := make(chan struct{})
	s := openTest(t, Options{holdReconciler: hold})
	flaky := &flakyIndex{textIndex: s.ix}
	s.ix = flaky // before the reconciler first reads it
	flaky.fails.Store(1 << 30)
	close(hold)
	res, err := s.Ingest(context.Background(), IngestRequest{ConversationID: "c", Messages: markedChat(12)})
	if err != nil {
		t.Fatalf("Ingest with a failing index: %v (the turns are stored; the error makes the client retry)", err)
	}
	if res.Stored != 12 || res.Duplicates != 0 {
		t.Fatalf("stored %d, duplicates %d; want 12, 0", res.Stored, res.Duplicates)
	}
	fq, err := s.FindQuote(context.Background(), FindQuoteRequest{ConversationID: "c", Query: "markert3"})
	if err != nil {
		t.Fatal(err)
	}
	if !fq.CatchingUp || !strings.Contains(fq.Note, "catching up") {
		t.Fatalf("find_quote over unindexed turns does not say it is catching up: %+v", fq)
	}
	rc, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "garden notes"})
	if err != nil {
		t.Fatal(err)
	}
	if !rc.CatchingUp || !strings.Contains(rc.Text, "catching up") {
		t.Fatalf("recall over unindexed turns does not say it is catching up:\n%s", rc.Text)
	}
	flaky.fails.Store(0)
	waitIndexed(t, s)
	quoteAll(t, s, "c", 12)
	// Later writes are not failed by the earlier one.
	more := markedChat(14)[12:]
	if res := ingest(t, s, "c", more); res.Stored != 2 || res.Duplicates != 0 {
		t.Fatalf("later ingest: %+v", res)
	}
	quoteAll(t, s, "c", 14)
}

func TestDeletedIndexRebuiltInBackground(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir, ContextWindow: 800, ProtectedTurns: 2})
	ingest(t, s, "c", markedChat(60))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, indexDir)); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { syncIndexTurns = n }(syncIndexTurns)
	syncIndexTurns = 10 // so that this small conversation takes the large-gap path
	hold := make(chan struct{})
	s = openTest(t, Options{Dir: dir, ContextWindow: 800, ProtectedTurns: 2, holdReconciler: hold})
	// Open returned without indexing anything: reads say so.
	fq, err := s.FindQuote(context.Background(), FindQuoteRequest{ConversationID: "c", Query: "markert7"})
	if err != nil {
		t.Fatal(err)
	}
	if !fq.CatchingUp || len(fq.Quotes) != 0 {
		t.Fatalf("before catching up: catching_up %v, %d quotes; want true, 0", fq.CatchingUp, len(fq.Quotes))
	}
	close(hold)
	waitIndexed(t, s)
	quoteAll(t, s, "c", 60)
	// Summaries stay out of the index: nothing searches them.
	st, err := s.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Segments == 0 {
		t.Fatal("setup: nothing was compacted")
	}
	hits, err := s.ix.Search(context.Background(), index.Query{Text: "garden", Conversations: []string{"c"}, Kinds: []string{"segment"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Fatalf("%d segment summaries in the rebuilt index, want none", len(hits))
	}
}

// lostIndex reports documents a failed background write dropped.
type lostIndex struct {
	textIndex
	mu   sync.Mutex
	lost []string
}

func (l *lostIndex) TakeLost() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lost
	l.lost = nil
	return out
}

func TestLostDocumentsAreAddedAgain(t *testing.T) {
	hold := make(chan struct{})
	s := openTest(t, Options{ContextWindow: 800, ProtectedTurns: 2, holdReconciler: hold})
	ingest(t, s, "c", markedChat(30))
	real := s.ix
	// The index drops turn 5 and the summaries as a failed flush would.
	ids := []string{turnDocID("c", 5), segmentDocID("c", 1)}
	if err := real.Delete(context.Background(), ids); err != nil {
		t.Fatal(err)
	}
	s.ix = &lostIndex{textIndex: real, lost: ids} // before the reconciler first reads it
	close(hold)
	waitIndexed(t, s)
	quoteAll(t, s, "c", 30)
	c, _ := s.conversation(context.Background(), "c", false)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.meta.IndexedThrough != 30 || c.meta.SummariesIndexed != c.meta.SummaryGen {
		t.Fatalf("watermarks %d/%d summaries %d/%d", c.meta.IndexedThrough, 30, c.meta.SummariesIndexed, c.meta.SummaryGen)
	}
}

func TestSplitKeepsIndexWatermark(t *testing.T) {
	s := openTest(t, Options{Splitter: &citySplitter{}})
	var msgs []Message
	for i := 0; i < 60; i++ {
		city := []string{"Kyoto", "Osaka", "Nara"}[i%3]
		msgs = append(msgs, msg("user", "Ana", "Japan itinerary: day "+itoa(i+1)+" in "+city+".", t0.Add(time.Duration(i)*time.Minute)))
	}
	ingest(t, s, "c", msgs)
	c, _ := s.conversation(context.Background(), "c", false)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.meta.SplitChecked) == 0 {
		t.Fatal("setup: no split")
	}
	if c.meta.IndexedThrough != 60 {
		t.Fatalf("IndexedThrough %d after a split, want 60", c.meta.IndexedThrough)
	}
}
