package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/scrub"
)

// TestDecisionOnlyCallsAreShared: calls that write only a decision (an
// alias, a working-set change) reach the shared logs before they report
// success, so another process sees them at once, and neither process's
// cache holds a line the shared logs lack when the other writes next.
func TestDecisionOnlyCallsAreShared(t *testing.T) {
	ctx := context.Background()
	a, b := twoProcesses(t)
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
	a, _ := openWith(t, url, memory.Options{Dir: t.TempDir(), Scrubber: scrub.Off()})
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

// TestEveryCallLeavesTheCacheAPrefix: after each call that reports
// success, the process's cache files hold exactly the shared logs: a call
// that wrote a line it did not share would make the cache diverge at the
// next write of another process.
func TestEveryCallLeavesTheCacheAPrefix(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	dir := t.TempDir()
	a, logs := openWith(t, url, memory.Options{Dir: dir, ContextWindow: 400, ProtectedTurns: 2,
		ContextItems: []memory.ContextItem{{Type: "rule", Name: "style", Text: "Answer in short sentences.", Include: memory.IncludeManual}}})
	defer a.Close()
	check := func(call string) {
		t.Helper()
		got, err := logs.Read(ctx, "c", memory.LogHeads{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			path  string
			lines [][]byte
		}{{filepath.Join(dir, "logs", "c.jsonl"), got.Master}, {filepath.Join(dir, "decisions", "c.log"), got.Decisions}} {
			cache, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatalf("after %s: %v", call, err)
			}
			if shared := bytes.Join(f.lines, nil); !bytes.Equal(cache, shared) {
				t.Fatalf("after %s: %s holds %d bytes, the shared log %d: the cache is not the shared logs", call, filepath.Base(f.path), len(cache), len(shared))
			}
		}
	}
	long := strings.Repeat("We compared the greenhouse drip irrigation timers, measured the flow at each valve, and wrote down which beds dried out first. ", 5)
	for i, m := range chatAbout(24) {
		if i%6 == 0 {
			m += " " + long
		}
		ingest(t, a, "c", m)
	}
	check("ingest")
	st, err := a.Status(ctx, "c")
	if err != nil || len(st.Tags) == 0 || st.Totals.Segments == 0 {
		t.Fatalf("setup: %+v, %v; want tags and a compaction", st.Totals, err)
	}
	tag := st.Tags[0].Tag
	steps := []struct {
		name string
		call func() error
	}{
		{"add_alias", func() error { _, err := a.AddAlias(ctx, "c", "hothouse", tag); return err }},
		{"expand_topic", func() error {
			_, err := a.Expand(ctx, memory.ExpandRequest{ConversationID: "c", Tag: tag, Depth: memory.DepthFull})
			return err
		}},
		{"collapse_topic", func() error {
			_, err := a.Collapse(ctx, memory.CollapseRequest{ConversationID: "c", Tag: tag, Depth: memory.DepthNone})
			return err
		}},
		{"add_context_item", func() error { _, err := a.AddContextItem(ctx, "c", "style"); return err }},
		{"remove_context_item", func() error { _, err := a.RemoveContextItem(ctx, "c", "style"); return err }},
		{"summaries of turns", func() error {
			res, err := a.SummarizeTurns(ctx, memory.TurnSummaryRequest{ConversationID: "c"})
			if err == nil && res.Summarised == 0 {
				err = errors.New("no turn summarised")
			}
			return err
		}},
		{"summaries clear", func() error { _, err := a.ClearTurnSummaries(ctx, "c"); return err }},
		{"summaries regenerate", func() error {
			_, err := a.RegenerateSummaries(ctx, memory.RegenerateRequest{ConversationID: "c"})
			return err
		}},
		{"forget", func() error {
			_, err := a.Forget(ctx, memory.ForgetRequest{ConversationID: "c", TurnIDs: []string{"t3"}})
			return err
		}},
	}
	for _, st := range steps {
		if err := st.call(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		check(st.name)
	}
}
