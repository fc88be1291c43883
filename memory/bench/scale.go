package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

// ScaleConfig configures RunScale.
type ScaleConfig struct {
	// Sizes are conversation lengths in turns, measured in this order.
	Sizes []int
	// Queries is how many recall and find_quote calls to time per size (default 200).
	Queries int
	Seed    uint64
	Open    OpenFunc
	// Binary, when set, is a vc-mcp executable: it is started on each size's
	// data directory to time an initialize answer.
	Binary string
	// BigBatch and SmallBatch are the messages per Ingest call (defaults 100
	// and 2). The small-batch rate is measured on at most SmallBatchTurns
	// turns (default 10,000) to keep a 100k run reasonable.
	BigBatch, SmallBatch, SmallBatchTurns int
	// RecallBudget is the recall max_tokens (default 2000).
	RecallBudget int
	TempDir      string
	Progress     io.Writer
	// RecallProfile, when set, receives a CPU profile (pprof) of the last
	// size's in-process recall loop alone, repeated RecallProfileRounds times
	// (default 5) over the same queries, after the timed pass.
	RecallProfile       io.Writer
	RecallProfileRounds int
	// ContentionProfile, when set, receives the block profile (pprof: time
	// spent waiting on locks and channels, by stack) of the last size's
	// recalls while another caller writes: what the writer's locks cost a
	// recall, apart from the CPU both share.
	ContentionProfile io.Writer
	// ProtocolRounds is how many times the protocol comparison runs
	// (default 3): each round starts the three servers afresh, one after
	// the other, and times the same queries on each. On a shared machine
	// the same binary's p50 moves by a third from one process to the next;
	// the ratios reported are the median of the rounds' ratios, with their
	// range, and the latencies pool every round's calls.
	ProtocolRounds int
}

// Latency summarises call durations in milliseconds.
type Latency struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	Mean float64 `json:"mean_ms"`
}

func latencyOf(ms []float64) Latency {
	return Latency{N: len(ms), P50: Percentile(ms, 50), P95: Percentile(ms, 95), P99: Percentile(ms, 99), Mean: Mean(ms)}
}

// IngestRate is one ingest throughput measurement.
type IngestRate struct {
	Batch       int     `json:"batch"`
	Turns       int     `json:"turns"`
	Seconds     float64 `json:"seconds"`
	TurnsPerSec float64 `json:"turns_per_sec"`
	Compactions int     `json:"compactions"`
}

// ScaleRow is everything measured at one size.
type ScaleRow struct {
	Turns            int          `json:"turns"`
	Ingest           []IngestRate `json:"ingest"`
	Recall           Latency      `json:"recall"`
	FindQuote        Latency      `json:"find_quote"`
	DiskBytes        int64        `json:"disk_bytes"`
	DiskBytesPerTurn float64      `json:"disk_bytes_per_turn"`
	// PeakRSSBytes is the benchmark process's VmHWM while this size ran
	// (reset before each size where the kernel allows).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// Initialize times a fresh vc-mcp process on this size's data directory
	// from exec to the initialize answer.
	Initialize      Latency `json:"initialize"`
	InitializeError string  `json:"initialize_error,omitempty"`
	// NeedlesRecalled counts needles whose fact came back in Recall.
	NeedlesRecalled int `json:"needles_recalled"`
	Needles         int `json:"needles"`
	// QuoteHits counts find_quote calls that returned at least one quote.
	QuoteHits int `json:"find_quote_hits"`
	// BM25 times a plain in-memory BM25 search (inverted index, top 10,
	// rendered as text) over the same turns and the same recall queries,
	// in the same process and run: the floor a recall is compared with.
	BM25 Latency `json:"bm25_search"`
	// RecallOverBM25 is recall p50 / BM25 p50.
	RecallOverBM25 float64 `json:"recall_over_bm25_p50"`
	// BM25Packed times the same search doing recall's job the plainest
	// way: its best hits packed first-fit into the recall budget
	// (BM25Search.AnswerBudget), so both answers are the same size.
	BM25Packed           Latency `json:"bm25_packed"`
	RecallOverBM25Packed float64 `json:"recall_over_bm25_packed_p50"`
	// RawTextBytes is the turns' content; DiskRatio is DiskBytes over it.
	RawTextBytes int64   `json:"raw_text_bytes"`
	DiskRatio    float64 `json:"disk_ratio"`
	// DiskParts splits DiskBytes by top-level entry of the data directory.
	DiskParts map[string]int64 `json:"disk_parts"`
	// InitializeAfterCrash times initialize after the previous server was
	// killed (SIGKILL) once it had answered: the index was left open.
	InitializeAfterCrash      Latency `json:"initialize_after_crash"`
	InitializeAfterCrashError string  `json:"initialize_after_crash_error,omitempty"`
	// FirstRecall and FirstRecallAfterCrash time, from exec, the first
	// recall_context answer of those same starts: the store open (and,
	// after the crash, recovered) behind it.
	FirstRecall           Latency `json:"first_recall"`
	FirstRecallAfterCrash Latency `json:"first_recall_after_crash"`
	// RecallAfterPause times the first recall_context answer alone when
	// it comes a second after the initialize answer, as a user's first
	// message does: the server has had that second to get ready.
	RecallAfterPause Latency `json:"first_recall_after_pause"`
	// Through the protocol (needs Binary): recall_context on "vc-mcp serve"
	// over stdio, and a plain BM25 MCP server ("vc-mcp bench bm25-serve":
	// the same BM25Search behind one search tool, on the same transport
	// and the same library) over the same turns and queries, one after the
	// other in the same run, ProtocolRounds times. Sizes are the answers'
	// mean bytes. A ratio is the median over the rounds of the round's
	// recall p50 over the baseline's, and its range is the lowest and the
	// highest round's.
	RecallMCP              Latency    `json:"recall_mcp"`
	BM25MCP                Latency    `json:"bm25_search_mcp"`
	RecallOverBM25MCP      float64    `json:"recall_over_bm25_mcp_p50"`
	RecallOverBM25MCPRange [2]float64 `json:"recall_over_bm25_mcp_p50_range"`
	RecallMCPBytes         float64    `json:"recall_mcp_answer_bytes"`
	BM25MCPBytes           float64    `json:"bm25_mcp_answer_bytes"`
	// The same server's search with max_tokens: hits packed into the
	// recall budget (BM25Packed, over MCP).
	BM25PackedMCP                Latency    `json:"bm25_packed_mcp"`
	RecallOverBM25PackedMCP      float64    `json:"recall_over_bm25_packed_mcp_p50"`
	RecallOverBM25PackedMCPRange [2]float64 `json:"recall_over_bm25_packed_mcp_p50_range"`
	BM25PackedMCPBytes           float64    `json:"bm25_packed_mcp_answer_bytes"`
	ProtocolRounds               int        `json:"protocol_rounds"`
	ProtocolError                string     `json:"protocol_error,omitempty"`
	// On the store ingested two per call: the same recalls alone
	// (RecallQuiet) and again while another caller ingests new turns into
	// the same conversation, two per call (RecallWhileWriting; Writes is
	// that writer's rate meanwhile). A recall that waited for a writer's
	// fsync shows in the second.
	RecallQuiet        Latency    `json:"recall_quiet"`
	RecallWhileWriting Latency    `json:"recall_while_writing"`
	Writes             IngestRate `json:"writes_during_recall"`
}

