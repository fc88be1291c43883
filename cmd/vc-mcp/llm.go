package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/vc-mcp/vc-mcp/mcp"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/llm"
)

// runCostReport prints the model usage recorded in the data directory, per
// conversation and model (`vc-mcp cost-report [--data-dir DIR]`). It takes
// every setting flag; only data_dir matters.
func runCostReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, rest, err := loadConfig("cost-report", args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("cost-report: unexpected argument %q: %w", rest[0], errUsage)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := llm.CostReport(cfg.DataDir, stdout); err != nil {
		return fmt.Errorf("cost-report: %w", err)
	}
	return nil
}

// llmConfig is the LLM configuration: every VC_LLM_* variable
// (llm.ConfigFromEnv), with the llm_* settings resolved by loadConfig
// (flags > env > config file) on top.
func llmConfig(s settings, getenv func(string) string) llm.Config {
	c := llm.ConfigFromEnv(getenv)
	if s.LLMProvider != "" {
		c.Provider = s.LLMProvider
	}
	if s.LLMBaseURL != "" {
		c.BaseURL = s.LLMBaseURL
	}
	if s.LLMModel != "" {
		c.Model = s.LLMModel
	}
	if s.LLMAPIKeyEnv != "" {
		c.APIKeyEnv = s.LLMAPIKeyEnv
	}
	if len(c.TagRules) == 0 {
		// VC_LLM_TAG_RULES wins over the config file's tag_rules.
		c.TagRules = s.TagRules
	}
	return c
}

// newLLM builds the model-backed Tagger and Summarizer for memory.Options
// from cfg, with the deterministic ones as fallbacks. With provider "none"
// it returns nil seams (memory's built-ins) and a no-op close. The usage
// log goes to <dataDir>/llm-usage.jsonl (none with dataDir "", for a
// read-only data directory); close releases it. For provider
// "sampling" the model is the MCP client's, reached through the context of
// the tool call being served; the MCP server must call EnableSampling.
// With SummariesOnly the tagger is nil (memory's keyword tagger).
func newLLM(cfg llm.Config, dataDir string, getenv func(string) string, fallbackTagger llm.TagFallback, fallbackSummarizer llm.SummaryFallback, log *slog.Logger) (memory.Tagger, memory.Summarizer, func() error, error) {
	noop := func() error { return nil }
	if err := cfg.Validate(); err != nil {
		return nil, nil, noop, err
	}
	if !cfg.Enabled() {
		return nil, nil, noop, nil
	}
	cfg = cfg.WithDefaults()
	var (
		c   llm.Completer
		err error
	)
	if cfg.Provider == llm.ProviderSampling {
		c = mcp.NewSampler(cfg.Model, cfg.Timeout)
	} else if c, err = llm.NewCompleter(cfg, getenv, nil); err != nil {
		return nil, nil, noop, err
	}
	var usage *llm.UsageLog
	closeUsage := noop
	if dataDir != "" {
		if usage, err = llm.OpenUsageLog(dataDir); err != nil {
			return nil, nil, noop, err
		}
		closeUsage = usage.Close
	}
	client := llm.NewClient(cfg, c, llm.ClientOptions{Usage: usage, Logger: log})
	var tagger memory.Tagger
	if !cfg.SummariesOnly {
		tagger = llm.NewTagger(client, fallbackTagger)
	}
	log.Info("LLM tagging and summaries", "provider", cfg.Provider, "model", cfg.Model, "base_url", cfg.BaseURL,
		"prompt_mode", cfg.PromptMode, "max_concurrency", cfg.MaxConcurrency, "summaries_only", cfg.SummariesOnly)
	return tagger, llm.NewSummarizer(client, fallbackSummarizer), closeUsage, nil
}
