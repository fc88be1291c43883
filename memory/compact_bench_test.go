package memory

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

// slowSummarizer stands in for an LLM that answers in a fixed time; it
// counts calls and the most calls in flight at once.
type slowSummarizer struct {
	delay time.Duration
	inner Summarizer

	mu             sync.Mutex
	calls, now, pk int
}

func (s *slowSummarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	s.mu.Lock()
	s.calls++
	s.now++
	s.pk = max(s.pk, s.now)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}()
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return summarize.Result{}, ctx.Err()
	}
	return s.inner.Summarize(ctx, in)
}

// BenchmarkCompactionSlowModel ingests a scripted 1,000-turn conversation
// in client-sized batches with a summariser that takes 200 ms per call, and
// reports how many model calls compaction made, the peak concurrency and
// the wall time.
func BenchmarkCompactionSlowModel(b *testing.B) {
	for b.Loop() {
		sum := &slowSummarizer{delay: 200 * time.Millisecond, inner: summarize.NewExtractive(nil)}
		s := openTest(b, Options{ContextWindow: 8000, Summarizer: sum})
		msgs := chat(1000, t0)
		start := time.Now()
		for i := 0; i < len(msgs); i += 10 {
			if _, err := s.Ingest(context.Background(), IngestRequest{ConversationID: "c", Messages: msgs[i : i+10]}); err != nil {
				b.Fatal(err)
			}
		}
		wall := time.Since(start)
		b.ReportMetric(float64(sum.calls), "model-calls")
		b.ReportMetric(float64(sum.pk), "peak-concurrency")
		b.ReportMetric(wall.Seconds(), "wall-s")
	}
}
