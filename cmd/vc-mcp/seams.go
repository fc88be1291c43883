package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/vc-mcp/vc-mcp/embed"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/llm"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// seams is what wireSeams set up beyond memory.Options.
type seams struct {
	// sampling: the LLM is the MCP client's, so the server must offer
	// sampling.
	sampling bool
	close    func()
}

// wireSeams fills memory's optional seams from the settings: the embedding
// model (loaded in the background, so it never delays the initialize
// answer; until it is ready memory stays lexical) and, when an LLM is
// configured, model-backed tagging and summaries with the deterministic
// ones as fallbacks. With neither, the seams stay nil: lexical retrieval,
// the keyword tagger and extractive summaries.
func wireSeams(ctx context.Context, cfg settings, opts *memory.Options, log *slog.Logger) (seams, error) {
	dir := cfg.ModelDir
	if dir == "" {
		dir = embed.DefaultDir()
	}
	lazy := embed.NewLazy(dir, nil)
	lazy.Start(ctx)
	opts.Embedder = lazy

	lc := llmConfig(cfg, os.Getenv)
	tagger, summarizer, closeLLM, err := newLLM(lc, cfg.DataDir, os.Getenv,
		tagging.NewKeyword(nil), summarize.NewExtractive(nil), log)
	if err != nil {
		return seams{}, err
	}
	// Typed nils would defeat memory's nil checks.
	if tagger != nil {
		opts.Tagger = tagger
	}
	if summarizer != nil {
		opts.Summarizer = summarizer
	}
	return seams{
		sampling: lc.Enabled() && lc.WithDefaults().Provider == llm.ProviderSampling,
		close: func() {
			if err := closeLLM(); err != nil {
				log.Warn("close LLM usage log", "err", err)
			}
		},
	}, nil
}
