package pgstore_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/pgstore"
)

// stuckSummarizer announces the first summary it is asked for, then never
// answers: the process is killed in the middle of a compaction.
type stuckSummarizer struct{}

func (stuckSummarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	fmt.Println("COMPACTING")
	select {}
}

func batch(from, n int) []memory.Message {
	var ms []memory.Message
	for i := from; i < from+n; i++ {
		ms = append(ms, memory.Message{Role: []string{"user", "assistant"}[i%2], Content: text(fmt.Sprintf(
			"Turn %d: the staging cluster needs its certificates rotated before the audit, and the runbook for rotation lives in the ops wiki under security.", i))})
	}
	return ms
}

// TestKillMidCompaction is run again as a child by TestKill9MidCompaction.
func TestKillMidCompaction(t *testing.T) {
	url := os.Getenv("VC_PG_KILL_CHILD")
	if url == "" || os.Getenv("VC_PG_KILL_DIR") == "" {
		t.Skip("run by TestKill9MidCompaction as its child process")
	}
	ctx := context.Background()
	logs, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	// The parent's temporary directory: a killed child never removes its own.
	s, err := memory.Open(ctx, memory.Options{Dir: os.Getenv("VC_PG_KILL_DIR"), Shared: logs, ContextWindow: 100000, ProtectedTurns: 2, Summarizer: stuckSummarizer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(ctx, memory.IngestRequest{ConversationID: "k", Messages: batch(0, 20)}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("STORED")
	_, err = s.Ingest(ctx, memory.IngestRequest{ConversationID: "k", Messages: batch(20, 1), Force: true})
	t.Fatalf("the compaction returned: %v", err)
}

// TestKill9MidCompaction: a process killed with SIGKILL while it compacts
// (it holds the conversation's lock, its new turn and tags are in its cache)
// leaves nothing of that call in PostgreSQL; another process then compacts
// the same turns once.
func TestKill9MidCompaction(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillMidCompaction$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VC_PG_KILL_CHILD="+url, "VC_PG_KILL_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	seen := ""
	deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	for lines.Scan() {
		seen += lines.Text() + "\n"
		if lines.Text() == "COMPACTING" {
			break
		}
	}
	deadline.Stop()
	if !strings.Contains(seen, "STORED\n") || !strings.Contains(seen, "COMPACTING") {
		_ = cmd.Process.Kill()
		t.Fatalf("the child did not reach its compaction:\n%s", seen)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var turns, compactions int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM vc_master_log WHERE conversation = 'k'`).Scan(&turns); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM vc_decisions WHERE conversation = 'k' AND convert_from(line, 'UTF8') LIKE '%"kind":"compact"%'`).Scan(&compactions); err != nil {
		t.Fatal(err)
	}
	if turns != 20 || compactions != 0 {
		t.Fatalf("after kill -9: %d turns and %d compactions in PostgreSQL, want the first call's 20 and none", turns, compactions)
	}

	// The lock died with the connection: another process goes on.
	s := open(t, url, t.TempDir(), 100000)
	defer s.Close()
	lockCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.Ingest(lockCtx, memory.IngestRequest{ConversationID: "k", Messages: batch(20, 1), Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != 1 || !res.Compacted || res.TotalTurns != 21 {
		t.Fatalf("after the kill, another process: %+v", res)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM vc_decisions WHERE conversation = 'k' AND convert_from(line, 'UTF8') LIKE '%"kind":"compact"%'`).Scan(&compactions); err != nil {
		t.Fatal(err)
	}
	if compactions != 1 {
		t.Fatalf("%d compactions recorded, want 1", compactions)
	}
}
