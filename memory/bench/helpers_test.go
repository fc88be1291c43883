package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"hash/fnv"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

var (
	update     = flag.Bool("update", false, "rewrite golden files under testdata")
	locomoFlag = flag.String("locomo", "../../../shared/bench/locomo/locomo-dev.json", "LoCoMo dev split for the tests and BenchmarkLoCoMo")
)

// locomoPath returns the LoCoMo dev split, skipping the test when this
// checkout has no shared/ directory beside it.
func locomoPath(tb testing.TB) string {
	tb.Helper()
	if _, err := os.Stat(*locomoFlag); err != nil {
		tb.Skipf("LoCoMo data not available (%v); pass -locomo PATH", err)
	}
	return *locomoFlag
}

func testCounter(tb testing.TB) *tokens.Counter {
	tb.Helper()
	c, err := NewCounter()
	if err != nil {
		tb.Fatalf("NewCounter: %v", err)
	}
	return c
}

// fakeEngine is a tiny in-memory Engine: it keeps what Ingest receives and
// answers Recall with BM25 over the stored contents, packed into the budget.
// It lets the runner be tested before, and independently of, the real store.
type fakeEngine struct {
	counter  *tokens.Counter
	mu       sync.Mutex
	requests []memory.IngestRequest
	contents []string
	// overBudget makes Recall ignore the budget (to test violation handling).
	overBudget bool
	closed     bool
}

func (f *fakeEngine) Ingest(_ context.Context, req memory.IngestRequest) (memory.IngestResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	for _, m := range req.Messages {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return memory.IngestResult{}, err
		}
		f.contents = append(f.contents, m.Name+": "+s)
	}
	return memory.IngestResult{Stored: len(req.Messages), TotalTurns: len(f.contents)}, nil
}

func (f *fakeEngine) Recall(_ context.Context, req memory.RecallRequest) (memory.RecallResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.overBudget {
		return memory.RecallResult{Text: strings.Join(f.contents, "\n")}, nil
	}
	p := newPacker(f.counter, f.contents)
	text := p.firstFit(NewBM25(f.contents).Rank(req.Message), req.MaxTokens, false)
	return memory.RecallResult{Text: text, Tokens: f.counter.Count(text)}, nil
}

func (f *fakeEngine) FindQuote(_ context.Context, req memory.FindQuoteRequest) (memory.FindQuoteResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out memory.FindQuoteResult
	for _, i := range NewBM25(f.contents).Rank(req.Query) {
		if len(out.Quotes) == max(req.MaxResults, 5) {
			break
		}
		out.Quotes = append(out.Quotes, memory.Quote{Excerpt: f.contents[i]})
	}
	return out, nil
}

func (f *fakeEngine) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errors.New("closed twice")
	}
	f.closed = true
	return nil
}

// hashEmbedder is a deterministic bag-of-stems embedder: each stem adds to
// one of 64 buckets; vectors are L2-normalised.
type hashEmbedder struct{}

func (hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, tok := range Tokenize(t) {
			h := fnv.New32a()
			h.Write([]byte(tok))
			v[h.Sum32()%64]++
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if n > 0 {
			for k := range v {
				v[k] /= float32(math.Sqrt(n))
			}
		}
		out[i] = v
	}
	return out, nil
}
