package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/bench"
)

// TestBenchScaleThroughProtocol runs the scale benchmark's process parts
// for real: recall_context on the built binary's stdio server and the
// plain BM25 MCP server (bench bm25-serve) over the same turns, and the
// start timings, clean and after killing the shared server.
func TestBenchScaleThroughProtocol(t *testing.T) {
	for _, kv := range childEnv(t) {
		if k, v, ok := strings.Cut(kv, "="); ok && (k == "HOME" || strings.HasPrefix(k, "XDG_") || k == "VC_DAEMON_IDLE") {
			t.Setenv(k, v)
		}
	}
	rep, err := bench.RunScale(context.Background(), bench.ScaleConfig{
		Sizes: []int{300}, Queries: 8, Seed: 1, Open: bench.StoreOpener(memory.Options{}),
		Binary: binary, SmallBatchTurns: 50, TempDir: t.TempDir(), ProtocolRounds: 2,
	})
	if err != nil {
		t.Fatalf("RunScale: %v", err)
	}
	row := rep.Rows[0]
	if row.ProtocolError != "" {
		t.Fatalf("protocol measurement failed: %s", row.ProtocolError)
	}
	// Two rounds of 8 queries each, pooled; the ratio is the rounds'
	// median, inside their range.
	if row.ProtocolRounds != 2 || row.RecallMCP.N != 16 || row.BM25MCP.N != 16 || row.RecallOverBM25MCP <= 0 {
		t.Errorf("over MCP: %d rounds, %d recall and %d BM25 timings, ratio %v; want 2, 16, 16, > 0", row.ProtocolRounds, row.RecallMCP.N, row.BM25MCP.N, row.RecallOverBM25MCP)
	}
	for _, r := range []struct {
		mid float64
		rng [2]float64
	}{{row.RecallOverBM25MCP, row.RecallOverBM25MCPRange}, {row.RecallOverBM25PackedMCP, row.RecallOverBM25PackedMCPRange}} {
		if r.rng[0] <= 0 || r.rng[0] > r.mid || r.mid > r.rng[1] {
			t.Errorf("ratio %v outside its rounds' range %v", r.mid, r.rng)
		}
	}
	// recall_context answers within its 2000-token budget with whole turns;
	// the baseline with its top 10 one-line turns.
	if row.BM25MCPBytes <= 0 || row.RecallMCPBytes <= row.BM25MCPBytes {
		t.Errorf("answer bytes: recall %v, BM25 %v; want both > 0 and recall's larger", row.RecallMCPBytes, row.BM25MCPBytes)
	}
	// The packed baseline answers within the same budget, with more than
	// its top 10.
	if row.BM25PackedMCP.N != 16 || row.BM25PackedMCPBytes <= row.BM25MCPBytes || row.RecallOverBM25PackedMCP <= 0 {
		t.Errorf("packed BM25 over MCP: %d timings, %v bytes (top 10: %v), ratio %v", row.BM25PackedMCP.N, row.BM25PackedMCPBytes, row.BM25MCPBytes, row.RecallOverBM25PackedMCP)
	}
	// Recall on the real store while a second caller writes to it.
	if row.RecallQuiet.N != 8 || row.RecallWhileWriting.N != 8 || row.Writes.Turns < 2 {
		t.Errorf("recall alone %d and while writing %d timings, writes %+v; want 8, 8, some turns", row.RecallQuiet.N, row.RecallWhileWriting.N, row.Writes)
	}
	if row.BM25Packed.N == 0 || row.RecallOverBM25Packed <= 0 {
		t.Errorf("packed BM25 in process: %+v, ratio %v", row.BM25Packed, row.RecallOverBM25Packed)
	}
	// Starts through the shared server, and crashes that kill it: each
	// start answers initialize and then a recall.
	if row.InitializeError != "" || row.InitializeAfterCrashError != "" {
		t.Fatalf("start timings failed: %q / after a crash: %q", row.InitializeError, row.InitializeAfterCrashError)
	}
	if row.FirstRecall.N != 5 || row.FirstRecallAfterCrash.N != 5 || row.FirstRecallAfterCrash.P50 < row.InitializeAfterCrash.P50 {
		t.Errorf("first recall timings %+v, after a crash %+v; want 5 each, after the initialize", row.FirstRecall, row.FirstRecallAfterCrash)
	}
	if row.RecallAfterPause.N != 3 || row.RecallAfterPause.P50 <= 0 || row.RecallAfterPause.P50 >= 1000 {
		t.Errorf("first recall a second after initialize: %+v; want 3 timings of the recall alone, without the pause", row.RecallAfterPause)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "Through the protocol") || !strings.Contains(md.String(), "| 300 | 2 | ") {
		t.Errorf("markdown lacks the protocol table and its rounds:\n%s", md.String())
	}
}

func TestBenchBM25ServeBadArgs(t *testing.T) {
	var stderr bytes.Buffer
	err := runBench(context.Background(), []string{"bm25-serve", "--turns", "0"}, &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--turns") {
		t.Errorf("bm25-serve --turns 0: %v, want an error naming --turns", err)
	}
}
