package memory

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkRecall measures recall_context's engine path on a synthetic
// conversation of 10,000 turns.
func BenchmarkRecall(b *testing.B) {
	s := openTest(b, Options{})
	msgs := chat(10000, t0)
	for i := 0; i < len(msgs); i += 500 {
		if _, err := s.Ingest(context.Background(), IngestRequest{ConversationID: "c", Messages: msgs[i : i+500]}); err != nil {
			b.Fatal(err)
		}
	}
	queries := []string{"when is the Rex vaccination appointment?", "Postgres 16 migration before release", "what did we book in Kyoto?", "GOMAXPROCS scheduler bug"}
	b.ReportAllocs()
	b.ResetTimer()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t := time.Now()
		if _, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: queries[i%len(queries)] + fmt.Sprint(" ", i%7)}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sorted := append([]time.Duration(nil), lat...)
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	p := func(q float64) float64 { return float64(sorted[int(q*float64(len(sorted)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.5), "p50_ms")
	b.ReportMetric(p(0.99), "p99_ms")
}
