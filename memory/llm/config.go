package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/prompts"
)

// Providers.
const (
	ProviderNone      = "none"
	ProviderSampling  = "sampling"
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// localServers are provider names accepted as shorthands for an
// OpenAI-compatible server at its usual local address.
var localServers = map[string]string{
	"ollama":   "http://localhost:11434/v1",
	"lmstudio": "http://localhost:1234/v1",
	"vllm":     "http://localhost:8000/v1",
}

// Defaults applied by Config.WithDefaults.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxConcurrency = 4
	DefaultMaxRetries     = 3
	DefaultTemperature    = 0.2
	DefaultMaxTokens      = 1024
	DefaultOpenAIBaseURL  = "https://api.openai.com/v1"
	DefaultAnthropicURL   = "https://api.anthropic.com"
	// AnthropicVersion is the anthropic-version header sent.
	AnthropicVersion = "2023-06-01"
)

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("invalid LLM configuration")

// TagRule customises how the topics matching Pattern are handled.
type TagRule struct {
	// Pattern is an fnmatch-style pattern over tags ("db-*", "project-?").
	Pattern string `json:"pattern"`
	// Priority orders topics in assembly (higher first); the highest
	// priority matching rule wins when several match.
	Priority int `json:"priority"`
	// SummaryPrompt, when set, replaces the default guidance in summary
	// prompts for these topics.
	SummaryPrompt string `json:"summary_prompt,omitempty"`
	// TTLDays, when above 0, is how long these topics are kept: a turn
	// whose tags all match rules with a TTL is forgotten once older than
	// each (the store's per-tag TTL). 0 = kept for ever.
	TTLDays int `json:"ttl_days,omitempty"`
}

// Price is a model's price in US dollars per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Config chooses and tunes the model provider. The zero value is "none".
// Every key's env variable is listed at ConfigFromEnv.
type Config struct {
	// Provider is "none" (or ""), "sampling", "openai" or "anthropic";
	// "ollama", "lmstudio" and "vllm" mean "openai" at that server's usual
	// local address.
	Provider string `json:"provider"`
	// BaseURL of the API; default per provider (OpenAI: https://api.openai.com/v1,
	// Ollama: http://localhost:11434/v1, LM Studio: http://localhost:1234/v1).
	BaseURL string `json:"base_url,omitempty"`
	// Model name; required for openai and anthropic, a preference hint for sampling.
	Model string `json:"model,omitempty"`
	// APIKeyEnv is the NAME of the environment variable holding the API
	// key (the key itself is never stored in config). Required for
	// anthropic; optional for openai-compatible local servers.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// Timeout bounds each attempt of one call (default 60s).
	Timeout time.Duration `json:"timeout,omitempty"`
	// MaxConcurrency bounds calls in flight (default 4).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// MaxRetries bounds retries after a 429, 5xx or network failure
	// (default 3; negative means none).
	MaxRetries int `json:"max_retries,omitempty"`
	// Temperature for all calls (default 0.2; negative means 0).
	Temperature float64 `json:"temperature,omitempty"`
	// MaxTokens bounds an answer's length (default 1024).
	MaxTokens int `json:"max_tokens,omitempty"`
	// PromptMode is "detailed" (default) or "simple" (small, fast models).
	PromptMode string `json:"prompt_mode,omitempty"`
	// SummariesOnly keeps the deterministic tagger and uses the model for
	// summaries only (one call per segment instead of one per turn).
	SummariesOnly bool `json:"summaries_only,omitempty"`
	// TagRules customise topics by pattern.
	TagRules []TagRule `json:"tag_rules,omitempty"`
	// Prices adds to or overrides the built-in price table, by model name
	// or model-name prefix.
	Prices map[string]Price `json:"prices,omitempty"`

	// errs collects values ConfigFromEnv could not parse; Validate reports them.
	errs []error
}

