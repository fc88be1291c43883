package pgstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/pgstore"
)

// pausingLogs holds the next whole-log read (what a reader adopting
// another process's rewrite asks for) once its snapshot is taken, until
// released.
type pausingLogs struct {
	*pgstore.Store
	mu      sync.Mutex
	armed   bool
	taken   chan memory.LogLines
	release chan struct{}
}

func (p *pausingLogs) Read(ctx context.Context, conv string, from memory.LogHeads) (memory.LogLines, error) {
	lines, err := p.Store.Read(ctx, conv, from)
	p.mu.Lock()
	pause := p.armed && from == (memory.LogHeads{}) && err == nil
	if pause {
		p.armed = false
	}
	p.mu.Unlock()
	if pause {
		p.taken <- lines
		<-p.release
	}
	return lines, err
}

// TestAnOldSnapshotNeverRollsTheCacheBack: a reader of process A takes the
// shared logs of a conversation B rewrote (generation 1) to adopt them, and
// is held there. Meanwhile B rewrites again (generation 2) and a writer of
// A adopts that and stores a message. When the reader goes on, its
// snapshot is older than A's cache: the cache must keep generation 2 and
// the acknowledged message. Before the fix the reader put generation 1 in
// place; a forget of A that had caught up already then replaced the shared
// logs with that cache, and the message was gone from every process (the
// rare loss TestConcurrentIngestAndRecall found).
func TestAnOldSnapshotNeverRollsTheCacheBack(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	pg, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	logs := &pausingLogs{Store: pg, taken: make(chan memory.LogLines), release: make(chan struct{})}
	dirA := t.TempDir()
	a, err := memory.Open(ctx, memory.Options{Dir: dirA, Shared: logs})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := open(t, url, t.TempDir(), 0)
	defer b.Close()
	forget := func(s *memory.Store, word string) {
		t.Helper()
		ingest(t, s, "c", "a note about "+word+", to forget")
		res, err := s.Forget(ctx, memory.ForgetRequest{ConversationID: "c", Query: word})
		if err != nil || res.Forgotten != 1 {
			t.Fatalf("forget %s: %+v, %v", word, res, err)
		}
	}

	ingest(t, a, "c", "the first message, kept")
	forget(b, "zebranote1") // generation 1
	logs.mu.Lock()
	logs.armed = true
	logs.mu.Unlock()
	read := make(chan error, 1)
	go func() {
		_, err := a.Status(ctx, "c") // adopts generation 1: held after its snapshot
		read <- err
	}()
	old := <-logs.taken
	if old.Gen != 1 {
		t.Fatalf("the held snapshot is of generation %d, want 1", old.Gen)
	}
	forget(b, "zebranote2") // generation 2
	const acked = "acknowledged while a reader held an old snapshot"
	ingest(t, a, "c", acked) // A's writer adopts generation 2, then appends
	close(logs.release)
	if err := <-read; err != nil {
		t.Fatal(err)
	}

	cache, err := os.ReadFile(filepath.Join(dirA, "logs", "c.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := os.ReadFile(filepath.Join(dirA, "logs", "c.gen"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cache), acked) || strings.TrimSpace(string(gen)) != "2" {
		t.Fatalf("A's cache is of generation %s and holds the acknowledged message: %v; want generation 2 with it", strings.TrimSpace(string(gen)), strings.Contains(string(cache), acked))
	}
	// And what A forgets next leaves it in the shared logs.
	forget(a, "zebranote3")
	got, err := pg.Read(ctx, "c", memory.LogHeads{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range got.Master {
		if strings.Contains(string(l), acked) {
			n++
		}
	}
	if n != 1 || got.Gen != 3 {
		t.Fatalf("the shared logs (generation %d) hold the acknowledged message %d times, want generation 3 and once", got.Gen, n)
	}
}
