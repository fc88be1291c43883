package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vc-mcp/vc-mcp/embed"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/bench"
	"github.com/vc-mcp/vc-mcp/memory/tokens"
	"github.com/vc-mcp/vc-mcp/pgstore"
)

const benchUsage = `usage:
  vc-mcp bench locomo --data PATH [--budgets 1000,2000,4000,8000] [--conversations conv-26,...]
                      [--methods truncation,bm25,dense,hybrid,vc-mcp] [--model DIR] [--vector-cache DIR] [--json FILE] [--svg DIR]
                      [--variants 'name=weight=v,weight=v;name2=...'] (vc-mcp ranking ablations, same run)
  vc-mcp bench assistant [--budgets 1000,2000,4000] [--conversations 4] [--filler 150] [--seed 1]
                      [--methods truncation,bm25,vc-mcp] [--variants ...] [--json FILE]
  vc-mcp bench scale [--sizes 1000,10000] [--queries 200] [--binary PATH] [--json FILE] [--svg DIR]
  vc-mcp bench bm25-serve [--turns 10000] [--seed 1]
                      (the plain BM25 MCP server bench scale compares recall_context with, on stdio)
`

// runBench runs "vc-mcp bench ...": args are the words after "bench".
// Tables go to stdout, the progress bar and warnings to stderr.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "bench" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, benchUsage)
		return errors.New("bench: name a benchmark: locomo, assistant or scale")
	}
	switch args[0] {
	case "locomo":
		return benchLoCoMo(ctx, args[1:], stdout, stderr)
	case "scale":
		return benchScale(ctx, args[1:], stdout, stderr)
	case "assistant":
		return benchAssistant(ctx, args[1:], stdout, stderr)
	case "bm25-serve":
		return benchBM25Serve(ctx, args[1:], os.Stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, benchUsage)
		return nil
	}
	fmt.Fprint(stderr, benchUsage)
	return fmt.Errorf("bench: unknown benchmark %q (want locomo, assistant or scale)", args[0])
}

func benchLoCoMo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench locomo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "LoCoMo JSON file (e.g. ../shared/bench/locomo/locomo-dev.json)")
	budgets := fs.String("budgets", "1000,2000,4000,8000", "comma-separated token budgets")
	convs := fs.String("conversations", "", "comma-separated sample ids to run (default all)")
	methods := fs.String("methods", "truncation,bm25,dense,hybrid,vc-mcp", "comma-separated methods; dense and hybrid run only when a model is present")
	jsonOut := fs.String("json", "", "also write the full report as JSON to FILE")
	svgDir := fs.String("svg", "", "write recall-vs-budget.svg into DIR")
	perQuestion := fs.Bool("per-question", false, "keep per-question scores in the JSON report")
	variants := fs.String("variants", "", "ranking ablations run beside vc-mcp, ';'-separated NAME=OVERRIDES, e.g. 'nospeaker=speaker=1;noexpand=expand=0' (weights: see memory.Ranking)")
	modelDir := fs.String("model", "", "embedding model directory for dense, hybrid and vc-mcp's semantic signals (default: the default model dir, used when a model is there)")
	store := fs.String("store", "", "also run vc-mcp with its memory on this PostgreSQL URL (one new schema per conversation), as vc-mcp/postgres")
	vectorCache := fs.String("vector-cache", "", "keep the model's vectors in DIR, keyed by text hash, so re-runs embed nothing twice (figures unchanged)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *data == "" {
		return errors.New("bench locomo: --data is required")
	}
	bs, err := parseInts(*budgets)
	if err != nil {
		return fmt.Errorf("bench locomo: --budgets: %w", err)
	}
	all, err := bench.LoadLoCoMo(*data)
	if err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	selected, err := selectConversations(all, *convs)
	if err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	counter, ms, done, err := benchMethods(ctx, "bench locomo", *methods, *modelDir, *variants, *store, *vectorCache, stderr)
	defer done()
	if err != nil {
		return err
	}
	rep, err := bench.RunLoCoMo(ctx, bench.LoCoMoConfig{
		Conversations: selected, Methods: ms, Budgets: bs, Counter: counter,
		Progress: stderr, KeepQuestions: *perQuestion,
	})
	if err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	if err := rep.WriteMarkdown(stdout); err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	if *jsonOut != "" {
		if err := writeFileWith(*jsonOut, rep.WriteJSON); err != nil {
			return fmt.Errorf("bench locomo: %w", err)
		}
	}
	if *svgDir != "" {
		if err := writeSVG(*svgDir, "recall-vs-budget.svg", rep.RecallChart()); err != nil {
			return fmt.Errorf("bench locomo: %w", err)
		}
	}
	if n := rep.OverBudget(); n > 0 {
		return fmt.Errorf("bench locomo: %d contexts exceeded their token budget (scored 0)", n)
	}
	return nil
}

