package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/llm"
)

// settings is every setting of vc-mcp. Each one is a key below, set from (in
// order of precedence) a flag, a VC_* environment variable, the YAML config
// file, the chosen preset, or its default.
type settings struct {
	ConfigFile          string
	DataDir             string
	Preset              string
	DefaultConversation string
	ContextWindow       int
	SoftThreshold       float64
	HardThreshold       float64
	ProtectedTurns      int
	MaxMessageBytes     int
	LogLevel            string
	LogFile             string
	MarkdownMirror      string
	Store               string // "" or a postgres:// URL (store.go)
	HTTPAddr            string
	AllowRemote         bool
	ReadOnly            bool
	AllowOrigins        []string
	ModelDir            string
	LLMProvider         string
	LLMBaseURL          string
	LLMModel            string
	LLMAPIKeyEnv        string
	// Privacy and HTTP limits (privacy.go).
	Scrub          bool
	ScrubAllow     []string
	ScrubRules     string
	AuthTokenFile  string
	MaxBodyBytes   int
	SessionIdleTTL time.Duration
	MaxSessions    int
	MaxLineBytes   int
	// Tagging and assembly (config_file.go holds the YAML-only keys).
	MinTagsPerTurn       int
	MaxTagsPerTurn       int
	SplitMinTurns        int
	SplitMaxShare        float64
	MaxSplitsPerTurn     int
	ContextHintMaxTokens int
	TagRules             []llm.TagRule
	KeywordTags          map[string][]string
	ModelContextLimits   map[string]int
	// Context items (items.go).
	ContextItems  []memory.ContextItem
	ContextSearch memory.ContextSearch
	// Summary replacement and the topics hint (run-time settings, see
	// /api/config).
	SummaryReplacement bool
	KeepLast           int
	UseSimplePrompt    bool
	NotifyUser         bool
	SummaryPrompt      string
	SimplePrompt       string
	ContextHintStyle   string
	// Assembly is how recall lays a conversation out (memory.Options.Assembly).
	Assembly string
}

// settingKey is one documented setting.
type settingKey struct {
	name   string // YAML key
	env    string
	flag   string
	def    func() string
	help   string
	isBool bool
	set    func(c *settings, v string) error
	// decode, for a key only the config file can set (no flag, no env),
	// reads its YAML value (a list or a map).
	decode func(c *settings, n *yaml.Node) error
}

func constant(s string) func() string { return func() string { return s } }

