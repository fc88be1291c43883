// Package modelctx knows the context windows of LLMs by model name: a
// built-in table matched by glob or prefix, which a configuration can
// extend or override. It is a leaf: it imports nothing of the project.
package modelctx

import (
	"path"
	"strings"
)

// Default is the window assumed for a model no table knows.
const Default = 128_000

// builtin maps model-name patterns to context windows in tokens. A pattern
// without glob characters matches as a prefix; with them (* ? [...]) it is
// an fnmatch pattern over the whole name. The most specific (longest)
// matching pattern wins.
var builtin = map[string]int{
	// OpenAI
	"gpt-3.5-turbo": 16_385,
	"gpt-4":         8_192,
	"gpt-4-32k":     32_768,
	"gpt-4-turbo":   128_000,
	"gpt-4o":        128_000,
	"gpt-4.1":       1_047_576,
	"gpt-5":         400_000,
	"o1":            200_000,
	"o3":            200_000,
	"o4":            200_000,
	// Anthropic
	"claude-":         200_000,
	"claude-2":        100_000,
	"claude-sonnet-4": 1_000_000,
	// Google
	"gemini-1.5":     1_048_576,
	"gemini-1.5-pro": 2_097_152,
	"gemini-2":       1_048_576,
	"gemini-3":       1_048_576,
	// Local models (as Ollama names them; the served window is often
	// smaller, set by num_ctx: override it in model_context_limits).
	"llama3.1":    131_072,
	"llama3.2":    131_072,
	"llama3.3":    131_072,
	"llama3":      8_192,
	"llama2":      4_096,
	"mistral":     32_768,
	"mixtral":     32_768,
	"qwen2.5":     32_768,
	"qwen3":       40_960,
	"phi3":        4_096,
	"phi3:*128k*": 131_072,
	"phi4":        16_384,
	"gemma2":      8_192,
	"gemma3":      131_072,
	"deepseek-r1": 131_072,
}

// Table is the built-in table with overrides on top.
type Table struct {
	overrides map[string]int
}

// New returns the built-in table extended by overrides (pattern -> tokens;
// non-positive values are ignored). An override wins over any built-in
// pattern that matches the same name.
func New(overrides map[string]int) *Table {
	o := make(map[string]int, len(overrides))
	for k, v := range overrides {
		if v > 0 {
			o[strings.ToLower(strings.TrimSpace(k))] = v
		}
	}
	return &Table{overrides: o}
}

// Lookup returns the context window of model and whether a table knows it.
// The name is matched case-insensitively, without a provider or path
// prefix ("openai/gpt-4o", "models/gemini-2.0-flash").
func (t *Table) Lookup(model string) (int, bool) {
	name := Normalize(model)
	if name == "" {
		return 0, false
	}
	if t != nil {
		if n, ok := match(name, t.overrides); ok {
			return n, true
		}
	}
	return match(name, builtin)
}

// Window is Lookup with Default for unknown models.
func (t *Table) Window(model string) int {
	if n, ok := t.Lookup(model); ok {
		return n
	}
	return Default
}

// Lookup looks model up in the built-in table alone.
func Lookup(model string) (int, bool) { return (*Table)(nil).Lookup(model) }

// Normalize is the name the tables are matched against.
func Normalize(model string) string {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// ValidPattern reports whether pattern is usable (a bad glob such as "[a"
// is not).
func ValidPattern(pattern string) bool {
	if strings.TrimSpace(pattern) == "" {
		return false
	}
	_, err := path.Match(strings.ToLower(pattern), "")
	return err == nil
}

func match(name string, table map[string]int) (int, bool) {
	best, n := -1, 0
	for pat, v := range table {
		var ok bool
		if strings.ContainsAny(pat, "*?[") {
			ok, _ = path.Match(pat, name)
		} else {
			ok = strings.HasPrefix(name, pat)
		}
		if ok && (len(pat) > best || len(pat) == best && v > n) {
			best, n = len(pat), v
		}
	}
	return n, best >= 0
}
