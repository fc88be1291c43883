package pgstore_test

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/bench"
	"github.com/vc-mcp/vc-mcp/pgstore"
)

// locomoDev is the LoCoMo dev split (the only split vc-mcp's tests and
// benchmarks use).
const locomoDev = "../../shared/bench/locomo/locomo-dev.json"

// TestLoCoMoDevSameOnBothStores runs the LoCoMo dev split's recall (one
// conversation, conv-30, the smallest: all 369 turns, every fifth of its 105
// questions) through vc-mcp on a local data directory and on PostgreSQL, at
// two budgets, and
// requires the two recall figures to be within 1 point at every budget (the
// issue's bar; they are the same code on the same logs, so they should be
// equal, which the test reports). Lexical signals only, to stay fast under
// -race; `vc-mcp bench locomo --store` runs the whole split with the model.
func TestLoCoMoDevSameOnBothStores(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	convs, err := bench.LoadLoCoMo(locomoDev)
	if err != nil {
		t.Fatalf("the LoCoMo dev split is this test's data: %v", err)
	}
	var subset []*bench.Conversation
	for _, c := range convs {
		if c.ID == "conv-30" {
			// Every fifth question: a recall costs about 0.5 s under -race
			// on a loaded 2-core runner.
			var qs []bench.Question
			for i, q := range c.Questions {
				if i%5 == 0 {
					qs = append(qs, q)
				}
			}
			c.Questions = qs
			subset = append(subset, c)
		}
	}
	if len(subset) != 1 {
		t.Fatalf("conv-30 is not in the LoCoMo dev split at %s", locomoDev)
	}
	counter, err := bench.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	var schemas atomic.Int64
	pgOpen := func(ctx context.Context, dir string) (bench.Engine, error) {
		u, err := pgstore.WithSchema(ctx, url, fmt.Sprintf("locomo_dev_%d", schemas.Add(1)))
		if err != nil {
			return nil, err
		}
		return bench.StoreOpener(memory.Options{Shared: pgstore.New(u)})(ctx, dir)
	}
	budgets := []int{1000, 4000}
	rep, err := bench.RunLoCoMo(ctx, bench.LoCoMoConfig{
		Conversations: subset,
		Methods: []bench.Method{
			bench.VCMCP{Open: bench.StoreOpener(memory.Options{}), TempDir: t.TempDir()},
			bench.VCMCP{Open: pgOpen, TempDir: t.TempDir(), Variant: "postgres"},
		},
		Budgets: budgets, Counter: counter, KeepQuestions: true,
	})
	if err != nil {
		t.Fatalf("LoCoMo dev on both stores: %v", err)
	}
	t.Logf("LoCoMo dev split: ingest seconds %v; whole run %.1f s", rep.PrepareSecs, rep.Seconds)
	if schemas.Load() != 1 {
		t.Fatalf("the PostgreSQL method opened %d stores, want 1", schemas.Load())
	}
	for _, b := range budgets {
		local, ok1 := rep.Result("vc-mcp", b)
		pg, ok2 := rep.Result("vc-mcp[postgres]", b)
		if !ok1 || !ok2 {
			t.Fatalf("budget %d: missing results (local %v, postgres %v)", b, ok1, ok2)
		}
		if local.N == 0 || local.N != pg.N {
			t.Fatalf("budget %d: %d questions on bbolt, %d on PostgreSQL", b, local.N, pg.N)
		}
		differ := 0
		for i := range local.Questions {
			if local.Questions[i].Score != pg.Questions[i].Score {
				differ++
			}
		}
		t.Logf("LoCoMo dev split, conv-30 (every 5th question), budget %d: recall bbolt %.1f, PostgreSQL %.1f (%d questions, %d scored differently)",
			b, local.Overall, pg.Overall, local.N, differ)
		if d := math.Abs(local.Overall - pg.Overall); d > 1 {
			t.Errorf("budget %d: recall on PostgreSQL %.1f is %.1f points from bbolt's %.1f (the bar is 1)", b, pg.Overall, d, local.Overall)
		}
		if pg.OverBudget != 0 || local.OverBudget != 0 {
			t.Errorf("budget %d: contexts over budget: bbolt %d, PostgreSQL %d", b, local.OverBudget, pg.OverBudget)
		}
	}
	// The comparison means something only if recall does: a store that
	// returned nothing on both sides would pass the 1-point bar.
	if r, _ := rep.Result("vc-mcp", 4000); r.Overall < 50 {
		t.Errorf("LoCoMo dev conv-30 at 4000 tokens: recall %.1f on bbolt, below any plausible figure", r.Overall)
	}
}
