package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/pgstore"
)

// flakyLogs fails the next commit when failNext is set (rolling back), as a
// connection lost at commit time would.
type flakyLogs struct {
	*pgstore.Store
	failNext atomic.Bool
}

func (f *flakyLogs) Lock(ctx context.Context, conv string) (memory.SharedSession, error) {
	s, err := f.Store.Lock(ctx, conv)
	if err != nil {
		return nil, err
	}
	return &flakySession{SharedSession: s, f: f}, nil
}

type flakySession struct {
	memory.SharedSession
	f *flakyLogs
}

func (s *flakySession) Commit(ctx context.Context) error {
	if s.f.failNext.CompareAndSwap(true, false) {
		_ = s.SharedSession.Rollback(ctx)
		return errors.New("connection lost at commit (injected)")
	}
	return s.SharedSession.Commit(ctx)
}

func openFlaky(t *testing.T, url, dir string) (*memory.Store, *flakyLogs) {
	t.Helper()
	pg, err := pgstore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	f := &flakyLogs{Store: pg}
	return openOn(t, f, memory.Options{Dir: dir}), f
}

// TestFailedCommitIsSentWithTheNextWrite: a call whose commit failed is
// reported as failed; its lines, still in the cache, go with the next write
// when nobody wrote meanwhile, so every process ends up with both turns.
func TestFailedCommitIsSentWithTheNextWrite(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	a, f := openFlaky(t, url, t.TempDir())
	defer a.Close()
	f.failNext.Store(true)
	_, err := a.Ingest(ctx, memory.IngestRequest{ConversationID: "c", Messages: []memory.Message{{Role: "user", Content: text("first, whose commit fails")}}})
	if err == nil || !errors.Is(err, memory.ErrStorage) || !strings.Contains(err.Error(), "not shared") {
		t.Fatalf("ingest with a failed commit: %v", err)
	}
	ingest(t, a, "c", "second")
	b := open(t, url, t.TempDir(), 0)
	defer b.Close()
	st, err := b.Status(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Turns != 2 {
		t.Fatalf("another process sees %d turns, want 2", st.Totals.Turns)
	}
}

// TestDivergedCacheAsksForRestartAndIsRebuilt: when another process wrote
// after a failed commit, the cache no longer extends the shared logs: the
// write is refused with what to do, and the next Open rebuilds the cache
// from PostgreSQL (the failed call's turn, never acknowledged, is gone).
func TestDivergedCacheAsksForRestartAndIsRebuilt(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	dir := t.TempDir()
	a, f := openFlaky(t, url, dir)
	ingest(t, a, "c", "shared by A")
	f.failNext.Store(true)
	if _, err := a.Ingest(ctx, memory.IngestRequest{ConversationID: "c", Messages: []memory.Message{{Role: "user", Content: text("A's failed call")}}}); err == nil {
		t.Fatal("the failed commit was not reported")
	}
	b := open(t, url, t.TempDir(), 0)
	ingest(t, b, "c", "B writes meanwhile")
	b.Close()
	_, err := a.Ingest(ctx, memory.IngestRequest{ConversationID: "c", Messages: []memory.Message{{Role: "user", Content: text("A again")}}})
	if err == nil || !strings.Contains(err.Error(), "restart vc-mcp") {
		t.Fatalf("A's write after divergence: %v, want a storage error asking for a restart", err)
	}
	a.Close()
	pg, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	got, err := pg.Read(ctx, "c", memory.LogHeads{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Master) != 2 || len(got.Decisions) != 2 {
		t.Fatalf("PostgreSQL holds %d master and %d decisions lines, want A's first call's and B's: 2 and 2", len(got.Master), len(got.Decisions))
	}

	a2 := open(t, url, dir, 0)
	defer a2.Close()
	q, err := a2.FindQuote(ctx, memory.FindQuoteRequest{ConversationID: "c", Query: "failed call"})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := a2.Status(ctx, "c")
	if st.Totals.Turns != 2 || len(q.Quotes) != 0 {
		t.Fatalf("after restart: %d turns, %d quotes of the failed call; want the shared 2 and none", st.Totals.Turns, len(q.Quotes))
	}
	if r := ingest(t, a2, "c", "A after restart"); r.TurnIDs[0] != "t3" {
		t.Fatalf("next turn %v, want t3", r.TurnIDs)
	}
}