// Growth compares two consecutive sizes: each ratio is larger/smaller, and
// Exponent is log(ratio)/log(size ratio) (1 = linear, < 1 = sub-linear).
type Growth struct {
	From            int     `json:"from"`
	To              int     `json:"to"`
	SizeRatio       float64 `json:"size_ratio"`
	RecallP50Ratio  float64 `json:"recall_p50_ratio"`
	RecallExponent  float64 `json:"recall_exponent"`
	QuoteP50Ratio   float64 `json:"find_quote_p50_ratio"`
	QuoteExponent   float64 `json:"find_quote_exponent"`
	IngestRateRatio float64 `json:"ingest_rate_ratio"`
	DiskPerTurn     float64 `json:"disk_per_turn_ratio"`
	RSSRatio        float64 `json:"rss_ratio"`
	InitRatio       float64 `json:"initialize_ratio"`
	SubLinearRecall bool    `json:"sub_linear_recall"`
}

// ScaleReport is a whole scale run.
type ScaleReport struct {
	Seed    uint64     `json:"seed"`
	Queries int        `json:"queries"`
	Budget  int        `json:"recall_budget"`
	CPUs    int        `json:"cpus"`
	Rows    []ScaleRow `json:"rows"`
	Growth  []Growth   `json:"growth"`
	Started time.Time  `json:"started"`
}

