package llm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

// The scripted conversation: 1,000 turns drifting between a dozen topics in
// runs of 2 to 8 exchanges, the last 6 turns protected from compaction.
const (
	workloadTurns     = 1000
	workloadProtected = 6
	modelLatency      = 200 * time.Millisecond
)

var workloadTopics = []string{
	"trip-to-lisbon", "dog-adoption", "budget", "postgres-indexing", "job-interview", "garden",
	"tax-return", "wedding-plans", "running-training", "book-club", "car-repair", "home-network",
}

type workloadSegment struct {
	tag   string
	turns []summarize.Turn
}

// scriptSegments builds the conversation and cuts its unprotected turns
// into segments (maximal runs of one primary tag), as compaction does.
func scriptSegments() []workloadSegment {
	rng := rand.New(rand.NewPCG(2026, 4))
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var segs []workloadSegment
	n := 0
	for n < workloadTurns-workloadProtected {
		tag := workloadTopics[rng.IntN(len(workloadTopics))]
		if len(segs) > 0 && segs[len(segs)-1].tag == tag {
			continue
		}
		seg := workloadSegment{tag: tag}
		for range 2 * (2 + rng.IntN(7)) {
			if n == workloadTurns-workloadProtected {
				break
			}
			role := "user"
			if n%2 == 1 {
				role = "assistant"
			}
			seg.turns = append(seg.turns, summarize.Turn{
				ID: fmt.Sprintf("t%04d", n), Role: role, Time: start.Add(time.Duration(n) * 7 * time.Minute),
				Text: fmt.Sprintf("Turn %d about %s: we agreed on option %d for $%d on %s.", n, tag, rng.IntN(5), 10+rng.IntN(900), start.AddDate(0, 0, n/40).Format("2 January")),
			})
			n++
		}
		segs = append(segs, seg)
	}
	return segs
}

type workloadStats struct {
	segments, tags, calls int
	peak                  int64
	wall                  time.Duration
}

var firstTurnID = regexp.MustCompile(`Turn (\d+) about`)

// runWorkload compacts the scripted conversation in one pass the way
// memory does it: Layer 1 summaries for every segment, fanned out with
// MapOrdered, then one Layer 2 rollup per tag, fanned out the same way,
// against a fake OpenAI server that answers each call after modelLatency.
func runWorkload(tb testing.TB, limit int) workloadStats {
	var inFlight, peak, calls atomic.Int64
	srv := newFakeServer(tb, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		cur := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
		}
		slow(modelLatency, w, r, func() {
			// Echo the first turn number so the test can check the order.
			first := "rollup"
			if m := firstTurnID.FindStringSubmatch(userText(b)); m != nil {
				first = m[1]
			}
			openAIAnswer(w, "fake-200ms", `{"summary": "segment starting at turn `+first+`", "refined_tags": ["extra-topic"]}`, 600, 80)
		})
	})
	cfg := Config{Provider: ProviderOpenAI, Model: "fake-200ms", MaxConcurrency: limit, MaxRetries: -1, Timeout: 10 * time.Second}
	sum := NewSummarizer(newTestClient(tb, srv, cfg, ClientOptions{}), firstTurn{})
	segs := scriptSegments()
	ctx := WithConversation(context.Background(), "workload")

	began := time.Now()
	l1, err := MapOrdered(ctx, limit, segs, func(ctx context.Context, s workloadSegment) (summarize.Result, error) {
		return sum.Summarize(ctx, summarize.Input{Kind: summarize.Segment, Tag: s.tag, Tags: []string{s.tag}, Turns: s.turns, MaxTokens: 120})
	})
	if err != nil {
		tb.Fatal(err)
	}
	byTag := map[string][]string{}
	var order []string
	for i, s := range segs {
		if _, ok := byTag[s.tag]; !ok {
			order = append(order, s.tag)
		}
		byTag[s.tag] = append(byTag[s.tag], l1[i].Summary)
	}
	l2, err := MapOrdered(ctx, limit, order, func(ctx context.Context, tag string) (summarize.Result, error) {
		return sum.Summarize(ctx, summarize.Input{Kind: summarize.Tag, Tag: tag, Tags: []string{tag}, Segments: byTag[tag], MaxTokens: 300})
	})
	if err != nil {
		tb.Fatal(err)
	}
	wall := time.Since(began)

	for i, r := range l1 {
		want := "segment starting at turn " + firstTurnID.FindStringSubmatch(segs[i].turns[0].Text)[1]
		if r.Summary != want || r.Method != "llm:openai/fake-200ms" {
			tb.Fatalf("segment %d: got %q by %s, want %q from the model (results out of order?)", i, r.Summary, r.Method, want)
		}
		if len(r.Tags) != 2 || r.Tags[0] != segs[i].tag {
			tb.Fatalf("segment %d: got tags %v, want %s kept first plus the added tag", i, r.Tags, segs[i].tag)
		}
	}
	if len(l2) != len(order) {
		tb.Fatalf("got %d rollups, want %d", len(l2), len(order))
	}
	if p := peak.Load(); p > int64(limit) {
		tb.Fatalf("got peak concurrency %d at the model, want at most %d", p, limit)
	}
	return workloadStats{segments: len(segs), tags: len(order), calls: int(calls.Load()), peak: peak.Load(), wall: wall}
}

// TestCompactionWorkload reports, for the scripted 1,000-turn conversation
// and a model answering in 200 ms, how many calls compaction makes, the
// peak concurrency and the wall time. Run: go test ./memory/llm -run Workload -v
func TestCompactionWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a few seconds of (idle) wall time")
	}
	for _, limit := range []int{DefaultMaxConcurrency} {
		st := runWorkload(t, limit)
		if want := st.segments + st.tags; st.calls != want {
			t.Errorf("limit %d: got %d model calls, want %d (one per segment and one per tag)", limit, st.calls, want)
		}
		t.Logf("limit %d: %d turns -> %d segments + %d tag rollups = %d model calls; peak concurrency %d; wall %s (sequential would be %s)",
			limit, workloadTurns, st.segments, st.tags, st.calls, st.peak, st.wall.Round(time.Millisecond),
			time.Duration(st.calls)*modelLatency)
	}
}

func BenchmarkCompactionWorkload(b *testing.B) {
	for _, limit := range []int{1, DefaultMaxConcurrency, 8} {
		b.Run(fmt.Sprint("limit=", limit), func(b *testing.B) {
			var st workloadStats
			for b.Loop() {
				st = runWorkload(b, limit)
			}
			b.ReportMetric(float64(st.calls), "model-calls")
			b.ReportMetric(float64(st.peak), "peak-concurrency")
			b.ReportMetric(st.wall.Seconds(), "wall-s")
		})
	}
}
