package bench

import (
	"context"
	"flag"
	"strconv"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

var locomoConv = flag.String("locomo-conv", "conv-26", "conversation BenchmarkLoCoMo runs (\"all\" for every one)")

// openStore opens a fresh real store in a temporary directory.
func openStore(b *testing.B) *memory.Store {
	b.Helper()
	s, err := memory.Open(context.Background(), memory.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Errorf("Close: %v", err)
		}
	})
	return s
}

// filledStore holds a synthetic conversation of n turns, ingested 100 per call.
func filledStore(b *testing.B, n int) (*memory.Store, *Synthetic) {
	b.Helper()
	s := openStore(b)
	syn := Generate(n, 1)
	for from := 0; from < n; from += 100 {
		if _, err := s.Ingest(context.Background(), memory.IngestRequest{Messages: syn.Messages(from, min(from+100, n))}); err != nil {
			b.Fatalf("Ingest: %v", err)
		}
	}
	return s, syn
}

func reportLatency(b *testing.B, ms []float64) {
	b.ReportMetric(Percentile(ms, 50), "p50-ms")
	b.ReportMetric(Percentile(ms, 99), "p99-ms")
}

// BenchmarkRecall times recall_context (2,000 tokens) with 10,000 turns stored.
func BenchmarkRecall(b *testing.B) {
	s, syn := filledStore(b, 10000)
	queries, _ := syn.Queries(200)
	timeQueries(b, queries, func(ctx context.Context, q string) error {
		_, err := s.Recall(ctx, memory.RecallRequest{Message: q, MaxTokens: 2000})
		return err
	})
}

// BenchmarkFindQuote times find_quote with 10,000 turns stored.
func BenchmarkFindQuote(b *testing.B) {
	s, syn := filledStore(b, 10000)
	_, queries := syn.Queries(200)
	timeQueries(b, queries, func(ctx context.Context, q string) error {
		_, err := s.FindQuote(ctx, memory.FindQuoteRequest{Query: q, MaxResults: 5})
		return err
	})
}

// timeQueries runs fn over the queries in turn, one per iteration, and
// reports latency percentiles.
func timeQueries(b *testing.B, queries []string, fn func(context.Context, string) error) {
	ctx := context.Background()
	var ms []float64
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		start := time.Now()
		if err := fn(ctx, queries[i%len(queries)]); err != nil {
			b.Fatalf("query %q: %v", queries[i%len(queries)], err)
		}
		ms = append(ms, msSince(start))
		i++
	}
	reportLatency(b, ms)
}

// BenchmarkIngest measures compact_context throughput as a client drives it:
// 2 messages per call, and 100 per call.
func BenchmarkIngest(b *testing.B) {
	for _, batch := range []int{2, 100} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			s := openStore(b)
			ctx := context.Background()
			var syn *Synthetic
			next, round, turns := 0, 0, 0
			b.ReportAllocs()
			for b.Loop() {
				if syn == nil || next+batch > len(syn.Turns) {
					// A new round: fresh content, later timestamps, so nothing is a duplicate.
					b.StopTimer()
					round++
					syn = Generate(20000, uint64(round))
					shiftTimes(syn, time.Duration(round)*400*24*time.Hour)
					next = 0
					b.StartTimer()
				}
				if _, err := s.Ingest(ctx, memory.IngestRequest{Messages: syn.Messages(next, next+batch)}); err != nil {
					b.Fatalf("Ingest: %v", err)
				}
				next += batch
				turns += batch
			}
			b.ReportMetric(float64(turns)/b.Elapsed().Seconds(), "turns/s")
		})
	}
}

func shiftTimes(s *Synthetic, d time.Duration) {
	for i := range s.Turns {
		s.Turns[i].Time = s.Turns[i].Time.Add(d)
	}
}

// BenchmarkLoCoMo reports LoCoMo-R recall at 1,000 and 2,000 tokens for
// vc-mcp and BM25, measured side by side on one conversation (-locomo-conv).
func BenchmarkLoCoMo(b *testing.B) {
	all, err := LoadLoCoMo(locomoPath(b))
	if err != nil {
		b.Fatal(err)
	}
	var convs []*Conversation
	for _, c := range all {
		if *locomoConv == "all" || c.ID == *locomoConv {
			convs = append(convs, c)
		}
	}
	if len(convs) == 0 {
		b.Fatalf("no conversation %q in the data", *locomoConv)
	}
	counter := testCounter(b)
	methods := []Method{BM25Method{Counter: counter}, VCMCP{Open: StoreOpener(memory.Options{}), TempDir: b.TempDir()}}
	var rep *LoCoMoReport
	for b.Loop() {
		rep, err = RunLoCoMo(context.Background(), LoCoMoConfig{Conversations: convs, Methods: methods, Budgets: []int{1000, 2000}, Counter: counter})
		if err != nil {
			b.Fatalf("RunLoCoMo: %v", err)
		}
	}
	for _, m := range []string{"vc-mcp", "bm25"} {
		for _, budget := range []int{1000, 2000} {
			res, _ := rep.Result(m, budget)
			b.ReportMetric(res.Overall, "recall@"+strconv.Itoa(budget)+"-"+m)
		}
	}
	if n := rep.OverBudget(); n > 0 {
		b.Errorf("%d contexts over budget", n)
	}
}
