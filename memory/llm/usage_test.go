package llm

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestUsageAndCostReport runs real calls through a Client with a usage log,
// across two conversations and a failure, then checks the totals and the
// printed report (golden).
func TestUsageAndCostReport(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		if n == 2 {
			writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "context too long"}})
			return
		}
		openAIAnswer(w, "gpt-4o-mini-2024-07-18", "ok", 1000, 200)
	})
	dir := t.TempDir()
	ul, err := OpenUsageLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	cfg := Config{Provider: ProviderOpenAI, Model: "gpt-4o-mini", MaxRetries: -1}
	c := newTestClient(t, srv, cfg, ClientOptions{Usage: ul, Now: clk.Now})
	calls := []string{"alpha", "alpha", "beta", "beta", ""}
	for _, conv := range calls {
		ctx := t.Context()
		if conv != "" {
			ctx = WithConversation(ctx, conv)
		}
		_, _ = c.Complete(ctx, Request{Messages: []Message{{Role: "user", Content: "x"}}, Purpose: "segment"}) // one fails on purpose
	}
	if err := ul.Close(); err != nil {
		t.Fatal(err)
	}
	// A writer in another process may be mid-line: the reader skips it.
	f, err := os.OpenFile(UsagePath(dir), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"time":"2026-05-01T12:00:00Z","conversation":"alpha","provider":"openai","mo`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	totals, err := ReadUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(totals) != 3 {
		t.Fatalf("got %d totals %+v, want 3 (alpha, beta, none)", len(totals), totals)
	}
	beta := totals[2]
	if beta.Conversation != "beta" || beta.Calls != 2 || beta.Failures != 1 || beta.InputTokens != 1000 {
		t.Errorf("got beta %+v, want 2 calls, 1 failure, 1000 input tokens", beta)
	}
	// gpt-4o-mini: 1000 x $0.15/M + 200 x $0.60/M = $0.00027 per call.
	if alpha := totals[1]; alpha.Conversation != "alpha" || alpha.CostUSD < 0.000539 || alpha.CostUSD > 0.000541 {
		t.Errorf("got alpha %+v, want $0.00054", alpha)
	}

	var out bytes.Buffer
	if err := CostReport(dir, &out); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "cost_report.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (run with -update): %v", err)
	}
	if out.String() != string(want) {
		t.Errorf("got report:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestCostReportEmpty(t *testing.T) {
	var out bytes.Buffer
	if err := CostReport(t.TempDir(), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "no model usage recorded") {
		t.Errorf("got %q, want the no-usage line", out.String())
	}
}

// TestUsageConcurrentWriters: records appended from many goroutines and two
// logs (as two processes would) all come back whole.
func TestUsageConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenUsageLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenUsageLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			for range 50 {
				if err := l.Append(UsageRecord{Conversation: strings.Repeat("c", 300), Provider: "openai", Model: "m", InputTokens: 1, OK: true}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	a.Close()
	b.Close()
	if err := a.Append(UsageRecord{}); err == nil {
		t.Errorf("got no error appending to a closed log")
	}
	totals, err := ReadUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(totals) != 1 || totals[0].Calls != 400 || totals[0].InputTokens != 400 {
		t.Errorf("got %+v, want one total of 400 calls", totals)
	}
}

// TestClientBoundsConcurrency: no more than MaxConcurrency calls are in
// flight, whatever the number of callers.
func TestClientBoundsConcurrency(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		openAIAnswer(w, "m", "ok", 1, 1)
	})
	c := newTestClient(t, srv, Config{Provider: ProviderOpenAI, Model: "m", MaxConcurrency: 3}, ClientOptions{})
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			if _, err := c.Complete(context.Background(), Request{Messages: []Message{{Role: "user", Content: "x"}}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p := c.PeakConcurrency(); p < 1 || p > 3 {
		t.Errorf("got peak concurrency %d, want 1..3", p)
	}
	if n := c.Calls(); n != 12 {
		t.Errorf("got %d calls, want 12", n)
	}
}