// benchAssistant runs the assistant-style set (bench.GenerateAssistant)
// through the same runner and scoring as LoCoMo-R, baselines in the same
// run.
func benchAssistant(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench assistant", flag.ContinueOnError)
	fs.SetOutput(stderr)
	budgets := fs.String("budgets", "1000,2000,4000", "comma-separated token budgets")
	n := fs.Int("conversations", 4, "conversations to generate")
	filler := fs.Int("filler", 150, "filler sessions per conversation (distractors)")
	seed := fs.Uint64("seed", 1, "generator seed")
	methods := fs.String("methods", "truncation,bm25,vc-mcp", "comma-separated methods: truncation, bm25, dense, hybrid (with a model), vc-mcp")
	variants := fs.String("variants", "", "ranking ablations run beside vc-mcp, ';'-separated NAME=OVERRIDES (see bench locomo)")
	jsonOut := fs.String("json", "", "also write the full report as JSON to FILE")
	modelDir := fs.String("model", "", "embedding model directory for vc-mcp's semantic signals (default: the default model dir, used when a model is there)")
	vectorCache := fs.String("vector-cache", "", "keep the model's vectors in DIR, keyed by text hash, so re-runs embed nothing twice (figures unchanged)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bs, err := parseInts(*budgets)
	if err != nil {
		return fmt.Errorf("bench assistant: --budgets: %w", err)
	}
	if *n <= 0 || *n > 100 || *filler <= 0 || *filler > 5000 {
		return errors.New("bench assistant: --conversations must be 1..100 and --filler 1..5000")
	}
	counter, ms, done, err := benchMethods(ctx, "bench assistant", *methods, *modelDir, *variants, "", *vectorCache, stderr)
	defer done()
	if err != nil {
		return err
	}
	convs := bench.GenerateAssistant(bench.AssistantOptions{Conversations: *n, Filler: *filler, Seed: *seed})
	rep, err := bench.RunLoCoMo(ctx, bench.LoCoMoConfig{Conversations: convs, Methods: ms, Budgets: bs, Counter: counter, Progress: stderr})
	if err != nil {
		return fmt.Errorf("bench assistant: %w", err)
	}
	fmt.Fprintf(stdout, "Assistant-style set (generated, seed %d, %d filler sessions each). Columns reuse LoCoMo's categories:\n"+
		"open-domain = vocabulary drift (the question names a thing by its later name); adversarial is unused.\n\n", *seed, *filler)
	if err := rep.WriteMarkdown(stdout); err != nil {
		return fmt.Errorf("bench assistant: %w", err)
	}
	if *jsonOut != "" {
		if err := writeFileWith(*jsonOut, rep.WriteJSON); err != nil {
			return fmt.Errorf("bench assistant: %w", err)
		}
	}
	if k := rep.OverBudget(); k > 0 {
		return fmt.Errorf("bench assistant: %d contexts exceeded their token budget (scored 0)", k)
	}
	return nil
}

// rankingVariants parses "name=overrides;name=overrides" into vc-mcp
// methods whose stores rank with DefaultRanking plus the overrides.
func rankingVariants(opts memory.Options, spec string) ([]bench.Method, error) {
	var out []bench.Method
	for _, v := range strings.Split(spec, ";") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		name, over, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("%q: want NAME=weight=value,...", v)
		}
		r, err := memory.ParseRanking(memory.DefaultRanking(), over)
		if err != nil {
			return nil, fmt.Errorf("variant %s: %w", name, err)
		}
		o := opts
		o.Ranking = &r
		out = append(out, bench.VCMCP{Open: bench.StoreOpener(o), Variant: strings.TrimSpace(name)})
	}
	return out, nil
}

