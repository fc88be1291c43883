package llm

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigFromEnv(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr string
	}{
		{"empty", nil, Config{}, ""},
		{"openai full", map[string]string{
			"VC_LLM_PROVIDER": "OpenAI", "VC_LLM_BASE_URL": "http://127.0.0.1:9/v1", "VC_LLM_MODEL": "gpt-4o-mini",
			"VC_LLM_API_KEY_ENV": "MY_KEY", "VC_LLM_TIMEOUT": "15s", "VC_LLM_MAX_CONCURRENCY": "8", "VC_LLM_MAX_RETRIES": "5",
			"VC_LLM_TEMPERATURE": "0.5", "VC_LLM_MAX_TOKENS": "800", "VC_LLM_PROMPT_MODE": "simple", "VC_LLM_SUMMARIES_ONLY": "true",
			"VC_LLM_TAG_RULES": `[{"pattern":"db-*","priority":10,"summary_prompt":"keep SQL"}]`,
			"VC_LLM_PRICES":    `{"my-model":{"input":0.5,"output":1.5}}`,
		}, Config{
			Provider: "openai", BaseURL: "http://127.0.0.1:9/v1", Model: "gpt-4o-mini", APIKeyEnv: "MY_KEY",
			Timeout: 15 * time.Second, MaxConcurrency: 8, MaxRetries: 5, Temperature: 0.5, MaxTokens: 800,
			PromptMode: "simple", SummariesOnly: true,
			TagRules: []TagRule{{Pattern: "db-*", Priority: 10, SummaryPrompt: "keep SQL"}},
			Prices:   map[string]Price{"my-model": {Input: 0.5, Output: 1.5}},
		}, ""},
		{"timeout in seconds", map[string]string{"VC_LLM_TIMEOUT": "2.5"}, Config{Timeout: 2500 * time.Millisecond}, ""},
		{"bad values reported", map[string]string{"VC_LLM_MAX_RETRIES": "many", "VC_LLM_TIMEOUT": "soon", "VC_LLM_TAG_RULES": "{"},
			Config{}, "VC_LLM_TIMEOUT"},
		{"unknown provider", map[string]string{"VC_LLM_PROVIDER": "gemini"}, Config{Provider: "gemini"}, "want none, sampling"},
		{"key instead of name", map[string]string{"VC_LLM_PROVIDER": "openai", "VC_LLM_MODEL": "m", "VC_LLM_API_KEY_ENV": "sk-abc"},
			Config{Provider: "openai", Model: "m", APIKeyEnv: "sk-abc"}, "NAME of a variable"},
		{"anthropic needs key env", map[string]string{"VC_LLM_PROVIDER": "anthropic", "VC_LLM_MODEL": "claude-haiku-4-5"},
			Config{Provider: "anthropic", Model: "claude-haiku-4-5"}, "VC_LLM_API_KEY_ENV"},
		{"openai needs model", map[string]string{"VC_LLM_PROVIDER": "ollama"}, Config{Provider: "ollama"}, "needs a model"},
		{"bad mode", map[string]string{"VC_LLM_PROMPT_MODE": "verbose"}, Config{PromptMode: "verbose"}, "prompt mode"},
		{"bad pattern", map[string]string{"VC_LLM_TAG_RULES": `[{"pattern":"[x"}]`}, Config{TagRules: []TagRule{{Pattern: "[x"}}}, "fnmatch"},
		{"ttl", map[string]string{"VC_LLM_TAG_RULES": `[{"pattern":"tmp-*","ttl_days":7}]`}, Config{TagRules: []TagRule{{Pattern: "tmp-*", TTLDays: 7}}}, ""},
		{"negative ttl", map[string]string{"VC_LLM_TAG_RULES": `[{"pattern":"tmp-*","ttl_days":-1}]`}, Config{TagRules: []TagRule{{Pattern: "tmp-*", TTLDays: -1}}}, "ttl_days"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ConfigFromEnv(envOf(tc.env))
			err := got.Validate()
			got.errs = nil
			if tc.wantErr == "" && err != nil {
				t.Errorf("got error %v, want none", err)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrConfig) {
					t.Errorf("got error %v, want ErrConfig mentioning %q", err, tc.wantErr)
				}
				if tc.name == "bad values reported" {
					return // the fields hold whatever failed to parse
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	cases := []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{Provider: "none", Timeout: DefaultTimeout, MaxConcurrency: 4, MaxRetries: 3, Temperature: 0.2, MaxTokens: 1024, PromptMode: "detailed"}},
		{"ollama shorthand", Config{Provider: "ollama", Model: "llama3.2:3b", MaxRetries: -1, Temperature: -1},
			Config{Provider: "openai", BaseURL: "http://localhost:11434/v1", Model: "llama3.2:3b", Timeout: DefaultTimeout, MaxConcurrency: 4, MaxTokens: 1024, PromptMode: "detailed"}},
		{"anthropic url", Config{Provider: "anthropic"}, Config{Provider: "anthropic", BaseURL: DefaultAnthropicURL, Timeout: DefaultTimeout, MaxConcurrency: 4, MaxRetries: 3, Temperature: 0.2, MaxTokens: 1024, PromptMode: "detailed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.WithDefaults(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestTTL(t *testing.T) {
	c := Config{TagRules: []TagRule{{Pattern: "tmp-*", Priority: 1, TTLDays: 7}, {Pattern: "tmp-keep", Priority: 2}, {Pattern: "*"}}}
	if !c.HasTTL() {
		t.Fatal("HasTTL: false")
	}
	cases := []struct {
		tag  string
		want time.Duration
		ok   bool
	}{
		{"tmp-scratch", 7 * 24 * time.Hour, true},
		{"tmp-keep", 0, false}, // its own higher-priority rule has no TTL
		{"budget", 0, false},
	}
	for _, tc := range cases {
		if got, ok := c.TTL(tc.tag); got != tc.want || ok != tc.ok {
			t.Errorf("TTL(%q) = %v, %v; want %v, %v", tc.tag, got, ok, tc.want, tc.ok)
		}
	}
	if (Config{TagRules: []TagRule{{Pattern: "*"}}}).HasTTL() {
		t.Error("HasTTL without ttl_days: true")
	}
}

func TestRule(t *testing.T) {
	c := Config{TagRules: []TagRule{
		{Pattern: "*", Priority: 0, SummaryPrompt: "any"},
		{Pattern: "db-*", Priority: 5, SummaryPrompt: "db"},
		{Pattern: "db-postgres", Priority: 5, SummaryPrompt: "tie: first listed wins"},
		{Pattern: "trip-?", Priority: 9, SummaryPrompt: "one-char trip"},
	}}
	cases := []struct {
		tag    string
		want   string
		wantOK bool
	}{
		{"db-postgres", "db", true},
		{"trip-a", "one-char trip", true},
		{"trip-ab", "any", true},
		{"budget", "any", true},
	}
	for _, tc := range cases {
		t.Run(tc.tag, func(t *testing.T) {
			got, ok := c.Rule(tc.tag)
			if got.SummaryPrompt != tc.want || ok != tc.wantOK {
				t.Errorf("got %q, %v; want %q, %v", got.SummaryPrompt, ok, tc.want, tc.wantOK)
			}
		})
	}
	if _, ok := (Config{}).Rule("x"); ok {
		t.Errorf("got a rule from an empty config, want none")
	}
}

func TestPrice(t *testing.T) {
	c := Config{Prices: map[string]Price{"gpt-4o": {Input: 1, Output: 2}, "llama3.2": {}}}
	cases := []struct {
		provider, model string
		want            Price
		wantOK          bool
	}{
		{"openai", "gpt-4o-mini-2024-07-18", Price{Input: 0.15, Output: 0.60}, true},
		{"openai", "gpt-4o-2024-08-06", Price{Input: 1, Output: 2}, true},
		{"openai", "llama3.2:3b", Price{}, true},
		{"openai", "mystery", Price{}, false},
		{"sampling", "gpt-4o", Price{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			got, ok := c.price(tc.provider, tc.model)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %+v, %v; want %+v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestNewCompleter(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer from-env" {
			writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "no key"}})
			return
		}
		openAIAnswer(w, "m", "hi", 1, 1)
	})
	env := envOf(map[string]string{"VC_LLM_PROVIDER": "openai", "VC_LLM_BASE_URL": srv.URL, "VC_LLM_MODEL": "m", "VC_LLM_API_KEY_ENV": "TEST_KEY", "TEST_KEY": "from-env"})
	c, err := NewCompleter(ConfigFromEnv(env), env, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Complete(t.Context(), Request{Messages: []Message{{Role: "user", Content: "x"}}}); err != nil || resp.Text != "hi" {
		t.Errorf("got %+v, %v; want hi", resp, err)
	}

	cases := []struct {
		name    string
		env     map[string]string
		wantErr error
	}{
		{"empty key variable", map[string]string{"VC_LLM_PROVIDER": "anthropic", "VC_LLM_MODEL": "c", "VC_LLM_API_KEY_ENV": "UNSET"}, ErrUnavailable},
		{"sampling is not HTTP", map[string]string{"VC_LLM_PROVIDER": "sampling"}, ErrUnavailable},
		{"invalid", map[string]string{"VC_LLM_PROVIDER": "openai"}, ErrConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewCompleter(ConfigFromEnv(envOf(tc.env)), envOf(tc.env), nil)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("got %v, want %v", err, tc.wantErr)
			}
		})
	}
}
