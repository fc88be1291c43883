package bench

import (
	"context"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

// TestNeedlesSurviveCompaction ingests a 2,000-turn synthetic conversation in
// client-sized batches into a store with a small context window, so that
// compaction runs many times, then checks that facts planted at turn 12 and
// later are still recalled verbatim within 2,000 tokens.
func TestNeedlesSurviveCompaction(t *testing.T) {
	const (
		turns  = 2000
		batch  = 2
		budget = 2000
	)
	ctx := context.Background()
	counter := testCounter(t)
	store, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), ContextWindow: 8000})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	syn := Generate(turns, 1)
	compactions, freed, stored := 0, 0, 0
	for from := 0; from < turns; from += batch {
		res, err := store.Ingest(ctx, memory.IngestRequest{Messages: syn.Messages(from, min(from+batch, turns))})
		if err != nil {
			t.Fatalf("Ingest turns %d..: %v", from, err)
		}
		stored += res.Stored
		if res.Compacted {
			compactions++
			freed += res.TokensFreed
		}
	}
	t.Logf("%d turns in %d-message calls: %d compactions freed %d tokens", stored, batch, compactions, freed)
	if stored != turns {
		t.Errorf("stored %d turns, want %d", stored, turns)
	}
	if compactions < 3 || freed <= 0 {
		t.Errorf("%d compactions freeing %d tokens, want several (>= 3) with tokens freed", compactions, freed)
	}
	st, err := store.Status(ctx, "")
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if st.Totals.Turns != turns || st.Totals.Segments == 0 || st.Totals.CompactedTokens == 0 {
		t.Errorf("status totals %+v: want %d turns, segments and compacted tokens", st.Totals, turns)
	}
	if len(syn.Needles) < 5 || syn.Needles[0].Turn != 12 {
		t.Fatalf("needles %+v: want turn 12 first and several more", syn.Needles)
	}
	for _, nd := range syn.Needles {
		res, err := store.Recall(ctx, memory.RecallRequest{Message: nd.Question, MaxTokens: budget})
		if err != nil {
			t.Fatalf("Recall(%q): %v", nd.Question, err)
		}
		if n := counter.Count(res.Text); n > budget {
			t.Errorf("Recall(%q): %d cl100k tokens, budget %d", nd.Question, n, budget)
		}
		if got := EvidenceScore(res.Text, []string{nd.Fact}); got != 1 {
			t.Errorf("turn %d: Recall(%q) lacks the fact %q; got %d tokens:\n%s", nd.Turn, nd.Question, nd.Fact, res.Tokens, res.Text)
		}
	}
}