// RunScale measures ingest, recall, find_quote, disk, memory and start-up at
// every size.
func RunScale(ctx context.Context, cfg ScaleConfig) (*ScaleReport, error) {
	if cfg.Open == nil {
		return nil, errors.New("scale: no store opener")
	}
	cfg.Queries = cmpOr(cfg.Queries, 200)
	cfg.BigBatch = cmpOr(cfg.BigBatch, 100)
	cfg.SmallBatch = cmpOr(cfg.SmallBatch, 2)
	cfg.SmallBatchTurns = cmpOr(cfg.SmallBatchTurns, 10000)
	cfg.RecallBudget = cmpOr(cfg.RecallBudget, 2000)
	cfg.ProtocolRounds = cmpOr(cfg.ProtocolRounds, 3)
	rep := &ScaleReport{Seed: cfg.Seed, Queries: cfg.Queries, Budget: cfg.RecallBudget, CPUs: runtime.NumCPU(), Started: time.Now().UTC()}
	for _, n := range cfg.Sizes {
		row, err := scaleOne(ctx, cfg, n)
		if err != nil {
			return nil, fmt.Errorf("scale at %d turns: %w", n, err)
		}
		rep.Rows = append(rep.Rows, row)
	}
	for i := 1; i < len(rep.Rows); i++ {
		rep.Growth = append(rep.Growth, growth(rep.Rows[i-1], rep.Rows[i]))
	}
	return rep, nil
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func scaleOne(ctx context.Context, cfg ScaleConfig, n int) (ScaleRow, error) {
	row := ScaleRow{Turns: n}
	syn := Generate(n, cfg.Seed)
	resetPeakRSS()
	runtime.GC()
	bar := newProgressBar(cfg.Progress, n+min(n, cfg.SmallBatchTurns)+4*cfg.Queries)

	dir, err := os.MkdirTemp(cfg.TempDir, "vc-scale-")
	if err != nil {
		return row, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	bar.label(fmt.Sprintf("%d turns: ingest, %d per call", n, cfg.BigBatch))
	eng, rate, err := ingestSynthetic(ctx, cfg.Open, filepath.Join(dir, "big"), syn, n, cfg.BigBatch, bar)
	if err != nil {
		bar.done()
		return row, err
	}
	row.Ingest = append(row.Ingest, rate)

	recallQ, quoteQ := syn.Queries(cfg.Queries)
	bar.label(fmt.Sprintf("%d turns: recall", n))
	if row.Recall, err = timeRecalls(ctx, eng, recallQ, cfg.RecallBudget, bar); err != nil {
		bar.done()
		return row, errors.Join(err, eng.Close())
	}
	if cfg.RecallProfile != nil && n == cfg.Sizes[len(cfg.Sizes)-1] {
		if err := profileRecall(ctx, cfg, eng, recallQ); err != nil {
			bar.done()
			return row, errors.Join(err, eng.Close())
		}
	}
	docs := make([]string, n)
	for i := range docs {
		docs[i] = syn.Turns[i].Content
		row.RawTextBytes += int64(len(docs[i]))
	}
	base := NewBM25Search(docs)
	ms := make([]float64, 0, len(recallQ))
	for _, q := range recallQ {
		start := time.Now()
		_ = base.Answer(q, 10)
		ms = append(ms, msSince(start))
	}
	row.BM25 = latencyOf(ms)
	row.RecallOverBM25 = ratio(row.Recall.P50, row.BM25.P50)
	count, err := NewCounter()
	if err != nil {
		bar.done()
		return row, errors.Join(err, eng.Close())
	}
	base.WithTokens(count.Count)
	ms = ms[:0]
	for _, q := range recallQ {
		start := time.Now()
		_ = base.AnswerBudget(q, cfg.RecallBudget)
		ms = append(ms, msSince(start))
	}
	row.BM25Packed = latencyOf(ms)
	row.RecallOverBM25Packed = ratio(row.Recall.P50, row.BM25Packed.P50)
	bar.label(fmt.Sprintf("%d turns: find_quote", n))
	ms = ms[:0]
	for _, q := range quoteQ {
		start := time.Now()
		res, err := eng.FindQuote(ctx, memory.FindQuoteRequest{Query: q, MaxResults: 5})
		if err != nil {
			bar.done()
			return row, errors.Join(fmt.Errorf("find_quote: %w", err), eng.Close())
		}
		ms = append(ms, msSince(start))
		if len(res.Quotes) > 0 {
			row.QuoteHits++
		}
		bar.add(1)
	}
	row.FindQuote = latencyOf(ms)
	row.Needles = len(syn.Needles)
	for _, nd := range syn.Needles {
		res, err := eng.Recall(ctx, memory.RecallRequest{Message: nd.Question, MaxTokens: cfg.RecallBudget})
		if err != nil {
			bar.done()
			return row, errors.Join(fmt.Errorf("recall: %w", err), eng.Close())
		}
		if strings.Contains(NormalizeText(res.Text), NormalizeText(nd.Fact)) {
			row.NeedlesRecalled++
		}
	}
	if err := eng.Close(); err != nil {
		bar.done()
		return row, fmt.Errorf("close: %w", err)
	}
	row.DiskBytes, err = dirBytes(filepath.Join(dir, "big"))
	if err != nil {
		bar.done()
		return row, err
	}
	row.DiskBytesPerTurn = float64(row.DiskBytes) / float64(n)
	row.DiskRatio = ratio(float64(row.DiskBytes), float64(row.RawTextBytes))
	if row.DiskParts, err = dirParts(filepath.Join(dir, "big")); err != nil {
		bar.done()
		return row, err
	}

	if cfg.Binary != "" {
		bar.label(fmt.Sprintf("%d turns: recall and BM25 over MCP", n))
		if err := protocolLatency(ctx, cfg, &row, filepath.Join(dir, "big"), n, recallQ); err != nil {
			row.ProtocolError = err.Error()
		}
	}

	small := min(n, cfg.SmallBatchTurns)
	bar.label(fmt.Sprintf("%d turns: ingest, %d per call (%d turns)", n, cfg.SmallBatch, small))
	eng, rate, err = ingestSynthetic(ctx, cfg.Open, filepath.Join(dir, "small"), syn, small, cfg.SmallBatch, bar)
	if err != nil {
		bar.done()
		return row, err
	}
	row.Ingest = append(row.Ingest, rate)
	bar.label(fmt.Sprintf("%d turns: recall while another caller writes", small))
	if err := recallWhileWriting(ctx, &row, eng, recallQ, cfg, bar); err != nil {
		bar.done()
		return row, errors.Join(err, eng.Close())
	}
	if err := eng.Close(); err != nil {
		bar.done()
		return row, fmt.Errorf("close: %w", err)
	}
	row.PeakRSSBytes = peakRSS()
	bar.done()

	if cfg.Binary != "" {
		big := filepath.Join(dir, "big")
		var inits, firsts []float64
		for range 5 {
			st, err := TimeStart(ctx, cfg.Binary, big)
			if err != nil {
				row.InitializeError = err.Error()
				break
			}
			inits, firsts = append(inits, millis(st.Initialize)), append(firsts, millis(st.FirstRecall))
		}
		row.Initialize, row.FirstRecall = latencyOf(inits), latencyOf(firsts)
		inits, firsts = inits[:0], firsts[:0]
		for range 5 {
			if err := CrashServe(ctx, cfg.Binary, big); err != nil {
				row.InitializeAfterCrashError = err.Error()
				break
			}
			st, err := TimeStart(ctx, cfg.Binary, big)
			if err != nil {
				row.InitializeAfterCrashError = err.Error()
				break
			}
			inits, firsts = append(inits, millis(st.Initialize)), append(firsts, millis(st.FirstRecall))
		}
		row.InitializeAfterCrash, row.FirstRecallAfterCrash = latencyOf(inits), latencyOf(firsts)
		firsts = firsts[:0]
		for range 3 {
			st, err := timeStart(ctx, cfg.Binary, big, startPause)
			if err != nil {
				row.InitializeError = err.Error()
				break
			}
			firsts = append(firsts, millis(st.RecallAfterPause))
		}
		row.RecallAfterPause = latencyOf(firsts)
	}
	return row, nil
}

// profileRecall writes a CPU profile of the recall loop alone: the
// timed pass's queries, again, cfg.RecallProfileRounds times.
func profileRecall(ctx context.Context, cfg ScaleConfig, eng Engine, queries []string) error {
	if err := pprof.StartCPUProfile(cfg.RecallProfile); err != nil {
		return fmt.Errorf("recall profile: %w", err)
	}
	defer pprof.StopCPUProfile()
	for range cmpOr(cfg.RecallProfileRounds, 5) {
		for _, q := range queries {
			if _, err := eng.Recall(ctx, memory.RecallRequest{Message: q, MaxTokens: cfg.RecallBudget}); err != nil {
				return fmt.Errorf("recall: %w", err)
			}
		}
	}
	return nil
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// protocolWarmup calls are made before timing over MCP: the first calls
// of a fresh process load tables and warm caches.
const protocolWarmup = 5

// protocolLatency times recall_context on "vc-mcp serve" over dir and the
// search tool of "vc-mcp bench bm25-serve" over the same synthetic turns,
// both through MCP over stdio, with the same queries, in cfg.ProtocolRounds
// rounds of fresh processes.
func protocolLatency(ctx context.Context, cfg ScaleConfig, row *ScaleRow, dir string, n int, queries []string) error {
	if len(queries) == 0 {
		return nil
	}
	warm := queries[:min(protocolWarmup, len(queries))]
	measure := func(args []string, env []string, tool string, toolArgs func(string) map[string]any) ([]float64, float64, error) {
		s, err := startStdio(ctx, cfg.Binary, env, args...)
		if err != nil {
			return nil, 0, err
		}
		if _, _, err := s.timeTool(tool, warm, toolArgs); err != nil {
			return nil, 0, errors.Join(err, s.Close())
		}
		ms, size, err := s.timeTool(tool, queries, toolArgs)
		if err != nil {
			return nil, 0, errors.Join(err, s.Close())
		}
		return ms, size, s.Close()
	}
	// Like for like with the in-process figures: the store in the serving
	// process itself (no shared daemon left behind to skew the initialize
	// timings that follow) and no embedding model (lexical, as above).
	env := []string{"VC_DATA_DIR=" + dir, "VC_SHARE=off", "VC_MODEL_DIR=" + filepath.Join(dir, "no-model")}
	bm25 := []string{"bench", "bm25-serve", "--turns", strconv.Itoa(n), "--seed", strconv.FormatUint(cfg.Seed, 10)}
	var recallMs, bm25Ms, packedMs, ratios, packedRatios []float64
	for range max(cfg.ProtocolRounds, 1) {
		rec, size, err := measure([]string{"serve", "--data-dir", dir}, env,
			"recall_context", func(q string) map[string]any { return map[string]any{"message": q, "max_tokens": cfg.RecallBudget} })
		if err != nil {
			return fmt.Errorf("recall_context over MCP: %w", err)
		}
		row.RecallMCPBytes = size
		top, size, err := measure(bm25, nil, "search", func(q string) map[string]any { return map[string]any{"query": q, "limit": 10} })
		if err != nil {
			return fmt.Errorf("BM25 search over MCP: %w", err)
		}
		row.BM25MCPBytes = size
		packed, size, err := measure(bm25, nil, "search", func(q string) map[string]any { return map[string]any{"query": q, "max_tokens": cfg.RecallBudget} })
		if err != nil {
			return fmt.Errorf("BM25 search packed over MCP: %w", err)
		}
		row.BM25PackedMCPBytes = size
		p50 := Percentile(rec, 50)
		ratios = append(ratios, ratio(p50, Percentile(top, 50)))
		packedRatios = append(packedRatios, ratio(p50, Percentile(packed, 50)))
		recallMs, bm25Ms, packedMs = append(recallMs, rec...), append(bm25Ms, top...), append(packedMs, packed...)
		row.ProtocolRounds++
	}
	row.RecallMCP, row.BM25MCP, row.BM25PackedMCP = latencyOf(recallMs), latencyOf(bm25Ms), latencyOf(packedMs)
	row.RecallOverBM25MCP, row.RecallOverBM25MCPRange = median(ratios), [2]float64{slices.Min(ratios), slices.Max(ratios)}
	row.RecallOverBM25PackedMCP, row.RecallOverBM25PackedMCPRange = median(packedRatios), [2]float64{slices.Min(packedRatios), slices.Max(packedRatios)}
	return nil
}

// median is the middle of xs (the mean of the two middle values when
// their number is even); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// CrashServe starts "binary serve" on dir, waits until a recall_context
// has been answered (so the process holding the store, the host's own or
// the shared server it started, has it open) and kills that process and
// the host with SIGKILL, leaving the data directory as a crash does.
func CrashServe(ctx context.Context, binary, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	s, err := startStdio(ctx, binary, []string{"VC_DATA_DIR=" + dir}, "serve", "--data-dir", dir)
	if err != nil {
		return fmt.Errorf("before the kill: %w", err)
	}
	if _, err := s.callTool("recall_context", map[string]any{"message": startProbe}); err != nil {
		return errors.Join(fmt.Errorf("before the kill: %w", err), s.kill())
	}
	holder := holderPID(dir)
	if holder > 0 && holder != s.cmd.Process.Pid {
		if p, err := os.FindProcess(holder); err == nil {
			if err := p.Kill(); err != nil {
				return errors.Join(fmt.Errorf("kill the shared server (pid %d): %w", holder, err), s.kill())
			}
			waitGone(ctx, p)
		}
	}
	return s.kill()
}

// startProbe is the recall a timed start asks for: what a host's first
// turn would.
const startProbe = "What did we decide last time?"

// holderPID is the process that has dir's store open (holder.json), or 0.
func holderPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "holder.json"))
	if err != nil {
		return 0
	}
	var h struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(b, &h) != nil {
		return 0
	}
	return h.PID
}