// ConfigFromEnv reads the configuration from environment variables:
//
//	VC_LLM_PROVIDER         none | sampling | openai | anthropic
//	VC_LLM_BASE_URL         API base URL
//	VC_LLM_MODEL            model name
//	VC_LLM_API_KEY_ENV      name of the variable holding the API key
//	VC_LLM_TIMEOUT          per-attempt timeout (Go duration, or seconds)
//	VC_LLM_MAX_CONCURRENCY  calls in flight
//	VC_LLM_MAX_RETRIES      retries on 429/5xx/network failures
//	VC_LLM_TEMPERATURE      sampling temperature
//	VC_LLM_MAX_TOKENS       answer length bound
//	VC_LLM_PROMPT_MODE      detailed | simple
//	VC_LLM_SUMMARIES_ONLY   true: tag deterministically, summarise with the model
//	VC_LLM_TAG_RULES        JSON: [{"pattern":"db-*","priority":10,"summary_prompt":"..."}]
//	VC_LLM_PRICES           JSON: {"my-model":{"input":0.5,"output":1.5}} (USD per million tokens)
//
// Unset variables leave fields at their zero value (defaults). Values that
// do not parse are kept aside and reported by Validate.
func ConfigFromEnv(getenv func(string) string) Config {
	var c Config
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c.Provider = strings.ToLower(get("VC_LLM_PROVIDER"))
	c.BaseURL = get("VC_LLM_BASE_URL")
	c.Model = get("VC_LLM_MODEL")
	c.APIKeyEnv = get("VC_LLM_API_KEY_ENV")
	c.PromptMode = strings.ToLower(get("VC_LLM_PROMPT_MODE"))
	if v := get("VC_LLM_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			secs, err2 := strconv.ParseFloat(v, 64)
			if err2 != nil {
				c.errs = append(c.errs, fmt.Errorf("VC_LLM_TIMEOUT=%q: want a duration such as 30s: %w", v, ErrConfig))
			}
			d = time.Duration(secs * float64(time.Second))
		}
		c.Timeout = d
	}
	c.MaxConcurrency = c.envInt(get, "VC_LLM_MAX_CONCURRENCY")
	c.MaxRetries = c.envInt(get, "VC_LLM_MAX_RETRIES")
	c.MaxTokens = c.envInt(get, "VC_LLM_MAX_TOKENS")
	if v := get("VC_LLM_TEMPERATURE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("VC_LLM_TEMPERATURE=%q: %w", v, ErrConfig))
		}
		c.Temperature = f
	}
	if v := get("VC_LLM_SUMMARIES_ONLY"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("VC_LLM_SUMMARIES_ONLY=%q: want true or false: %w", v, ErrConfig))
		}
		c.SummariesOnly = b
	}
	if v := get("VC_LLM_TAG_RULES"); v != "" {
		if err := json.Unmarshal([]byte(v), &c.TagRules); err != nil {
			c.errs = append(c.errs, fmt.Errorf("VC_LLM_TAG_RULES: want a JSON array of {pattern, priority, summary_prompt, ttl_days}: %v: %w", err, ErrConfig))
		}
	}
	if v := get("VC_LLM_PRICES"); v != "" {
		if err := json.Unmarshal([]byte(v), &c.Prices); err != nil {
			c.errs = append(c.errs, fmt.Errorf("VC_LLM_PRICES: want a JSON object of model -> {input, output}: %v: %w", err, ErrConfig))
		}
	}
	return c
}

func (c *Config) envInt(get func(string) string, key string) int {
	v := get(key)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s=%q: want an integer: %w", key, v, ErrConfig))
	}
	return n
}

