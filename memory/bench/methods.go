package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

// Method is one way of building a context for a question: a baseline or
// vc-mcp itself.
type Method interface {
	Name() string
	// Prepare readies the method for one conversation (for vc-mcp: a fresh
	// store holding the whole conversation).
	Prepare(ctx context.Context, conv *Conversation) (Answerer, error)
}

// Answerer answers questions about one prepared conversation.
type Answerer interface {
	// Context returns the context for question in at most budget cl100k tokens.
	Context(ctx context.Context, question string, budget int) (string, error)
	Close() error
}

// Embedder is what the dense and hybrid baselines need: L2-normalised vectors.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Engine is the part of *memory.Store the benchmarks drive.
type Engine interface {
	Ingest(ctx context.Context, req memory.IngestRequest) (memory.IngestResult, error)
	Recall(ctx context.Context, req memory.RecallRequest) (memory.RecallResult, error)
	FindQuote(ctx context.Context, req memory.FindQuoteRequest) (memory.FindQuoteResult, error)
	Close() error
}

// OpenFunc opens a fresh Engine on an empty data directory.
type OpenFunc func(ctx context.Context, dir string) (Engine, error)

// StoreOpener opens real stores with memory.Open, using opts for everything
// but Dir.
func StoreOpener(opts memory.Options) OpenFunc {
	return func(ctx context.Context, dir string) (Engine, error) {
		o := opts
		o.Dir = dir
		s, err := memory.Open(ctx, o)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

var _ Engine = (*memory.Store)(nil)

// turnLines renders a conversation's turns for the baselines.
func turnLines(conv *Conversation) []string {
	turns := conv.Turns()
	lines := make([]string, len(turns))
	for i, t := range turns {
		lines[i] = t.Line()
	}
	return lines
}

// Truncation keeps the most recent turns that fit.
type Truncation struct{ Counter *tokens.Counter }

func (Truncation) Name() string { return "truncation" }

func (m Truncation) Prepare(_ context.Context, conv *Conversation) (Answerer, error) {
	p := newPacker(m.Counter, turnLines(conv))
	order := make([]int, len(p.lines))
	for i := range order {
		order[i] = len(order) - 1 - i
	}
	return answerFunc(func(_ context.Context, _ string, budget int) (string, error) {
		return p.firstFit(order, budget, true), nil
	}), nil
}

// BM25Method packs the turns BM25 ranks best for the question, first-fit.
type BM25Method struct{ Counter *tokens.Counter }

func (BM25Method) Name() string { return "bm25" }

func (m BM25Method) Prepare(_ context.Context, conv *Conversation) (Answerer, error) {
	lines := turnLines(conv)
	p := newPacker(m.Counter, lines)
	idx := NewBM25(lines)
	return answerFunc(func(_ context.Context, q string, budget int) (string, error) {
		return p.firstFit(idx.Rank(q), budget, false), nil
	}), nil
}

// Dense ranks turns by cosine similarity to the question.
type Dense struct {
	Counter  *tokens.Counter
	Embedder Embedder
}

func (Dense) Name() string { return "dense" }

func (m Dense) Prepare(ctx context.Context, conv *Conversation) (Answerer, error) {
	lines := turnLines(conv)
	p := newPacker(m.Counter, lines)
	d, err := newDenseIndex(ctx, m.Embedder, lines)
	if err != nil {
		return nil, err
	}
	return answerFunc(func(ctx context.Context, q string, budget int) (string, error) {
		scores, err := d.scores(ctx, q)
		if err != nil {
			return "", err
		}
		return p.firstFit(rankScores(scores, false), budget, false), nil
	}), nil
}

// Hybrid fuses the BM25 and dense rankings with reciprocal rank fusion (k = 60).
type Hybrid struct {
	Counter  *tokens.Counter
	Embedder Embedder
}

func (Hybrid) Name() string { return "hybrid" }

// rrfK is the reciprocal rank fusion constant.
const rrfK = 60

func (m Hybrid) Prepare(ctx context.Context, conv *Conversation) (Answerer, error) {
	lines := turnLines(conv)
	p := newPacker(m.Counter, lines)
	d, err := newDenseIndex(ctx, m.Embedder, lines)
	if err != nil {
		return nil, err
	}
	lex := NewBM25(lines)
	return answerFunc(func(ctx context.Context, q string, budget int) (string, error) {
		scores, err := d.scores(ctx, q)
		if err != nil {
			return "", err
		}
		return p.firstFit(RRF(lex.Rank(q), rankScores(scores, false)), budget, false), nil
	}), nil
}

// RRF fuses rankings (lists of item indices, best first) by reciprocal rank
// fusion with k = 60 and returns the fused order; ties keep the smaller index.
func RRF(rankings ...[]int) []int {
	score := map[int]float64{}
	for _, r := range rankings {
		for pos, i := range r {
			score[i] += 1 / float64(rrfK+pos+1)
		}
	}
	out := make([]int, 0, len(score))
	for i := range score {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool {
		if score[out[a]] != score[out[b]] {
			return score[out[a]] > score[out[b]]
		}
		return out[a] < out[b]
	})
	return out
}

type denseIndex struct {
	emb  Embedder
	vecs [][]float32
}

// embedBatch bounds one Embed call.
const embedBatch = 64

func newDenseIndex(ctx context.Context, emb Embedder, lines []string) (*denseIndex, error) {
	if emb == nil {
		return nil, errors.New("dense retrieval needs an embedder")
	}
	d := &denseIndex{emb: emb}
	for start := 0; start < len(lines); start += embedBatch {
		end := min(start+embedBatch, len(lines))
		v, err := emb.Embed(ctx, lines[start:end])
		if err != nil {
			return nil, fmt.Errorf("embed turns: %w", err)
		}
		if len(v) != end-start {
			return nil, fmt.Errorf("embed turns: got %d vectors for %d texts", len(v), end-start)
		}
		d.vecs = append(d.vecs, v...)
	}
	return d, nil
}

func (d *denseIndex) scores(ctx context.Context, q string) ([]float64, error) {
	v, err := d.emb.Embed(ctx, []string{q})
	if err != nil {
		return nil, fmt.Errorf("embed question: %w", err)
	}
	if len(v) != 1 {
		return nil, fmt.Errorf("embed question: got %d vectors", len(v))
	}
	out := make([]float64, len(d.vecs))
	for i, t := range d.vecs {
		out[i] = cosine(v[0], t)
	}
	return out, nil
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

type answerFunc func(ctx context.Context, q string, budget int) (string, error)

func (f answerFunc) Context(ctx context.Context, q string, budget int) (string, error) {
	return f(ctx, q, budget)
}
func (answerFunc) Close() error { return nil }

// VCMCP is vc-mcp itself: a fresh store per conversation, sessions ingested
// through Store.Ingest, questions asked through Store.Recall.
type VCMCP struct {
	Open OpenFunc
	// TempDir is where per-conversation data directories are made ("" = os.TempDir()).
	TempDir string
	// OnIngest, when set, sees every ingest result (for compaction counts).
	OnIngest func(memory.IngestResult)
	// Variant names a ranking variant (an ablation); the method is then
	// reported as "vc-mcp[Variant]".
	Variant string
}

func (m VCMCP) Name() string {
	if m.Variant != "" {
		return "vc-mcp[" + m.Variant + "]"
	}
	return "vc-mcp"
}

// IngestRequests maps a conversation to the compact_context calls a client
// would make: one per session, speaker_a as user and speaker_b as assistant,
// name = speaker, content = text plus caption suffix, timestamp = session
// date-time plus the turn's position in seconds. Image URLs and search
// queries are never sent.
func IngestRequests(conv *Conversation) ([]memory.IngestRequest, error) {
	reqs := make([]memory.IngestRequest, 0, len(conv.Sessions))
	for _, s := range conv.Sessions {
		if len(s.Turns) == 0 {
			continue
		}
		req := memory.IngestRequest{ConversationID: conv.ID, Messages: make([]memory.Message, len(s.Turns))}
		for i, t := range s.Turns {
			content, err := json.Marshal(t.Content)
			if err != nil {
				return nil, fmt.Errorf("turn %s: %w", t.ID, err)
			}
			req.Messages[i] = memory.Message{
				Role:      t.Role,
				Name:      t.Speaker,
				Content:   content,
				Timestamp: t.Time.UTC().Format(time.RFC3339),
			}
		}
		reqs = append(reqs, req)
	}
	return reqs, nil
}

func (m VCMCP) Prepare(ctx context.Context, conv *Conversation) (Answerer, error) {
	dir, err := os.MkdirTemp(m.TempDir, "vc-bench-"+conv.ID+"-")
	if err != nil {
		return nil, fmt.Errorf("temp data dir: %w", err)
	}
	eng, err := m.Open(ctx, dir)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open store: %w", err), os.RemoveAll(dir))
	}
	a := &engineAnswerer{eng: eng, dir: dir, conv: conv.ID}
	reqs, err := IngestRequests(conv)
	if err != nil {
		return nil, errors.Join(err, a.Close())
	}
	for _, req := range reqs {
		res, err := eng.Ingest(ctx, req)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("ingest %s: %w", conv.ID, err), a.Close())
		}
		if res.Stored+res.Duplicates != len(req.Messages) {
			return nil, errors.Join(fmt.Errorf("ingest %s: %d messages sent, %d stored, %d duplicates",
				conv.ID, len(req.Messages), res.Stored, res.Duplicates), a.Close())
		}
		if m.OnIngest != nil {
			m.OnIngest(res)
		}
	}
	// Turn vectors are computed in the background; measure semantic recall
	// on a fully embedded store.
	if w, ok := eng.(interface{ WaitEmbedded(context.Context) error }); ok {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
		defer cancel()
		if err := w.WaitEmbedded(wctx); err != nil {
			return nil, errors.Join(fmt.Errorf("embed %s: %w", conv.ID, err), a.Close())
		}
	}
	return a, nil
}

type engineAnswerer struct {
	eng  Engine
	dir  string
	conv string
}

func (a *engineAnswerer) Context(ctx context.Context, q string, budget int) (string, error) {
	res, err := a.eng.Recall(ctx, memory.RecallRequest{ConversationID: a.conv, Message: q, MaxTokens: budget})
	if err != nil {
		return "", fmt.Errorf("recall: %w", err)
	}
	return res.Text, nil
}

func (a *engineAnswerer) Close() error {
	return errors.Join(a.eng.Close(), os.RemoveAll(a.dir))
}
