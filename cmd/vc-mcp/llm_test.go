package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory/llm"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

type stubFallback struct{}

func (stubFallback) Tag(ctx context.Context, in tagging.Input) (tagging.Result, error) {
	return tagging.Result{Tags: []string{"fallback"}, Primary: "fallback", Source: "keyword"}, nil
}

func (stubFallback) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	return summarize.Result{Summary: "extractive", Method: "extractive"}, nil
}

func TestNewLLMNone(t *testing.T) {
	tg, sm, closeFn, err := newLLM(llm.Config{}, t.TempDir(), func(string) string { return "" }, stubFallback{}, stubFallback{}, slog.New(slog.DiscardHandler))
	if err != nil || tg != nil || sm != nil {
		t.Fatalf("got %v, %v, %v; want nil seams and no error", tg, sm, err)
	}
	if err := closeFn(); err != nil {
		t.Error(err)
	}
}

func TestNewLLMInvalid(t *testing.T) {
	_, _, _, err := newLLM(llm.Config{Provider: "gemini"}, t.TempDir(), func(string) string { return "" }, stubFallback{}, stubFallback{}, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("got no error for an unknown provider")
	}
}

// TestLLMWiringAndCostReport: settings and env select an OpenAI-compatible
// server; a tag call reaches it with the key from the named variable; the
// usage shows up in `vc-mcp cost-report`.
func TestLLMWiringAndCostReport(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"model":   "gpt-4o-mini",
			"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": `{"tags": ["garden"], "primary": "garden"}`}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 300, "completion_tokens": 20},
		})
	}))
	defer srv.Close()
	env := map[string]string{"VC_LLM_MODEL": "from-env", "VC_LLM_PROMPT_MODE": "simple", "MY_KEY": "sk-test"}
	getenv := func(k string) string { return env[k] }
	s := settings{LLMProvider: "openai", LLMBaseURL: srv.URL, LLMModel: "gpt-4o-mini", LLMAPIKeyEnv: "MY_KEY"}
	cfg := llmConfig(s, getenv)
	if cfg.Model != "gpt-4o-mini" || cfg.PromptMode != "simple" {
		t.Errorf("got config %+v, want the settings' model over env and the env's prompt mode", cfg)
	}
	dir := t.TempDir()
	tg, sm, closeFn, err := newLLM(cfg, dir, getenv, stubFallback{}, stubFallback{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if tg == nil || sm == nil {
		t.Fatalf("got tagger %v summarizer %v, want both", tg, sm)
	}
	res, err := tg.Tag(llm.WithConversation(t.Context(), "conv-1"), tagging.Input{Text: "The tomatoes need staking", Role: "user"})
	if err != nil || res.Primary != "garden" || res.Source != "llm:openai/gpt-4o-mini" {
		t.Errorf("got %+v, %v; want the model's tag", res, err)
	}
	if gotAuth != "Bearer sk-test" {
		t.Errorf("got Authorization %q, want the key from MY_KEY", gotAuth)
	}
	if err := closeFn(); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if err := runCostReport(t.Context(), []string{"--data-dir", dir}, &out, &errOut); err != nil {
		t.Fatalf("cost-report: %v (%s)", err, errOut.String())
	}
	if !strings.Contains(out.String(), "conv-1") || !strings.Contains(out.String(), "openai/gpt-4o-mini") || !strings.Contains(out.String(), "300") {
		t.Errorf("got report:\n%s\nwant a row for conv-1 with openai/gpt-4o-mini and 300 input tokens", out.String())
	}
	if err := runCostReport(t.Context(), []string{"--data-dir", dir, "extra"}, &out, &errOut); err == nil {
		t.Errorf("got no error for a stray argument")
	}
}