// settingKeys is the single source of the configuration's documentation (the
// README table is generated from it, see TestREADMEConfig).
var settingKeys = []settingKey{
	{name: "config", env: "VC_CONFIG", flag: "config", def: defaultConfigFile,
		help: "YAML config file. A missing default file is fine; a missing explicit one is an error.",
		set:  func(c *settings, v string) error { c.ConfigFile = v; return nil }},
	{name: "data_dir", env: "VC_DATA_DIR", flag: "data-dir", def: defaultDataDir,
		help: "Data directory: master logs, vc.db and the index. Per user by default: `$XDG_DATA_HOME/vc-mcp` or `~/.local/share/vc-mcp` (Linux), `~/Library/Application Support/vc-mcp` (macOS), `%LOCALAPPDATA%\\vc-mcp` (Windows).",
		set:  func(c *settings, v string) error { c.DataDir = v; return nil }},
	{name: "preset", env: "VC_PRESET", flag: "preset", def: constant("chat"),
		help: "Window and thresholds for a kind of client: `chat` (120k window, 0.70/0.85, 6 protected turns), `coding` (200k, 0.75/0.90, 10), `agentic` (200k, 0.60/0.80, 12), `small-local` (8k, 0.60/0.80, 4), `ollama-4gb` (4k, 0.60/0.80, 3), `ollama-8gb` (8k, 0.65/0.80, 4), `openai` (128k, 0.75/0.90, 8), `anthropic` (200k, 0.75/0.90, 8). Settings given explicitly override it; `vc-mcp init PRESET` also writes the preset's LLM settings.",
		set:  setPreset},
	{name: "default_conversation", env: "VC_DEFAULT_CONVERSATION", flag: "default-conversation", def: constant("default"),
		help: "Memory space used when a request names no conversation_id.",
		set:  func(c *settings, v string) error { c.DefaultConversation = v; return nil }},
	{name: "context_window", env: "VC_CONTEXT_WINDOW", flag: "context-window", def: constant("120000"),
		help: "The client model's context window in cl100k tokens; thresholds are fractions of it.",
		set:  intSetter(func(c *settings) *int { return &c.ContextWindow }, 1000, 10_000_000)},
	{name: "soft_threshold", env: "VC_SOFT_THRESHOLD", flag: "soft-threshold", def: constant("0.70"),
		help: "Fraction of the window at which compaction starts.",
		set:  floatSetter(func(c *settings) *float64 { return &c.SoftThreshold })},
	{name: "hard_threshold", env: "VC_HARD_THRESHOLD", flag: "hard-threshold", def: constant("0.85"),
		help: "Fraction of the window at which compaction always runs.",
		set:  floatSetter(func(c *settings) *float64 { return &c.HardThreshold })},
	{name: "protected_turns", env: "VC_PROTECTED_TURNS", flag: "protected-turns", def: constant("6"),
		help: "Most recent turns compaction never touches.",
		set:  intSetter(func(c *settings) *int { return &c.ProtectedTurns }, 0, 10_000)},
	{name: "max_message_bytes", env: "VC_MAX_MESSAGE_BYTES", flag: "max-message-bytes", def: constant("1048576"),
		help: "Largest message content accepted, in bytes (1 MiB); larger ones are refused with an error naming the limit.",
		set:  intSetter(func(c *settings) *int { return &c.MaxMessageBytes }, 1024, 1<<30)},
	{name: "assembly", env: "VC_ASSEMBLY", flag: "assembly", def: constant("relevance"),
		help: "How recall lays out one conversation: `relevance` (the turns that answer the message, ranked, with topic summaries) or `hierarchical` (recent turns whole, earlier ones as per-message summaries made lazily, the oldest as segment summaries). See Hierarchical assembly.",
		set:  setAssembly},
	{name: "log_level", env: "VC_LOG_LEVEL", flag: "log-level", def: constant("info"),
		help: "debug, info, warn or error. Conversation text is never logged above debug.",
		set:  setLogLevel},
	{name: "log_file", env: "VC_LOG_FILE", flag: "log-file", def: constant(""),
		help: "Append logs (JSON lines) to this file instead of stderr.",
		set:  func(c *settings, v string) error { c.LogFile = v; return nil }},
	{name: "markdown_mirror", env: "VC_MARKDOWN_MIRROR", flag: "markdown-mirror", def: constant(""),
		help: "Directory where `serve` keeps a Markdown view of memory up to date (see Markdown view); it is never read back. Empty = no mirror.",
		set:  func(c *settings, v string) error { c.MarkdownMirror = v; return nil }},
	{name: "store", env: "VC_STORE", flag: "store", def: constant(""),
		help: "Where the memory lives: empty for the data directory alone, or a `postgres://user@host:5432/db` URL to share one memory between vc-mcp processes and machines; the data directory then holds this process's cache of it (see Team memory on PostgreSQL). Give the password with `PGPASSWORD` or `~/.pgpass`, not in the URL.",
		set:  setStore},
	{name: "read_only", env: "VC_READ_ONLY", flag: "read-only", def: constant("false"), isBool: true,
		help: "Serve the data directory without writing to it (a backup, another user's memory): recall, find_quote, expand_topic and the resources answer; calls that would store, forget or change anything are refused with a message saying so. A data directory this user cannot write is served so without it. See Read-only memory.",
		set:  boolSetter(func(c *settings) *bool { return &c.ReadOnly })},
	{name: "http", env: "VC_HTTP", flag: "http", def: constant(""),
		help: "Serve Streamable HTTP at `/mcp` and legacy SSE at `/sse` on this address (e.g. `127.0.0.1:5757`) instead of stdio.",
		set:  func(c *settings, v string) error { c.HTTPAddr = v; return nil }},
	{name: "allow_remote", env: "VC_ALLOW_REMOTE", flag: "allow-remote", def: constant("false"), isBool: true,
		help: "Allow `http` to bind a non-loopback address. Requires `auth_token_file`; see Remote access and auth.",
		set:  boolSetter(func(c *settings) *bool { return &c.AllowRemote })},
	{name: "allow_origins", env: "VC_ALLOW_ORIGINS", flag: "allow-origin", def: constant(""),
		help: "Comma-separated browser Origins accepted over HTTP besides loopback ones (`*` = any).",
		set:  setOrigins},
	{name: "model_dir", env: "VC_MODEL_DIR", flag: "model-dir", def: constant(""),
		help: "Directory of the local embedding model (`vc-mcp model pull` fills it); empty means `<user cache dir>/vc-mcp/models/all-MiniLM-L6-v2`. Without a model, retrieval is lexical.",
		set:  func(c *settings, v string) error { c.ModelDir = v; return nil }},
	{name: "llm_provider", env: "VC_LLM_PROVIDER", flag: "llm-provider", def: constant(""),
		help: "LLM for tagging and summaries (e.g. `openai`, `anthropic`, `ollama`); empty = none, the deterministic tagger and extractive summaries.",
		set:  func(c *settings, v string) error { c.LLMProvider = v; return nil }},
	{name: "llm_base_url", env: "VC_LLM_BASE_URL", flag: "llm-base-url", def: constant(""),
		help: "Base URL of the LLM provider's API (for OpenAI-compatible local servers).",
		set:  func(c *settings, v string) error { c.LLMBaseURL = v; return nil }},
	{name: "llm_model", env: "VC_LLM_MODEL", flag: "llm-model", def: constant(""),
		help: "LLM model name.",
		set:  func(c *settings, v string) error { c.LLMModel = v; return nil }},
	{name: "llm_api_key_env", env: "VC_LLM_API_KEY_ENV", flag: "llm-api-key-env", def: constant(""),
		help: "Name of the environment variable holding the LLM API key (the key itself is never put in config).",
		set:  func(c *settings, v string) error { c.LLMAPIKeyEnv = v; return nil }},
	{name: "scrub", env: "VC_SCRUB", flag: "scrub", def: constant("true"), isBool: true,
		help: "Replace credentials (API keys, tokens, private keys, passwords) with placeholders such as `[secret:openai-key]` before anything is stored. See Privacy.",
		set:  boolSetter(func(c *settings) *bool { return &c.Scrub })},
	{name: "scrub_allow", env: "VC_SCRUB_ALLOW", flag: "scrub-allow", def: constant(""),
		help: "Comma-separated literal values never redacted (e.g. a published example key).",
		set:  func(c *settings, v string) error { c.ScrubAllow = splitList(v); return nil }},
	{name: "scrub_rules", env: "VC_SCRUB_RULES", flag: "scrub-rules", def: constant(""),
		help: "YAML file of extra rules (`extra: [{name, pattern}]`, Go regexps) and allow patterns (`allow: [regexp]`). See Privacy.",
		set:  func(c *settings, v string) error { c.ScrubRules = v; return nil }},
	{name: "auth_token_file", env: "VC_AUTH_TOKEN_FILE", flag: "auth-token-file", def: constant(""),
		help: "File holding the bearer token HTTP clients must send (`Authorization: Bearer <token>`), or one `OWNER TOKEN` per line to give each person a token and an owner (see Owners). Required with `allow_remote`. See Remote access and auth.",
		set:  func(c *settings, v string) error { c.AuthTokenFile = v; return nil }},
	{name: "max_body_bytes", env: "VC_MAX_BODY_BYTES", flag: "max-body-bytes", def: constant("4194304"),
		help: "Largest HTTP request body, in bytes (4 MiB); larger ones get 413.",
		set:  intSetter(func(c *settings) *int { return &c.MaxBodyBytes }, 4096, 1<<30)},
	{name: "max_line_bytes", env: "VC_MAX_LINE_BYTES", flag: "max-line-bytes", def: constant("8388608"),
		help: "Largest stdio JSON-RPC line, in bytes (8 MiB); a longer line gets a JSON-RPC error and the server keeps serving.",
		set:  intSetter(func(c *settings) *int { return &c.MaxLineBytes }, 4096, 1<<30)},
	{name: "session_idle_ttl", env: "VC_SESSION_IDLE_TTL", flag: "session-idle-ttl", def: constant("30m"),
		help: "HTTP sessions idle this long are closed (Go duration, e.g. `30m`).",
		set:  durationSetter(func(c *settings) *time.Duration { return &c.SessionIdleTTL })},
	{name: "max_sessions", env: "VC_MAX_SESSIONS", flag: "max-sessions", def: constant("256"),
		help: "Most live HTTP sessions; a new one beyond it gets 503 until others end or expire.",
		set:  intSetter(func(c *settings) *int { return &c.MaxSessions }, 1, 1_000_000)},
	{name: "min_tags_per_turn", env: "VC_MIN_TAGS_PER_TURN", flag: "min-tags-per-turn", def: constant("1"),
		help: "Fewest tags the keyword tagger gives a turn that has that many candidates, weaker ones included (1-5).",
		set:  intSetter(func(c *settings) *int { return &c.MinTagsPerTurn }, 1, 5)},
	{name: "max_tags_per_turn", env: "VC_MAX_TAGS_PER_TURN", flag: "max-tags-per-turn", def: constant("5"),
		help: "Most tags the keyword tagger gives one turn (1-5).",
		set:  intSetter(func(c *settings) *int { return &c.MaxTagsPerTurn }, 1, 5)},
	{name: "split_min_turns", env: "VC_SPLIT_MIN_TURNS", flag: "split-min-turns", def: constant("40"),
		help: "A tag is offered for splitting into narrower ones (with an LLM) once it has at least this many turns and more than `split_max_share` of the conversation's tagged turns.",
		set:  intSetter(func(c *settings) *int { return &c.SplitMinTurns }, 2, 1_000_000)},
	{name: "split_max_share", env: "VC_SPLIT_MAX_SHARE", flag: "split-max-share", def: constant("0.25"),
		help: "The share of a conversation's tagged turns above which a tag is over-broad (see `split_min_turns`).",
		set:  floatSetter(func(c *settings) *float64 { return &c.SplitMaxShare })},
	{name: "max_splits_per_turn", env: "VC_MAX_SPLITS_PER_TURN", flag: "max-splits-per-turn", def: constant("1"),
		help: "Most tags offered for splitting after one `compact_context` call.",
		set:  intSetter(func(c *settings) *int { return &c.MaxSplitsPerTurn }, 1, 20)},
	{name: "context_hint_max_tokens", env: "VC_CONTEXT_HINT_MAX_TOKENS", flag: "context-hint-max-tokens", def: constant("0"),
		help: "Cap, in tokens, on the list of topics on record at the end of a recalled context; 0 = whatever budget is left.",
		set:  intSetter(func(c *settings) *int { return &c.ContextHintMaxTokens }, 0, 32_000)},
	{name: "tag_rules", def: constant(""),
		help:   "Config file only: a list of rules for the topics whose tag matches `match` (fnmatch, e.g. `db-*`): `priority` (higher topics come first in recalled context), `ttl_days` (how long its turns are kept), `summary_prompt` (guidance for its LLM summaries). The highest priority matching rule wins. `VC_LLM_TAG_RULES` (JSON) takes precedence.",
		decode: decodeTagRules},
	{name: "keyword_tags", def: constant(""),
		help:   "Config file only: a map of tag -> keywords; a turn that mentions a keyword gets the tag (e.g. `database: [postgres, pgx, sql]`).",
		decode: decodeKeywordTags},
	{name: "model_context_limits", def: constant(""),
		help:   "Config file only: a map of model name (prefix or glob) -> context window in tokens, over the built-in table (see Presets and model limits); the proxy sizes each request's window with it.",
		decode: decodeModelLimits},
	{name: "context_items", env: "VC_CONTEXT_ITEMS", flag: "context-items", def: constant(""),
		help: "Rules and references that join recall_context (see Context items): in the config file, a list of `{name, type: rule|reference, include: always|manual|agent, priority, description, text}` (or `file:` instead of `text:`, relative to the config file); as a flag or env, the path of a YAML file holding such a list.",
		set:  setContextItems},
	{name: "context_top_k", env: "VC_CONTEXT_TOP_K", flag: "context-top-k", def: constant("20"),
		help: "Agent context items: how many best-matching chunks (of ~500 characters) are considered per recall.",
		set:  intSetter(func(c *settings) *int { return &c.ContextSearch.TopK }, 1, 1000)},
	{name: "context_top_n", env: "VC_CONTEXT_TOP_N", flag: "context-top-n", def: constant("5"),
		help: "Agent context items: how many are included per recall (items scoring `context_include_score` or more may exceed it).",
		set:  intSetter(func(c *settings) *int { return &c.ContextSearch.TopN }, 1, 100)},
	{name: "context_include_score", env: "VC_CONTEXT_INCLUDE_SCORE", flag: "context-include-score", def: constant("0.7"),
		help: "Agent context items scoring at least this (0-1) are always included.",
		set:  scoreSetter(func(c *settings) *float64 { return &c.ContextSearch.IncludeScore }, false)},
	{name: "context_min_score", env: "VC_CONTEXT_MIN_SCORE", flag: "context-min-score", def: constant("0.3"),
		help: "Agent context items scoring below this (0-1) are never included.",
		set:  scoreSetter(func(c *settings) *float64 { return &c.ContextSearch.MinScore }, false)},
	{name: "context_share", env: "VC_CONTEXT_SHARE", flag: "context-share", def: constant("0.5"),
		help: "Fraction of a recall's budget context items may take; memory gets the rest.",
		set:  scoreSetter(func(c *settings) *float64 { return &c.ContextSearch.Share }, true)},
	{name: "summary_replacement", env: "VC_SUMMARY_REPLACEMENT", flag: "summary-replacement", def: constant("true"), isBool: true,
		help: "Summary-replacement mode (`compact_messages`, `POST /api/compact`): replace a conversation's older messages with one summary. Off, the messages come back unchanged (still stored). `enabled` in `/api/config`.",
		set:  boolSetter(func(c *settings) *bool { return &c.SummaryReplacement })},
	{name: "keep_last", env: "VC_KEEP_LAST", flag: "keep-last", def: constant("2"),
		help: "How many of the latest messages summary replacement keeps verbatim after the summary.",
		set:  intSetter(func(c *settings) *int { return &c.KeepLast }, 1, 1000)},
	{name: "use_simple_prompt", env: "VC_USE_SIMPLE_PROMPT", flag: "use-simple-prompt", def: constant("false"), isBool: true,
		help: "Summary replacement asks the summariser for the short prompt (faster; for small local models).",
		set:  boolSetter(func(c *settings) *bool { return &c.UseSimplePrompt })},
	{name: "notify_user", env: "VC_NOTIFY_USER", flag: "notify-user", def: constant("true"), isBool: true,
		help: "Summary replacement returns a one-line notice for the user that compaction happened.",
		set:  boolSetter(func(c *settings) *bool { return &c.NotifyUser })},
	{name: "summary_prompt", env: "VC_SUMMARY_PROMPT", flag: "summary-prompt", def: constant(""),
		help: "Instructions replacing the built-in guidance of summary replacement's detailed prompt (empty = built in); the answer format stays.",
		set:  promptSetter(func(c *settings) *string { return &c.SummaryPrompt })},
	{name: "simple_prompt", env: "VC_SIMPLE_PROMPT", flag: "simple-prompt", def: constant(""),
		help: "Instructions replacing the built-in guidance of the simple prompt (with `use_simple_prompt`; empty = built in).",
		set:  promptSetter(func(c *settings) *string { return &c.SimplePrompt })},
	{name: "context_hint_style", env: "VC_CONTEXT_HINT_STYLE", flag: "context-hint-style", def: constant("auto"),
		help: "Form of the topics hint at the end of a recall: `short` (a list, one line per topic), `dashboard` (tokens per topic, depth, budget left) or `auto` (by the client's model or app name; see Topics hint).",
		set:  setHintStyle},
}