// waitGone waits (up to 5 s) until a killed process is gone.
func waitGone(ctx context.Context, p *os.Process) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if p.Signal(syscall.Signal(0)) != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dirParts measures each top-level entry of dir.
func dirParts(dir string) (map[string]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("measure %s: %w", dir, err)
	}
	out := map[string]int64{}
	for _, e := range entries {
		n, err := dirBytes(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = n
	}
	return out, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func ingestSynthetic(ctx context.Context, open OpenFunc, dir string, syn *Synthetic, n, batch int, bar *progressBar) (Engine, IngestRate, error) {
	rate := IngestRate{Batch: batch, Turns: n}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, rate, fmt.Errorf("data dir: %w", err)
	}
	eng, err := open(ctx, dir)
	if err != nil {
		return nil, rate, fmt.Errorf("open store: %w", err)
	}
	start := time.Now()
	for from := 0; from < n; from += batch {
		to := min(from+batch, n)
		res, err := eng.Ingest(ctx, memory.IngestRequest{Messages: syn.Messages(from, to)})
		if err != nil {
			return nil, rate, errors.Join(fmt.Errorf("ingest turns %d-%d: %w", from, to, err), eng.Close())
		}
		if res.Compacted {
			rate.Compactions++
		}
		bar.add(to - from)
	}
	rate.Seconds = time.Since(start).Seconds()
	if rate.Seconds > 0 {
		rate.TurnsPerSec = float64(n) / rate.Seconds
	}
	return eng, rate, nil
}

