package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

func fakeOpener(counter *tokens.Counter, overBudget bool, engines *[]*fakeEngine) OpenFunc {
	return func(_ context.Context, _ string) (Engine, error) {
		f := &fakeEngine{counter: counter, overBudget: overBudget}
		*engines = append(*engines, f)
		return f, nil
	}
}

func TestRunLoCoMoTiny(t *testing.T) {
	counter := testCounter(t)
	conv := loadTiny(t)
	var engines []*fakeEngine
	methods := []Method{
		Truncation{Counter: counter},
		BM25Method{Counter: counter},
		Dense{Counter: counter, Embedder: hashEmbedder{}},
		Hybrid{Counter: counter, Embedder: hashEmbedder{}},
		VCMCP{Open: fakeOpener(counter, false, &engines), TempDir: t.TempDir()},
	}
	rep, err := RunLoCoMo(context.Background(), LoCoMoConfig{
		Conversations: []*Conversation{conv}, Methods: methods, Budgets: []int{20, 1000}, Counter: counter, KeepQuestions: true,
	})
	if err != nil {
		t.Fatalf("RunLoCoMo: %v", err)
	}
	if len(engines) != 1 || !engines[0].closed || len(engines[0].requests) != 2 {
		t.Fatalf("engines: %d, want one fresh store, closed, with one ingest per session", len(engines))
	}
	if got, want := len(rep.Results), len(methods)*2; got != want {
		t.Fatalf("results: got %d, want %d", got, want)
	}
	for _, m := range []string{"truncation", "bm25", "dense", "hybrid", "vc-mcp"} {
		res, ok := rep.Result(m, 1000)
		if !ok {
			t.Fatalf("no result for %s@1000", m)
		}
		// 1000 tokens hold the whole tiny conversation: every method is perfect.
		if res.Overall != 100 || res.AllEvidenceHit != 100 || res.OverBudget != 0 {
			t.Errorf("%s@1000: overall %v, all-hit %v, over %d; want 100, 100, 0", m, res.Overall, res.AllEvidenceHit, res.OverBudget)
		}
		small, _ := rep.Result(m, 20)
		for _, q := range small.Questions {
			if q.Tokens > 20 {
				t.Errorf("%s@20: question %d got %d tokens", m, q.Index, q.Tokens)
			}
		}
	}
	// At 20 tokens truncation keeps only the last turn (D2:2), the answer to
	// the adversarial question; BM25 finds the dog question's turn.
	tr, _ := rep.Result("truncation", 20)
	bm, _ := rep.Result("bm25", 20)
	if got := tr.Categories[4].Recall; got != 100 {
		t.Errorf("truncation@20 adversarial = %v, want 100", got)
	}
	if got := tr.Categories[3].Recall; got != 0 {
		t.Errorf("truncation@20 single-hop = %v, want 0", got)
	}
	if got := bm.Categories[3].Recall; got != 100 {
		t.Errorf("bm25@20 single-hop = %v, want 100", got)
	}
	// The fake engine is BM25 over the same lines: it must score exactly as
	// the BM25 baseline, which checks the vc-mcp path end to end.
	vc, _ := rep.Result("vc-mcp", 20)
	if vc.Overall != bm.Overall {
		t.Errorf("vc-mcp (fake BM25 engine)@20 = %v, bm25@20 = %v; want equal", vc.Overall, bm.Overall)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### Budget 20 tokens", "### Budget 1000 tokens", "| vc-mcp | 100.0 (100.0-100.0) |", "multi-hop", "all-evidence hit"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back LoCoMoReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != len(rep.Results) {
		t.Errorf("JSON round trip: %v, %d results", err, len(back.Results))
	}
	root, lines := wellFormed(t, rep.RecallChart().SVG())
	if root != "svg" || lines != len(methods) {
		t.Errorf("recall chart: root %q, %d lines; want svg, %d", root, lines, len(methods))
	}
}

func TestRunLoCoMoBudgetViolation(t *testing.T) {
	counter := testCounter(t)
	var engines []*fakeEngine
	var progress bytes.Buffer
	rep, err := RunLoCoMo(context.Background(), LoCoMoConfig{
		Conversations: []*Conversation{loadTiny(t)},
		Methods:       []Method{VCMCP{Open: fakeOpener(counter, true, &engines), TempDir: t.TempDir()}},
		Budgets:       []int{10}, Counter: counter, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("RunLoCoMo: %v", err)
	}
	res, _ := rep.Result("vc-mcp", 10)
	if res.OverBudget != 3 || res.Overall != 0 || rep.OverBudget() != 3 {
		t.Errorf("over budget %d, overall %v; want 3 violations scored 0", res.OverBudget, res.Overall)
	}
	if !strings.Contains(progress.String(), "BUDGET VIOLATION") {
		t.Errorf("no loud warning on the progress writer:\n%s", progress.String())
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "FAIL") {
		t.Errorf("markdown does not flag the violations:\n%s", md.String())
	}
}

func TestRunLoCoMoDevBaselines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs BM25 over a LoCoMo conversation")
	}
	convs, err := LoadLoCoMo(locomoPath(t))
	if err != nil {
		t.Fatal(err)
	}
	counter := testCounter(t)
	rep, err := RunLoCoMo(context.Background(), LoCoMoConfig{
		Conversations: convs[:1], Methods: []Method{Truncation{Counter: counter}, BM25Method{Counter: counter}},
		Budgets: []int{2000}, Counter: counter,
	})
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := rep.Result("truncation", 2000)
	bm, _ := rep.Result("bm25", 2000)
	// Loose bounds around what this implementation measures on conv-26, so a
	// broken tokenizer, scorer or packer shows up.
	if bm.Overall < 60 || bm.Overall > 90 || tr.Overall > 30 || bm.OverBudget+tr.OverBudget != 0 {
		t.Errorf("conv-26 @2000: bm25 %.1f, truncation %.1f, over budget %d; want bm25 in [60,90], truncation <= 30, none over",
			bm.Overall, tr.Overall, bm.OverBudget+tr.OverBudget)
	}
}
