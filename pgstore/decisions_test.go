package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/scrub"
	"github.com/vc-mcp/vc-mcp/pgstore"
)

// TestDecisionOnlyCallsAreShared: calls that write only a decision (an
// alias, a working-set change) reach the shared logs before they report
// success, so another process sees them at once, and neither process's
// cache holds a line the shared logs lack when the other writes next.
func TestDecisionOnlyCallsAreShared(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	a := open(t, url, t.TempDir(), 0)
	defer a.Close()
	b := open(t, url, t.TempDir(), 0)
	defer b.Close()
	ingest(t, a, "c", "The greenhouse drip irrigation timer needs a new valve before spring.", "Noted: order the valve for the greenhouse drip irrigation.")
	st, err := a.Status(ctx, "c")
	if err != nil || len(st.Tags) == 0 {
		t.Fatalf("setup: %+v, %v", st, err)
	}
	tag := st.Tags[0].Tag
	if _, err := a.AddAlias(ctx, "c", "hothouse", tag); err != nil {
		t.Fatalf("add alias: %v", err)
	}
	got, err := b.Aliases(ctx, "c")
	if err != nil || got["hothouse"] != tag {
		t.Fatalf("the other process's aliases: %v, %v; want hothouse -> %s", got, err, tag)
	}
	if _, err := a.Expand(ctx, memory.ExpandRequest{ConversationID: "c", Tag: tag, Depth: memory.DepthFull}); err != nil {
		t.Fatalf("expand: %v", err)
	}
	ingest(t, b, "c", "The other process writes meanwhile, about the catamaran jib sail.")
	for name, s := range map[string]*memory.Store{"A": a, "B": b} {
		if _, err := s.Recall(ctx, memory.RecallRequest{ConversationID: "c", Message: "greenhouse valve"}); err != nil {
			t.Fatalf("%s: recall after both wrote: %v", name, err)
		}
		ingest(t, s, "c", name+" writes again, about the sourdough rye starter.")
	}
	st, err = b.Status(ctx, "c")
	if err != nil || st.Totals.Turns != 5 {
		t.Fatalf("turns after both wrote: %+v, %v; want 5", st.Totals, err)
	}
}

// TestScanRedactManyConversations: scan --redact over more conversations
// than the pool has connections finishes, and releases each conversation
// to the other processes as it goes.
func TestScanRedactManyConversations(t *testing.T) {
	url := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logs, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	a, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), Shared: logs, Scrubber: scrub.Off()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const n = 20 // the pool keeps 16 connections
	key := "sk-proj-" + strings.Repeat("Qz4wT8", 8)
	for i := range n {
		ingest(t, a, fmt.Sprintf("c%02d", i), "The billing export uses "+key+" as its key.")
	}
	b := open(t, url, t.TempDir(), 0)
	defer b.Close()
	res, err := b.Scan(ctx, memory.ScanRequest{AllConversations: true, Redact: true})
	if err != nil || res.TurnsRedacted != n {
		t.Fatalf("scan --redact over %d conversations: %+v, %v", n, res, err)
	}
	if k := rowsContaining(t, url, key); k != 0 {
		t.Errorf("%d rows still hold the secret", k)
	}
}

// TestBundleImportRefusedOnSharedStore: a bundle cannot be imported into a
// team memory directly (its files would never reach PostgreSQL); the error
// says what to do instead.
func TestBundleImportRefusedOnSharedStore(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	a := open(t, url, t.TempDir(), 0)
	defer a.Close()
	_, err := a.ImportBundle(ctx, &memory.Bundle{}, memory.BundleImportOptions{}, nil)
	if !errors.Is(err, memory.ErrInvalid) || !strings.Contains(err.Error(), "vc-mcp migrate") {
		t.Fatalf("import into a shared store: %v, want an invalid-request error naming vc-mcp migrate", err)
	}
}