// Enabled reports whether a model provider is configured.
func (c Config) Enabled() bool {
	return c.Provider != "" && c.Provider != ProviderNone
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Provider == "" {
		c.Provider = ProviderNone
	}
	if url, ok := localServers[c.Provider]; ok {
		c.Provider = ProviderOpenAI
		if c.BaseURL == "" {
			c.BaseURL = url
		}
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxConcurrency <= 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	switch {
	case c.Temperature == 0:
		c.Temperature = DefaultTemperature
	case c.Temperature < 0:
		c.Temperature = 0
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.PromptMode == "" {
		c.PromptMode = string(prompts.Detailed)
	}
	if c.BaseURL == "" {
		switch c.Provider {
		case ProviderOpenAI:
			c.BaseURL = DefaultOpenAIBaseURL
		case ProviderAnthropic:
			c.BaseURL = DefaultAnthropicURL
		}
	}
	return c
}

// Validate reports every problem with c at once (errors.Join), each
// wrapping ErrConfig.
func (c Config) Validate() error {
	errs := append([]error(nil), c.errs...)
	provider := c.Provider
	if _, ok := localServers[provider]; ok {
		provider = ProviderOpenAI
	}
	switch provider {
	case "", ProviderNone, ProviderSampling:
	case ProviderOpenAI, ProviderAnthropic:
		if c.Model == "" {
			errs = append(errs, fmt.Errorf("provider %s needs a model (VC_LLM_MODEL): %w", c.Provider, ErrConfig))
		}
		if provider == ProviderAnthropic && c.APIKeyEnv == "" {
			errs = append(errs, fmt.Errorf("provider anthropic needs VC_LLM_API_KEY_ENV, the name of the variable holding the key: %w", ErrConfig))
		}
	default:
		errs = append(errs, fmt.Errorf("provider %q: want none, sampling, openai (or ollama, lmstudio, vllm) or anthropic: %w", c.Provider, ErrConfig))
	}
	if c.APIKeyEnv != "" && strings.HasPrefix(c.APIKeyEnv, "sk-") {
		errs = append(errs, fmt.Errorf("VC_LLM_API_KEY_ENV holds the NAME of a variable (e.g. OPENAI_API_KEY), not the key itself: %w", ErrConfig))
	}
	if _, err := prompts.ParseMode(c.PromptMode); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", err, ErrConfig))
	}
	if c.MaxConcurrency > 64 {
		errs = append(errs, fmt.Errorf("max concurrency %d: at most 64: %w", c.MaxConcurrency, ErrConfig))
	}
	for _, r := range c.TagRules {
		if _, err := path.Match(r.Pattern, "x"); err != nil || r.Pattern == "" {
			errs = append(errs, fmt.Errorf("tag rule pattern %q: not a valid fnmatch pattern: %w", r.Pattern, ErrConfig))
		}
		if r.TTLDays < 0 {
			errs = append(errs, fmt.Errorf("tag rule %q: ttl_days %d: want 0 (keep for ever) or more: %w", r.Pattern, r.TTLDays, ErrConfig))
		}
	}
	return errors.Join(errs...)
}

// Label names the provider and model, e.g. "openai/gpt-4o-mini".
func (c Config) Label() string {
	if c.Model == "" {
		return c.Provider
	}
	return c.Provider + "/" + c.Model
}

// Rule returns the rule for tag: the highest-priority rule whose pattern
// matches (the first listed on a tie).
func (c Config) Rule(tag string) (TagRule, bool) {
	best, found := TagRule{}, false
	for _, r := range c.TagRules {
		if ok, err := path.Match(r.Pattern, tag); err != nil || !ok {
			continue
		}
		if !found || r.Priority > best.Priority {
			best, found = r, true
		}
	}
	return best, found
}

// TTL is how long turns of tag are kept: its rule's ttl_days, when set.
func (c Config) TTL(tag string) (time.Duration, bool) {
	r, ok := c.Rule(tag)
	if !ok || r.TTLDays <= 0 {
		return 0, false
	}
	return time.Duration(r.TTLDays) * 24 * time.Hour, true
}

// HasTTL reports whether any tag rule sets a TTL.
func (c Config) HasTTL() bool {
	for _, r := range c.TagRules {
		if r.TTLDays > 0 {
			return true
		}
	}
	return false
}

// Priority is the assembly priority of tag: its rule's, or 0.
func (c Config) Priority(tag string) int {
	r, _ := c.Rule(tag)
	return r.Priority
}

// defaultPrices are list prices in USD per million tokens (input, output),
// matched by longest model-name prefix. Local servers cost nothing; models
// not listed are reported with a cost of 0 and flagged in the cost report.
// Override or extend them with Config.Prices.
var defaultPrices = map[string]Price{
	"gpt-4o-mini":      {Input: 0.15, Output: 0.60},
	"gpt-4o":           {Input: 2.50, Output: 10.00},
	"gpt-4.1-nano":     {Input: 0.10, Output: 0.40},
	"gpt-4.1-mini":     {Input: 0.40, Output: 1.60},
	"gpt-4.1":          {Input: 2.00, Output: 8.00},
	"claude-3-5-haiku": {Input: 0.80, Output: 4.00},
	"claude-haiku-4-5": {Input: 1.00, Output: 5.00},
	"claude-sonnet-4":  {Input: 3.00, Output: 15.00},
	"claude-opus-4":    {Input: 15.00, Output: 75.00},
}

// price returns the price of model and whether one is known.
func (c Config) price(provider, model string) (Price, bool) {
	if provider == ProviderSampling {
		// The client pays for its own model; vc-mcp cannot know the price.
		return Price{}, false
	}
	table := make(map[string]Price, len(defaultPrices)+len(c.Prices))
	for k, v := range defaultPrices {
		table[k] = v
	}
	for k, v := range c.Prices {
		table[k] = v
	}
	if p, ok := table[model]; ok {
		return p, true
	}
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	// Longest prefix first, so "gpt-4o-mini-2024-07-18" is priced as gpt-4o-mini.
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		if strings.HasPrefix(model, k) {
			return table[k], true
		}
	}
	return Price{}, false
}