func benchScale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "1000,10000", "comma-separated conversation sizes in turns (e.g. 1000,10000,100000)")
	queries := fs.Int("queries", 200, "recall and find_quote queries per size")
	binary := fs.String("binary", "", "vc-mcp binary to time initialize with (default: this executable)")
	seed := fs.Uint64("seed", 1, "generator seed")
	jsonOut := fs.String("json", "", "also write the report as JSON to FILE")
	svgDir := fs.String("svg", "", "write latency-vs-turns.svg into DIR")
	store := fs.String("store", "", "also run on this PostgreSQL URL (a new schema per size), after the same sizes on the data directory alone")
	recallProfile := fs.String("recall-profile", "", "write a CPU profile (pprof) of the in-process recall loop to FILE (the last size's queries, 5 more rounds after the timed one)")
	rounds := fs.Int("protocol-rounds", 3, "rounds of the comparison over MCP (each starts recall's server and the BM25 servers afresh); ratios are the median round's")
	contentionProfile := fs.String("contention-profile", "", "write a block profile (pprof) of the last size's recalls while another caller writes to FILE: where they waited on locks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ns, err := parseInts(*sizes)
	if err != nil {
		return fmt.Errorf("bench scale: --sizes: %w", err)
	}
	bin := *binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("bench scale: find own executable: %w", err)
		}
	}
	cfg := bench.ScaleConfig{
		Sizes: ns, Queries: *queries, Seed: *seed, Binary: bin, ProtocolRounds: *rounds,
		Open: benchOpener(memory.Options{}, ""), Progress: stderr,
	}
	for _, p := range []struct {
		flag, path string
		to         *io.Writer
	}{
		{"--recall-profile", *recallProfile, &cfg.RecallProfile},
		{"--contention-profile", *contentionProfile, &cfg.ContentionProfile},
	} {
		if p.path == "" {
			continue
		}
		f, err := os.Create(p.path)
		if err != nil {
			return fmt.Errorf("bench scale: %s: %w", p.flag, err)
		}
		defer f.Close()
		*p.to = f
	}
	rep, err := bench.RunScale(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bench scale: %w", err)
	}
	if *store != "" {
		// The same sizes and queries on PostgreSQL, beside (initialize is
		// timed on the data directory alone).
		pg, err := bench.RunScale(ctx, bench.ScaleConfig{
			Sizes: ns, Queries: *queries, Seed: *seed,
			Open: benchOpener(memory.Options{}, *store), Progress: stderr,
		})
		if err != nil {
			return fmt.Errorf("bench scale --store: %w", err)
		}
		fmt.Fprintln(stdout, "## Data directory alone (bbolt)")
		fmt.Fprintln(stdout)
		if err := rep.WriteMarkdown(stdout); err != nil {
			return fmt.Errorf("bench scale: %w", err)
		}
		fmt.Fprintln(stdout)
		fmt.Fprintf(stdout, "## PostgreSQL (%s)\n\n", pgstore.Redact(*store))
		if err := pg.WriteMarkdown(stdout); err != nil {
			return fmt.Errorf("bench scale: %w", err)
		}
		if *jsonOut != "" {
			both := map[string]any{"bbolt": rep, "postgres": pg}
			if err := writeFileWith(*jsonOut, func(w io.Writer) error { return json.NewEncoder(w).Encode(both) }); err != nil {
				return fmt.Errorf("bench scale: %w", err)
			}
		}
		return nil
	}
	if err := rep.WriteMarkdown(stdout); err != nil {
		return fmt.Errorf("bench scale: %w", err)
	}
	if *jsonOut != "" {
		if err := writeFileWith(*jsonOut, rep.WriteJSON); err != nil {
			return fmt.Errorf("bench scale: %w", err)
		}
	}
	if *svgDir != "" {
		if err := writeSVG(*svgDir, "latency-vs-turns.svg", rep.LatencyChart()); err != nil {
			return fmt.Errorf("bench scale: %w", err)
		}
	}
	return nil
}

