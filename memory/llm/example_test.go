package llm_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory/llm"
)

// Summarise segments concurrently, at most 4 at a time, and get the results
// back in segment order, with no lock held while the model works.
func ExampleMapOrdered() {
	segments := []string{"first segment", "second segment", "third segment"}
	summaries, err := llm.MapOrdered(context.Background(), 4, segments, func(ctx context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil // a Summarizer.Summarize call in real use
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Join(summaries, " | "))
	// Output: FIRST SEGMENT | SECOND SEGMENT | THIRD SEGMENT
}

// Read the provider from the environment, as vc-mcp does.
func ExampleConfigFromEnv() {
	env := map[string]string{
		"VC_LLM_PROVIDER":    "ollama",
		"VC_LLM_MODEL":       "llama3.2:3b",
		"VC_LLM_PROMPT_MODE": "simple",
	}
	cfg := llm.ConfigFromEnv(func(k string) string { return env[k] })
	if err := cfg.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	cfg = cfg.WithDefaults()
	fmt.Println(cfg.Label(), cfg.BaseURL, cfg.PromptMode)
	// Output: openai/llama3.2:3b http://localhost:11434/v1 simple
}