func promptSetter(field func(*settings) *string) func(*settings, string) error {
	return func(c *settings, v string) error {
		if len(v) > memory.MaxPromptBytes {
			return fmt.Errorf("is %d bytes; the limit is %d", len(v), memory.MaxPromptBytes)
		}
		*field(c) = v
		return nil
	}
}

func setHintStyle(c *settings, v string) error {
	st, err := memory.ParseHintStyle(v)
	if err != nil {
		return fmt.Errorf("must be auto, short or dashboard, got %q", v)
	}
	c.ContextHintStyle = string(st)
	return nil
}

func durationSetter(field func(*settings) *time.Duration) func(*settings, string) error {
	return func(c *settings, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return fmt.Errorf("must be a positive duration such as 30m, got %q", v)
		}
		*field(c) = d
		return nil
	}
}

type presetValues struct {
	window    int
	soft      float64
	hard      float64
	protected int
	// For `vc-mcp init`: what the preset is for, and its LLM settings.
	about                                 string
	llmProvider, llmModel, llmKeyEnv, llm string
}

var presets = map[string]presetValues{
	"chat":        {window: 120_000, soft: 0.70, hard: 0.85, protected: 6, about: "a chat assistant"},
	"coding":      {window: 200_000, soft: 0.75, hard: 0.90, protected: 10, about: "software development"},
	"agentic":     {window: 200_000, soft: 0.60, hard: 0.80, protected: 12, about: "agents with long tool-heavy sessions"},
	"small-local": {window: 8_192, soft: 0.60, hard: 0.80, protected: 4, about: "a small local model"},
	"ollama-4gb": {window: 4_096, soft: 0.60, hard: 0.80, protected: 3, about: "Ollama on a 4 GB GPU (num_ctx 4096)",
		llmProvider: "ollama", llmModel: "llama3.2:1b", llm: "run `ollama pull llama3.2:1b` first"},
	"ollama-8gb": {window: 8_192, soft: 0.65, hard: 0.80, protected: 4, about: "Ollama on an 8 GB GPU (num_ctx 8192)",
		llmProvider: "ollama", llmModel: "llama3.2:3b", llm: "run `ollama pull llama3.2:3b` first"},
	"openai": {window: 128_000, soft: 0.75, hard: 0.90, protected: 8, about: "OpenAI models (gpt-4o class)",
		llmProvider: "openai", llmModel: "gpt-4o-mini", llmKeyEnv: "OPENAI_API_KEY", llm: "the key is read from OPENAI_API_KEY"},
	"anthropic": {window: 200_000, soft: 0.75, hard: 0.90, protected: 8, about: "Anthropic Claude models",
		llmProvider: "anthropic", llmModel: "claude-3-5-haiku-latest", llmKeyEnv: "ANTHROPIC_API_KEY", llm: "the key is read from ANTHROPIC_API_KEY"},
}

