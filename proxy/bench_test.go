package proxy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

var benchTopics = []string{"sourdough", "kubernetes", "marathon", "tomatoes", "mortgage", "guitar", "sailing", "postgres", "birthday", "visa"}
var benchWords = strings.Fields("plan schedule budget recipe cluster pacing watering rate chord mooring index party passport deadline weekend morning change idea problem option")

// benchTurn is a synthetic turn: a topic, a few words and a number.
func benchTurn(r *rand.Rand, i int) string {
	t := benchTopics[r.IntN(len(benchTopics))]
	return fmt.Sprintf("About %s: the %s %s is %d, and the %s needs a %s (note %d).", t, benchWords[r.IntN(len(benchWords))], benchWords[r.IntN(len(benchWords))], r.IntN(10000), benchWords[r.IntN(len(benchWords))], benchWords[r.IntN(len(benchWords))], i)
}

// BenchmarkOverhead measures what the proxy adds to a request over a
// conversation of 10,000 stored turns: prepare (session, recall, filter,
// injection: the time before the upstream sees a byte) and the whole
// overhead (prepare plus writing the answer), as p50 and p99, against an
// upstream that answers at once; and memory.Recall alone on the same
// query, which is most of prepare.
//
//	go test -run '^$' -bench Overhead -benchtime 200x ./proxy/
func BenchmarkOverhead(b *testing.B) {
	const stored = 10_000
	h := newHarness(b, func(n int, s seen) (string, []byte) {
		return "application/json", openAIText("Sure.")
	}, nil)
	r := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	const conv = "bench-conv"
	for i := 0; i < stored; i += 500 {
		msgs := make([]memory.Message, 0, 500)
		for j := i; j < i+500; j++ {
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, memory.Message{Role: role, Content: mustMarshal(benchTurn(r, j))})
		}
		if _, err := h.store.Ingest(ctx, memory.IngestRequest{ConversationID: conv, Messages: msgs}); err != nil {
			b.Fatal(err)
		}
	}
	// The client's history: the last 20 turns, the marker on an answer.
	var history []any
	history = append(history, map[string]string{"role": "system", "content": "You are terse."})
	for j := 0; j < 20; j++ {
		role, text := "user", benchTurn(r, stored+j)
		if j%2 == 1 {
			role = "assistant"
			if j == 1 {
				text += "\n\n<!-- vc:session=" + conv + " -->"
			}
		}
		history = append(history, map[string]string{"role": role, "content": text})
	}
	prepare := make([]float64, 0, b.N)
	overhead := make([]float64, 0, b.N)
	recall := make([]float64, 0, b.N) // memory.Recall alone, same query, for the split
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := fmt.Sprintf("What was the %s %s for %s again? (%d)", benchWords[i%len(benchWords)], benchWords[(i+3)%len(benchWords)], benchTopics[i%len(benchTopics)], i)
		msgs := append(append([]any{}, history...), map[string]string{"role": "user", "content": q})
		status, out := h.post(b, "/v1/chat/completions", map[string]any{"model": "gpt-4o", "messages": msgs}, nil)
		if status != http.StatusOK {
			b.Fatalf("status %d: %s", status, out)
		}
		b.StopTimer()
		rec := h.proxy.Journal().Snapshot().Records[0]
		if rec.Passthrough != "" {
			b.Fatalf("passthrough: %s", rec.Passthrough)
		}
		prepare = append(prepare, rec.PrepareMS)
		t0 := time.Now()
		if _, err := h.store.Recall(ctx, memory.RecallRequest{ConversationID: conv, Message: q, MaxTokens: 2000}); err != nil {
			b.Fatal(err)
		}
		recall = append(recall, float64(time.Since(t0).Microseconds())/1000)
		overhead = append(overhead, rec.OverheadMS)
		dctx, cancel := context.WithTimeout(ctx, time.Minute)
		h.proxy.Drain(dctx)
		cancel()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(percentile(prepare, 50), "prepare-p50-ms")
	b.ReportMetric(percentile(prepare, 99), "prepare-p99-ms")
	b.ReportMetric(percentile(overhead, 50), "overhead-p50-ms")
	b.ReportMetric(percentile(overhead, 99), "overhead-p99-ms")
	b.ReportMetric(percentile(recall, 50), "recall-alone-p50-ms")
	b.ReportMetric(percentile(recall, 99), "recall-alone-p99-ms")
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}
