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
	"github.com/vc-mcp/vc-mcp/pgstore"
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
	if pg, ok := opts.Shared.(*pgstore.Store); ok {
		// On PostgreSQL, vectors another process computed are read, not
		// computed again (vc_vectors).
		opts.Embedder = pg.CacheVectors(lazy, log)
	}

	lc := llmConfig(cfg, os.Getenv)
	usageDir := cfg.DataDir
	if readOnlyDir(cfg) {
		usageDir = "" // nothing is written there
	}
	tagger, summarizer, closeLLM, err := newLLM(lc, usageDir, os.Getenv,
		tagging.NewKeyword(keywordOptions(cfg)), summarize.NewExtractive(nil), log)
	if err != nil {
		return seams{}, err
	}
	opts.KeywordTagging = keywordOptions(cfg)
	// Typed nils would defeat memory's nil checks.
	if tagger != nil {
		opts.Tagger = tagger
		if t, ok := tagger.(*llm.Tagger); ok {
			opts.Splitter = splitter{t}
		}
	}
	if summarizer != nil {
		opts.Summarizer = summarizer
	}
	if len(lc.TagRules) > 0 {
		opts.TagPriority = lc.Priority
	}
	if lc.HasTTL() {
		opts.TagTTL = lc.TTL
	}
	if lc.Enabled() {
		dataDir := cfg.DataDir
		opts.Usage = func(conv string) ([]memory.LLMUsage, error) { return conversationUsage(dataDir, conv) }
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

// keywordOptions are the keyword tagger's settings: tags per turn, and the
// user's keyword -> tag map (keyword_tags) as aliases.
func keywordOptions(cfg settings) *tagging.KeywordOptions {
	o := &tagging.KeywordOptions{MinTags: cfg.MinTagsPerTurn, MaxTags: cfg.MaxTagsPerTurn}
	for tag, words := range cfg.KeywordTags {
		if o.Aliases == nil {
			o.Aliases = map[string]string{}
		}
		for _, w := range words {
			o.Aliases[w] = tag
		}
	}
	return o
}

// splitter adapts the LLM tagger's tag splitting to memory's seam.
type splitter struct{ t *llm.Tagger }

func (s splitter) SplitTag(ctx context.Context, in memory.SplitRequest) (memory.SplitDecision, error) {
	ctx = llm.WithConversation(ctx, in.ConversationID)
	r, err := s.t.Split(ctx, llm.SplitInput{Tag: in.Tag, Count: in.Count, Total: in.Total, Vocabulary: in.Vocabulary, Samples: in.Samples})
	if err != nil || !r.Split {
		return memory.SplitDecision{}, err
	}
	d := memory.SplitDecision{Aliases: map[string]string{}, Assignments: map[int]string{}}
	for _, st := range r.Subtags {
		d.Subtags = append(d.Subtags, st.Tag)
		for _, a := range st.Aliases {
			d.Aliases[a] = st.Tag
		}
	}
	for i, tag := range r.Assignments {
		d.Assignments[i] = tag
	}
	return d, nil
}

// conversationUsage reads the LLM usage log's totals for one conversation.
func conversationUsage(dataDir, conv string) ([]memory.LLMUsage, error) {
	totals, err := llm.ReadUsage(dataDir)
	if err != nil {
		return nil, err
	}
	var out []memory.LLMUsage
	for _, t := range totals {
		if t.Conversation != conv {
			continue
		}
		out = append(out, memory.LLMUsage{Provider: t.Provider, Model: t.Model, Calls: t.Calls, Failures: t.Failures,
			InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CostUSD: t.CostUSD})
	}
	return out, nil
}