func setPreset(c *settings, v string) error {
	if _, ok := presets[v]; !ok {
		names := make([]string, 0, len(presets))
		for n := range presets {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("unknown preset %q (one of %s)", v, strings.Join(names, ", "))
	}
	c.Preset = v
	return nil
}

func setLogLevel(c *settings, v string) error {
	switch strings.ToLower(v) {
	case "debug", "info", "warn", "error":
		c.LogLevel = strings.ToLower(v)
		return nil
	}
	return fmt.Errorf("must be debug, info, warn or error, got %q", v)
}

func setOrigins(c *settings, v string) error {
	c.AllowOrigins = nil
	for o := range strings.SplitSeq(v, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.AllowOrigins = append(c.AllowOrigins, o)
		}
	}
	return nil
}

func intSetter(field func(*settings) *int, lo, hi int) func(*settings, string) error {
	return func(c *settings, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("must be an integer, got %q", v)
		}
		if n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d, got %d", lo, hi, n)
		}
		*field(c) = n
		return nil
	}
}

func floatSetter(field func(*settings) *float64) func(*settings, string) error {
	return func(c *settings, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 || f >= 1 {
			return fmt.Errorf("must be a fraction between 0 and 1, got %q", v)
		}
		*field(c) = f
		return nil
	}
}