// timeRecalls times one recall per query, in order.
func timeRecalls(ctx context.Context, eng Engine, queries []string, budget int, bar *progressBar) (Latency, error) {
	ms := make([]float64, 0, len(queries))
	for _, q := range queries {
		start := time.Now()
		if _, err := eng.Recall(ctx, memory.RecallRequest{Message: q, MaxTokens: budget}); err != nil {
			return Latency{}, fmt.Errorf("recall: %w", err)
		}
		ms = append(ms, msSince(start))
		bar.add(1)
	}
	return latencyOf(ms), nil
}

// recallWhileWriting times the recall queries on eng alone, then again
// while a second goroutine ingests new turns (another synthetic
// conversation's, two per call) into the same conversation.
func recallWhileWriting(ctx context.Context, row *ScaleRow, eng Engine, queries []string, cfg ScaleConfig, bar *progressBar) error {
	var err error
	if row.RecallQuiet, err = timeRecalls(ctx, eng, queries, cfg.RecallBudget, bar); err != nil {
		return err
	}
	more := Generate(max(4000, 40*len(queries)), cfg.Seed+1)
	stop, done, writing := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var werr error
	wrote, start := 0, time.Now()
	go func() {
		defer close(done)
		for from := 0; from+2 <= len(more.Turns); from += 2 {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := eng.Ingest(ctx, memory.IngestRequest{Messages: more.Messages(from, from+2)}); err != nil {
				werr = fmt.Errorf("ingest while recalling: %w", err)
				if wrote == 0 {
					close(writing)
				}
				return
			}
			if wrote += 2; wrote == 2 {
				close(writing) // the recalls start once the writer is going
			}
		}
	}()
	<-writing
	profile := cfg.ContentionProfile != nil && row.Turns == cfg.Sizes[len(cfg.Sizes)-1]
	if profile {
		runtime.SetBlockProfileRate(1) // every blocking event
	}
	row.RecallWhileWriting, err = timeRecalls(ctx, eng, queries, cfg.RecallBudget, bar)
	if profile {
		runtime.SetBlockProfileRate(0)
		if perr := pprof.Lookup("block").WriteTo(cfg.ContentionProfile, 0); perr != nil {
			err = errors.Join(err, fmt.Errorf("contention profile: %w", perr))
		}
	}
	close(stop)
	<-done
	secs := time.Since(start).Seconds()
	row.Writes = IngestRate{Batch: 2, Turns: wrote, Seconds: secs, TurnsPerSec: float64(wrote) / secs}
	return errors.Join(err, werr)
}

func dirBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measure %s: %w", dir, err)
	}
	return total, nil
}

// resetPeakRSS asks Linux to reset VmHWM to the current RSS; elsewhere, or
// without permission, the peak simply keeps growing across sizes.
func resetPeakRSS() {
	if f, err := os.OpenFile("/proc/self/clear_refs", os.O_WRONLY, 0); err == nil {
		_, _ = f.WriteString("5") // best effort: the report says the peak may include earlier sizes
		_ = f.Close()
	}
}

// peakRSS reads VmHWM from /proc/self/status (0 when unavailable).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// StartTiming is what a host waits for after starting vc-mcp: the
// initialize answer, and the first recall_context answer (which needs the
// store open: after a crash, the shared server started again and the
// store recovered).
type StartTiming struct {
	Initialize, FirstRecall time.Duration
	// RecallAfterPause is the first recall_context answer's own time when
	// it was sent a pause after the initialize answer (timeStart).
	RecallAfterPause time.Duration
}

// startPause is how long after the initialize answer the bench sends the
// first message when it times a start as a user meets it.
const startPause = time.Second

// TimeStart starts "binary serve --data-dir dir" as a host does, times
// its initialize answer and its first recall_context answer from just
// before exec, then ends the session and stops the shared server it
// started, so that the next start is cold and nothing outlives the
// benchmark.
func TimeStart(ctx context.Context, binary, dir string) (StartTiming, error) {
	return timeStart(ctx, binary, dir, 0)
}

// timeStart is TimeStart, sending the first recall_context pause after the
// initialize answer; with a pause it also times that answer alone.
func timeStart(ctx context.Context, binary, dir string, pause time.Duration) (StartTiming, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var st StartTiming
	start := time.Now()
	s, err := startStdio(ctx, binary, []string{"VC_DATA_DIR=" + dir}, "serve", "--data-dir", dir)
	if err != nil {
		return st, err
	}
	st.Initialize = s.initTook
	if pause > 0 {
		time.Sleep(pause)
	}
	sent := time.Now()
	if _, err := s.callTool("recall_context", map[string]any{"message": startProbe}); err != nil {
		return st, errors.Join(err, s.Close(), stopDaemon(ctx, binary, dir))
	}
	st.FirstRecall, st.RecallAfterPause = time.Since(start), time.Since(sent)
	// It answered; how it then shuts down is not what this measures.
	_ = s.Close()
	return st, stopDaemon(ctx, binary, dir)
}

// stopDaemon stops the shared server serving dir, if any.
func stopDaemon(ctx context.Context, binary, dir string) error {
	cmd := exec.CommandContext(ctx, binary, "daemon", "stop", "--data-dir", dir)
	cmd.Env = append(os.Environ(), "VC_DATA_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("daemon stop: %w: %s", err, tail(string(out), 300))
	}
	return nil
}

