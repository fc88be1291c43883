package pgstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

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
	a := openOn(t, logs, memory.Options{Dir: dirA})
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

// TestSharedLogsGoingBackAskForARestart: the shared logs of a conversation
// go back to an earlier generation (PostgreSQL restored from a backup taken
// before a forget) while a process holds a cache of the later one. Its next
// write is refused with what to do, nothing is sent, and after a restart
// the cache is rebuilt from the shared logs and writes go on.
func TestSharedLogsGoingBackAskForARestart(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	dir := t.TempDir()
	a := open(t, url, dir, 0)
	ingest(t, a, "c", "before the backup")
	pg, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	backup, err := pg.Read(ctx, "c", memory.LogHeads{})
	if err != nil {
		t.Fatal(err)
	}
	ingest(t, a, "c", "a note about zebranote1, to forget")
	if res, err := a.Forget(ctx, memory.ForgetRequest{ConversationID: "c", Query: "zebranote1"}); err != nil || res.Forgotten != 1 {
		t.Fatalf("forget: %+v, %v", res, err)
	}
	// The restore: the conversation's rows as they were, generation 0.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{`DELETE FROM vc_master_log WHERE conversation = 'c'`, `DELETE FROM vc_decisions WHERE conversation = 'c'`,
		`UPDATE vc_conversations SET generation = 0, master_bytes = 0, master_lines = 0, decisions_bytes = 0, decisions_lines = 0 WHERE id = 'c'`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := pg.Lock(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Append(ctx, memory.LogLines{Master: backup.Master, Decisions: backup.Decisions}); err != nil {
		t.Fatal(err)
	}
	if err := sess.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	_, err = a.Ingest(ctx, memory.IngestRequest{ConversationID: "c", Messages: []memory.Message{{Role: "user", Content: text("after the restore")}}})
	if err == nil || !strings.Contains(err.Error(), "restart vc-mcp") {
		t.Fatalf("a write on a cache newer than the shared logs: %v, want an error asking for a restart", err)
	}
	if h, err := pg.Heads(ctx, "c"); err != nil || h.Gen != 0 || h.Master != size(backup.Master) {
		t.Fatalf("the shared logs after the refused write: %+v, %v; want the backup's", h, err)
	}
	a.Close()
	a2 := open(t, url, dir, 0)
	defer a2.Close()
	if r := ingest(t, a2, "c", "after the restart"); r.TurnIDs[0] != "t2" {
		t.Fatalf("after the restart the next turn is %v, want t2 (the backup holds one)", r.TurnIDs)
	}
}

func size(lines [][]byte) int64 {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	return int64(n)
}