func boolSetter(field func(*settings) *bool) func(*settings, string) error {
	return func(c *settings, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", v)
		}
		*field(c) = b
		return nil
	}
}

// flagValue records a flag's raw value; the layers are applied in order
// after parsing.
type flagValue struct {
	val    string
	set    bool
	isBool bool
}

func (f *flagValue) String() string   { return f.val }
func (f *flagValue) IsBoolFlag() bool { return f.isBool }
func (f *flagValue) Set(v string) error {
	f.val, f.set = v, true
	return nil
}

// loadConfig parses args (the subcommand's flags) and builds the config from
// flags > VC_* env > config file > preset > defaults. It returns the
// remaining positional arguments.
func loadConfig(name string, args []string, getenv func(string) string, stderr io.Writer) (settings, []string, error) {
	fs := flag.NewFlagSet("vc-mcp "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := make(map[string]*flagValue, len(settingKeys))
	for _, k := range settingKeys {
		if k.decode != nil {
			continue
		}
		fv := &flagValue{isBool: k.isBool}
		flags[k.name] = fv
		fs.Var(fv, k.flag, k.help)
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: vc-mcp %s [flags]\n\nFlags (each also settable as VC_* env or in the config file):\n", name)
		printSettingsFlags(stderr)
	}
	if err := fs.Parse(args); err != nil {
		return settings{}, nil, err
	}
	given := map[string]string{}
	for name, fv := range flags {
		if fv.set {
			given[name] = fv.val
		}
	}
	c, err := resolveSettings(given, getenv)
	if err != nil {
		return settings{}, nil, err
	}
	return c, fs.Args(), nil
}

// resolveSettings builds the config from the flags given (setting name ->
// raw value) > VC_* env > config file > preset > defaults.
func resolveSettings(given map[string]string, getenv func(string) string) (settings, error) {
	raw := make(map[string]string, len(settingKeys))
	source := make(map[string]string, len(settingKeys))
	for _, k := range settingKeys {
		raw[k.name], source[k.name] = k.def(), "default"
	}
	explicit := map[string]bool{}
	// The config file and the preset can themselves come from env or flags.
	for _, k := range settingKeys {
		if v := getenv(k.env); k.env != "" && v != "" {
			raw[k.name], source[k.name], explicit[k.name] = v, "env "+k.env, true
		}
		if v, ok := given[k.name]; ok {
			raw[k.name], source[k.name], explicit[k.name] = v, "flag --"+k.flag, true
		}
	}
	file, err := readConfigFile(raw["config"], explicit["config"])
	if err != nil {
		return settings{}, err
	}
	for name, v := range file.scalars {
		if !explicit[name] {
			raw[name], source[name], explicit[name] = v, fmt.Sprintf("config file %s line %d", raw["config"], file.lines[name]), true
		}
	}

	var c settings
	apply := func(k settingKey) error {
		if err := k.set(&c, raw[k.name]); err != nil {
			return fmt.Errorf("%s (from %s): %w", k.name, source[k.name], err)
		}
		return nil
	}
	for _, k := range settingKeys {
		if k.decode != nil {
			if n := file.nodes[k.name]; n != nil {
				if err := k.decode(&c, n); err != nil {
					return settings{}, fmt.Errorf("config file %s: %w", raw["config"], err)
				}
			}
			continue
		}
		if err := apply(k); err != nil {
			return settings{}, err
		}
	}
	// The preset replaces the defaults of the settingKeys it covers, never an
	// explicit setting.
	p := presets[c.Preset]
	if !explicit["context_window"] {
		c.ContextWindow = p.window
	}
	if !explicit["soft_threshold"] {
		c.SoftThreshold = p.soft
	}
	if !explicit["hard_threshold"] {
		c.HardThreshold = p.hard
	}
	if !explicit["protected_turns"] {
		c.ProtectedTurns = p.protected
	}
	if c.SoftThreshold >= c.HardThreshold {
		return settings{}, fmt.Errorf("soft_threshold (%.2f) must be below hard_threshold (%.2f)", c.SoftThreshold, c.HardThreshold)
	}
	if c.DataDir == "" {
		return settings{}, errors.New("data_dir: no per-user default on this system; set --data-dir or VC_DATA_DIR")
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return settings{}, fmt.Errorf("data_dir: %w", err)
	}
	c.DataDir = abs
	if c.MarkdownMirror != "" {
		m, err := filepath.Abs(c.MarkdownMirror)
		if err != nil {
			return settings{}, fmt.Errorf("markdown_mirror: %w", err)
		}
		if m == c.DataDir {
			return settings{}, errors.New("markdown_mirror: must not be the data directory; choose a directory of its own")
		}
		c.MarkdownMirror = m
	}
	return c, nil
}

// defaultConfigFile is ~/.config/vc-mcp/config.yaml ($XDG_CONFIG_HOME
// honoured), or %APPDATA%\vc-mcp\config.yaml on Windows.
func defaultConfigFile() string {
	if runtime.GOOS == "windows" {
		if d := os.Getenv("APPDATA"); d != "" {
			return filepath.Join(d, "vc-mcp", "config.yaml")
		}
		return ""
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "vc-mcp", "config.yaml")
	}
	home := homeDir()
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "vc-mcp", "config.yaml")
}

