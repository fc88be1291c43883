package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
	"github.com/vc-mcp/vc-mcp/share"
)

// TestPostgresEveryTool: every tool, resource and prompt over stdio, with the
// memory in PostgreSQL (through the shared daemon, as hosts run it).
func TestPostgresEveryTool(t *testing.T) {
	url := pgtest.URL(t)
	s := startStdio(t, t.TempDir(), "--store", url)
	exerciseAll(t, s.c)
}

// TestPostgresHTTPEveryTool: the same over Streamable HTTP (`serve --http
// --store`), the main end-to-end test's PostgreSQL variant.
func TestPostgresHTTPEveryTool(t *testing.T) {
	base, _ := startHTTP(t, t.TempDir(), "--store", pgtest.URL(t))
	c, err := client.NewStreamableHttpClient(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	exerciseAll(t, c)
}

// TestPostgresTwoMachines: two vc-mcp servers with their own data
// directories (two machines) on one database: what one stores and compacts,
// the other recalls and quotes, and a resend through the other is a resend.
func TestPostgresTwoMachines(t *testing.T) {
	url := pgtest.URL(t)
	a := startStdio(t, t.TempDir(), "--store", url)
	b := startStdio(t, t.TempDir(), "--store", url)
	conv := "team"
	res := mustOK(t, a.c, "compact_context", map[string]any{"conversation_id": conv, "messages": topicalBatch(), "force": true})
	var ing struct {
		Stored    int  `json:"stored"`
		Compacted bool `json:"compacted"`
	}
	structured(t, res, &ing)
	if ing.Stored != len(topicalBatch()) || !ing.Compacted {
		t.Fatalf("compact_context on A: %+v, want %d stored and a compaction", ing, len(topicalBatch()))
	}
	res = mustOK(t, b.c, "find_quote", map[string]any{"conversation_id": conv, "query": "drip irrigation greenhouse"})
	if got := text(res); !strings.Contains(got, "irrigation") {
		t.Fatalf("find_quote on B: %q", got)
	}
	res = mustOK(t, b.c, "recall_context", map[string]any{"conversation_id": conv, "message": "what about the catamaran jib sail?", "max_tokens": 800})
	recallB := text(res)
	if !strings.Contains(recallB, "jib") {
		t.Fatalf("recall_context on B: %q", recallB)
	}
	res = mustOK(t, a.c, "recall_context", map[string]any{"conversation_id": conv, "message": "what about the catamaran jib sail?", "max_tokens": 800})
	if recallA := text(res); recallA != recallB {
		t.Fatalf("A and B recall differently:\nA: %s\nB: %s", recallA, recallB)
	}
	// B adds; its turn numbers follow A's, and A's resend of the batch is one.
	res = mustOK(t, b.c, "compact_context", map[string]any{"conversation_id": conv, "messages": []any{msg("user", "The sourdough needs 20% rye this time.")}})
	var one struct {
		TurnIDs []string `json:"turn_ids"`
	}
	structured(t, res, &one)
	if len(one.TurnIDs) != 1 || one.TurnIDs[0] != "t301" {
		t.Fatalf("B's new turn: %+v, want t301", one)
	}
	res = mustOK(t, a.c, "domain_status", map[string]any{"conversation_id": conv})
	var st struct {
		Totals struct {
			Turns    int `json:"turns"`
			Segments int `json:"segments"`
		} `json:"totals"`
	}
	structured(t, res, &st)
	if st.Totals.Turns != 301 || st.Totals.Segments == 0 {
		t.Fatalf("domain_status on A: %+v, want 301 turns and segments", st.Totals)
	}
}

// TestMigrateCommand: a local memory moved with `vc-mcp migrate` recalls the
// same on PostgreSQL.
func TestMigrateCommand(t *testing.T) {
	url := pgtest.URL(t)
	local := t.TempDir()
	s := startStdio(t, local)
	mustOK(t, s.c, "compact_context", map[string]any{"conversation_id": "proj", "messages": topicalBatch(), "force": true})
	want := text(mustOK(t, s.c, "recall_context", map[string]any{"conversation_id": "proj", "message": "kubernetes ingress certificates", "max_tokens": 600}))
	s.c.Close()
	quiesceNow(t, local)

	out, err := exec.Command(binary, "migrate", "--from", local, "--to", url).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "migrated 1 conversations") {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "migrate", "--from", local, "--to", url).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "migrated 0 conversations") || !strings.Contains(string(out), "1 already there") {
		t.Fatalf("migrate again: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "migrate", "--from", local, "--to", "mysql://x").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "postgres://") {
		t.Fatalf("migrate to a bad URL: %v\n%s", err, out)
	}

	p := startStdio(t, t.TempDir(), "--store", url)
	// A fresh cache indexes in the background: wait for it like a client would.
	var got string
	for i := 0; i < 100; i++ {
		got = text(mustOK(t, p.c, "recall_context", map[string]any{"conversation_id": "proj", "message": "kubernetes ingress certificates", "max_tokens": 600}))
		if !strings.Contains(got, "catching up") {
			break
		}
		sleepBriefly()
	}
	if got != want {
		t.Fatalf("recall differs after migrate:\nlocal: %s\npostgres: %s", want, got)
	}
}

// quiesceNow stops the shared daemon of dir and waits until no process
// holds it.
func quiesceNow(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, err := share.Stop(context.Background(), dir, "")
		if errors.Is(err, share.ErrNoOwner) && !holderAlive(dir) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("a vc-mcp process still holds %s", dir)
}

func sleepBriefly() { time.Sleep(100 * time.Millisecond) }