// stopChild closes the child's stdin (a stdio server exits on EOF) and waits,
// killing it after 5 s.
func stopChild(cmd *exec.Cmd, stdin io.Closer) error {
	cerr := stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return errors.Join(cerr, err)
	case <-time.After(5 * time.Second):
		kerr := cmd.Process.Kill()
		return errors.Join(cerr, kerr, <-done)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func growth(a, b ScaleRow) Growth {
	g := Growth{From: a.Turns, To: b.Turns, SizeRatio: ratio(float64(b.Turns), float64(a.Turns))}
	g.RecallP50Ratio = ratio(b.Recall.P50, a.Recall.P50)
	g.QuoteP50Ratio = ratio(b.FindQuote.P50, a.FindQuote.P50)
	g.RecallExponent = exponent(g.RecallP50Ratio, g.SizeRatio)
	g.QuoteExponent = exponent(g.QuoteP50Ratio, g.SizeRatio)
	if len(a.Ingest) > 0 && len(b.Ingest) > 0 {
		g.IngestRateRatio = ratio(b.Ingest[0].TurnsPerSec, a.Ingest[0].TurnsPerSec)
	}
	g.DiskPerTurn = ratio(b.DiskBytesPerTurn, a.DiskBytesPerTurn)
	g.RSSRatio = ratio(float64(b.PeakRSSBytes), float64(a.PeakRSSBytes))
	g.InitRatio = ratio(b.Initialize.P50, a.Initialize.P50)
	g.SubLinearRecall = g.RecallP50Ratio < g.SizeRatio
	return g
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func exponent(r, size float64) float64 {
	if r <= 0 || size <= 1 {
		return 0
	}
	return math.Log(r) / math.Log(size)
}

// WriteMarkdown writes the scale tables.
func (r *ScaleReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Scale: synthetic conversation (seed %d), %d timed queries per size, recall max_tokens %d, %d CPUs.\n\n",
		r.Seed, r.Queries, r.Budget, r.CPUs)
	b.WriteString("| turns | ingest turns/s (batch) | recall p50/p95/p99 ms | find_quote p50/p95/p99 ms | disk bytes/turn | peak RSS MB | initialize p50/max ms | needles recalled | find_quote with hits |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		var rates []string
		for _, in := range row.Ingest {
			rates = append(rates, fmt.Sprintf("%.0f (%d/call, %d turns, %d compactions)", in.TurnsPerSec, in.Batch, in.Turns, in.Compactions))
		}
		init := fmt.Sprintf("%.1f / %.1f", row.Initialize.P50, row.Initialize.P99)
		if row.InitializeError != "" {
			init = "error: " + strings.ReplaceAll(tail(row.InitializeError, 120), "|", "/")
		} else if row.Initialize.N == 0 {
			init = "not measured"
		}
		fmt.Fprintf(&b, "| %d | %s | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.0f | %.0f | %s | %d/%d | %d/%d |\n",
			row.Turns, strings.Join(rates, "; "), row.Recall.P50, row.Recall.P95, row.Recall.P99,
			row.FindQuote.P50, row.FindQuote.P95, row.FindQuote.P99, row.DiskBytesPerTurn,
			float64(row.PeakRSSBytes)/(1<<20), init, row.NeedlesRecalled, row.Needles, row.QuoteHits, row.FindQuote.N)
	}
	b.WriteString("\nAgainst the targets (recall and BM25 in the same process over the same turns and queries; disk over raw text):\n\n")
	b.WriteString("| turns | recall p50/p99 ms | plain BM25 top 10 p50/p99 ms | recall/BM25 p50 | BM25 packed to the budget p50/p99 ms | recall/packed BM25 p50 | disk / raw text | disk parts MB | initialize clean / after kill -9 p50 ms | first recall_context clean / after kill -9 p50 ms, from exec | first recall_context sent 1 s after initialize p50 ms |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		var parts []string
		for _, k := range []string{"logs", "decisions", "vc.db", "index.bleve"} {
			if v, ok := row.DiskParts[k]; ok {
				parts = append(parts, fmt.Sprintf("%s %.1f", k, float64(v)/(1<<20)))
			}
		}
		crash := fmt.Sprintf("%.1f", row.InitializeAfterCrash.P50)
		if row.InitializeAfterCrashError != "" {
			crash = "error: " + strings.ReplaceAll(tail(row.InitializeAfterCrashError, 120), "|", "/")
		} else if row.InitializeAfterCrash.N == 0 {
			crash = "not measured"
		}
		first := "not measured"
		if row.FirstRecall.N > 0 {
			first = fmt.Sprintf("%.1f / ", row.FirstRecall.P50)
			if row.FirstRecallAfterCrash.N > 0 {
				first += fmt.Sprintf("%.1f", row.FirstRecallAfterCrash.P50)
			} else {
				first += "not measured"
			}
		}
		paused := "not measured"
		if row.RecallAfterPause.N > 0 {
			paused = fmt.Sprintf("%.1f", row.RecallAfterPause.P50)
		}
		fmt.Fprintf(&b, "| %d | %.2f / %.2f | %.2f / %.2f | %.2f | %.2f / %.2f | %.2f | %.1fx (%.1f MB / %.1f MB) | %s | %.1f / %s | %s | %s |\n",
			row.Turns, row.Recall.P50, row.Recall.P99, row.BM25.P50, row.BM25.P99, row.RecallOverBM25,
			row.BM25Packed.P50, row.BM25Packed.P99, row.RecallOverBM25Packed, row.DiskRatio, float64(row.DiskBytes)/(1<<20), float64(row.RawTextBytes)/(1<<20), strings.Join(parts, ", "),
			row.Initialize.P50, crash, first, paused)
	}
	if slices.ContainsFunc(r.Rows, func(row ScaleRow) bool { return row.RecallMCP.N > 0 || row.ProtocolError != "" }) {
		b.WriteString("\nThrough the protocol (MCP over stdio, one client, same queries, lexical as above): recall_context on `vc-mcp serve` (store in the serving process) against a plain BM25 MCP server (`vc-mcp bench bm25-serve`: the BM25 search above behind one tool, same library and transport), answering the top 10 and, with max_tokens, its hits packed into the recall budget. Each round starts the three servers afresh, one after the other; latencies pool every round's calls, and a ratio is the median of the rounds' p50 ratios (lowest-highest round):\n\n")
		b.WriteString("| turns | rounds | recall_context p50/p95/p99 ms | BM25 top 10 p50/p95/p99 ms | recall/BM25 p50 | BM25 packed p50/p95/p99 ms | recall/packed BM25 p50 | answer bytes recall / BM25 / packed |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
		for _, row := range r.Rows {
			if row.ProtocolError != "" {
				fmt.Fprintf(&b, "| %d | %d | error: %s | | | | | |\n", row.Turns, row.ProtocolRounds, strings.ReplaceAll(tail(row.ProtocolError, 160), "|", "/"))
				continue
			}
			fmt.Fprintf(&b, "| %d | %d | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.2f (%.2f-%.2f) | %.2f / %.2f / %.2f | %.2f (%.2f-%.2f) | %.0f / %.0f / %.0f |\n",
				row.Turns, row.ProtocolRounds, row.RecallMCP.P50, row.RecallMCP.P95, row.RecallMCP.P99, row.BM25MCP.P50, row.BM25MCP.P95, row.BM25MCP.P99,
				row.RecallOverBM25MCP, row.RecallOverBM25MCPRange[0], row.RecallOverBM25MCPRange[1],
				row.BM25PackedMCP.P50, row.BM25PackedMCP.P95, row.BM25PackedMCP.P99,
				row.RecallOverBM25PackedMCP, row.RecallOverBM25PackedMCPRange[0], row.RecallOverBM25PackedMCPRange[1],
				row.RecallMCPBytes, row.BM25MCPBytes, row.BM25PackedMCPBytes)
		}
	}
	if slices.ContainsFunc(r.Rows, func(row ScaleRow) bool { return row.RecallWhileWriting.N > 0 }) {
		b.WriteString("\nRecall while another caller writes (the store ingested two per call; the same queries alone, then while a second caller ingests new turns into the same conversation, two per call):\n\n")
		b.WriteString("| turns | recall alone p50/p95/p99 ms | recall while writing p50/p95/p99 ms | writes meanwhile turns/s |\n")
		b.WriteString("|---|---|---|---|\n")
		for _, row := range r.Rows {
			if row.RecallWhileWriting.N == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %d | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.0f (%d turns) |\n",
				min(row.Turns, row.Ingest[len(row.Ingest)-1].Turns), row.RecallQuiet.P50, row.RecallQuiet.P95, row.RecallQuiet.P99,
				row.RecallWhileWriting.P50, row.RecallWhileWriting.P95, row.RecallWhileWriting.P99, row.Writes.TurnsPerSec, row.Writes.Turns)
		}
	}
	if len(r.Growth) > 0 {
		b.WriteString("\nGrowth between sizes (ratio larger/smaller; exponent = log(ratio)/log(size ratio), 1 = linear):\n\n")
		b.WriteString("| from -> to | size x | recall p50 x (exp) | find_quote p50 x (exp) | big-batch ingest rate x | disk/turn x | peak RSS x | initialize x | recall sub-linear |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
		for _, g := range r.Growth {
			fmt.Fprintf(&b, "| %d -> %d | %.0f | %.2f (%.2f) | %.2f (%.2f) | %.2f | %.2f | %.2f | %.2f | %v |\n",
				g.From, g.To, g.SizeRatio, g.RecallP50Ratio, g.RecallExponent, g.QuoteP50Ratio, g.QuoteExponent,
				g.IngestRateRatio, g.DiskPerTurn, g.RSSRatio, g.InitRatio, g.SubLinearRecall)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as indented JSON.
func (r *ScaleReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// LatencyChart plots recall and find_quote latency against stored turns.
func (r *ScaleReport) LatencyChart() Chart {
	c := Chart{Title: "Latency vs stored turns", XLabel: "stored turns (log scale)", YLabel: "latency (ms, log scale)", LogX: true, LogY: true}
	series := []struct {
		name string
		get  func(ScaleRow) float64
	}{
		{"recall p50", func(x ScaleRow) float64 { return x.Recall.P50 }},
		{"recall p95", func(x ScaleRow) float64 { return x.Recall.P95 }},
		{"recall p99", func(x ScaleRow) float64 { return x.Recall.P99 }},
		{"find_quote p50", func(x ScaleRow) float64 { return x.FindQuote.P50 }},
		{"find_quote p99", func(x ScaleRow) float64 { return x.FindQuote.P99 }},
	}
	for _, s := range series {
		sr := Series{Name: s.name}
		for _, row := range r.Rows {
			sr.X = append(sr.X, float64(row.Turns))
			sr.Y = append(sr.Y, s.get(row))
		}
		c.Series = append(c.Series, sr)
	}
	return c
}