// defaultDataDir is the per-user data directory of the README.
func defaultDataDir() string {
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LOCALAPPDATA"); d != "" {
			return filepath.Join(d, "vc-mcp")
		}
		if home := homeDir(); home != "" {
			return filepath.Join(home, "AppData", "Local", "vc-mcp")
		}
		return ""
	case "darwin":
		home := homeDir()
		if home == "" {
			return ""
		}
		return filepath.Join(home, "Library", "Application Support", "vc-mcp")
	default:
		if d := os.Getenv("XDG_DATA_HOME"); d != "" {
			return filepath.Join(d, "vc-mcp")
		}
		home := homeDir()
		if home == "" {
			return ""
		}
		return filepath.Join(home, ".local", "share", "vc-mcp")
	}
}

// homeDir is $HOME (%USERPROFILE%), or, for hosts that start servers
// without it, the user database's home directory (os/user reads
// /etc/passwd without cgo), so every host finds the same memory.
func homeDir() string {
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		return home
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	return ""
}

func setAssembly(c *settings, v string) error {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case memory.AssemblyRelevance, memory.AssemblyHierarchical:
		c.Assembly = v
		return nil
	}
	return fmt.Errorf("must be %s or %s, got %q", memory.AssemblyRelevance, memory.AssemblyHierarchical, v)
}