// benchEmbedder loads the embedding model in dir. With no dir it tries the
// default model directory and returns nil (lexical only) when no model is
// there; an explicit dir that does not load is an error.
func benchEmbedder(ctx context.Context, cmd, dir string, stderr io.Writer) (*embed.Model, error) {
	explicit := dir != ""
	if !explicit {
		dir = embed.DefaultDir()
	}
	m, err := embed.Load(ctx, dir, nil)
	switch {
	case err == nil:
		fmt.Fprintf(stderr, "%s: embedding model %s (%d dims)\n", cmd, dir, m.Dim())
		return m, nil
	case explicit:
		return nil, fmt.Errorf("load embedding model: %w", err)
	case errors.Is(err, embed.ErrNoModel):
		return nil, nil
	}
	fmt.Fprintf(stderr, "%s: embedding model at %s not usable (%v): lexical only\n", cmd, dir, err)
	return nil, nil
}

func selectConversations(all []*bench.Conversation, list string) ([]*bench.Conversation, error) {
	ids := splitList(list)
	if len(ids) == 0 {
		return all, nil
	}
	byID := map[string]*bench.Conversation{}
	for _, c := range all {
		byID[c.ID] = c
	}
	out := make([]*bench.Conversation, 0, len(ids))
	for _, id := range ids {
		c, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("no conversation %q in the data", id)
		}
		out = append(out, c)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", p)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

// writeFileWith writes a file atomically: temp file, fsync, rename.
func writeFileWith(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".bench-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", path, err), os.Remove(f.Name()))
	}
	return nil
}

func writeSVG(dir, name string, c bench.Chart) error {
	return writeFileWith(filepath.Join(dir, name), func(w io.Writer) error {
		_, err := w.Write(c.SVG())
		return err
	})
}

// benchMethods builds the methods a benchmark compares, by name (truncation,
// bm25, dense, hybrid, vc-mcp and its --variants), with the embedding model
// of modelDir when there is one (behind a vector cache in cacheDir when
// one is named); cmd prefixes errors and notes. done flushes the cache.
func benchMethods(ctx context.Context, cmd, names, modelDir, variants, store, cacheDir string, stderr io.Writer) (_ *tokens.Counter, _ []bench.Method, done func(), _ error) {
	done = func() {}
	counter, err := bench.NewCounter()
	if err != nil {
		return nil, nil, done, fmt.Errorf("%s: %w", cmd, err)
	}
	model, err := benchEmbedder(ctx, cmd, modelDir, stderr)
	if err != nil {
		return nil, nil, done, fmt.Errorf("%s: %w", cmd, err)
	}
	var emb interface {
		bench.Embedder
		memory.Embedder
	}
	opts := memory.Options{}
	if model != nil {
		emb = model
		if cacheDir != "" {
			vc, err := openVectorCache(model, cacheDir)
			if err != nil {
				return nil, nil, done, fmt.Errorf("%s: %w", cmd, err)
			}
			emb, done = vc, func() {
				if err := vc.Close(stderr); err != nil {
					fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
				}
			}
		}
		opts.Embedder = emb
	}
	var ms []bench.Method
	for _, name := range splitList(names) {
		switch name {
		case "truncation":
			ms = append(ms, bench.Truncation{Counter: counter})
		case "bm25":
			ms = append(ms, bench.BM25Method{Counter: counter})
		case "dense", "hybrid":
			switch {
			case emb == nil:
				fmt.Fprintf(stderr, "%s: no embedding model: skipping %s\n", cmd, name)
			case name == "dense":
				ms = append(ms, bench.Dense{Counter: counter, Embedder: emb})
			default:
				ms = append(ms, bench.Hybrid{Counter: counter, Embedder: emb})
			}
		case "vc-mcp":
			ms = append(ms, bench.VCMCP{Open: bench.StoreOpener(opts)})
			if store != "" { // the same memory on PostgreSQL, beside it
				ms = append(ms, bench.VCMCP{Open: benchOpener(opts, store), Variant: "postgres"})
			}
			vs, err := rankingVariants(opts, variants)
			if err != nil {
				return nil, nil, done, fmt.Errorf("%s: --variants: %w", cmd, err)
			}
			ms = append(ms, vs...)
		default:
			return nil, nil, done, fmt.Errorf("%s: unknown method %q", cmd, name)
		}
	}
	return counter, ms, done, nil
}
