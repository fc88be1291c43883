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
		help: "Window and thresholds for a kind of client: `chat` (120k window, 0.70/0.85, 6 protected turns), `coding` (200k, 0.75/0.90, 10), `agentic` (200k, 0.60/0.80, 12), `small-local` (8k, 0.60/0.80, 4). Settings given explicitly override it.",
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
		help: "File holding the bearer token HTTP clients must send (`Authorization: Bearer <token>`). Required with `allow_remote`. See Remote access and auth.",
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
}

var presets = map[string]presetValues{
	"chat":        {window: 120_000, soft: 0.70, hard: 0.85, protected: 6},
	"coding":      {window: 200_000, soft: 0.75, hard: 0.90, protected: 10},
	"agentic":     {window: 200_000, soft: 0.60, hard: 0.80, protected: 12},
	"small-local": {window: 8_192, soft: 0.60, hard: 0.80, protected: 4},
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
		fv := &flagValue{isBool: k.isBool}
		flags[k.name] = fv
		fs.Var(fv, k.flag, firstSentence(k.help)+" (env "+k.env+")")
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: vc-mcp %s [flags]\n\nFlags (each also settable as VC_* env or in the config file):\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return settings{}, nil, err
	}

	raw := make(map[string]string, len(settingKeys))
	source := make(map[string]string, len(settingKeys))
	for _, k := range settingKeys {
		raw[k.name], source[k.name] = k.def(), "default"
	}
	explicit := map[string]bool{}
	// The config file and the preset can themselves come from env or flags.
	for _, k := range settingKeys {
		if v := getenv(k.env); v != "" {
			raw[k.name], source[k.name], explicit[k.name] = v, "env "+k.env, true
		}
		if fv := flags[k.name]; fv.set {
			raw[k.name], source[k.name], explicit[k.name] = fv.val, "flag --"+k.flag, true
		}
	}
	fileVals, err := readConfigFile(raw["config"], explicit["config"])
	if err != nil {
		return settings{}, nil, err
	}
	for name, v := range fileVals {
		if !explicit[name] {
			raw[name], source[name], explicit[name] = v, "config file "+raw["config"], true
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
		if err := apply(k); err != nil {
			return settings{}, nil, err
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
		return settings{}, nil, fmt.Errorf("soft_threshold (%.2f) must be below hard_threshold (%.2f)", c.SoftThreshold, c.HardThreshold)
	}
	if c.DataDir == "" {
		return settings{}, nil, errors.New("data_dir: no per-user default on this system; set --data-dir or VC_DATA_DIR")
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return settings{}, nil, fmt.Errorf("data_dir: %w", err)
	}
	c.DataDir = abs
	if c.MarkdownMirror != "" {
		m, err := filepath.Abs(c.MarkdownMirror)
		if err != nil {
			return settings{}, nil, fmt.Errorf("markdown_mirror: %w", err)
		}
		if m == c.DataDir {
			return settings{}, nil, errors.New("markdown_mirror: must not be the data directory; choose a directory of its own")
		}
		c.MarkdownMirror = m
	}
	return c, fs.Args(), nil
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

// readConfigFile reads the YAML file's settingKeys as strings. A missing file is an
// error only when it was asked for explicitly.
func readConfigFile(path string, explicit bool) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !explicit {
			return nil, nil
		}
		return nil, fmt.Errorf("config file: %w", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	known := map[string]bool{}
	for _, k := range settingKeys {
		known[k.name] = true
	}
	out := make(map[string]string, len(doc))
	for name, v := range doc {
		if !known[name] || name == "config" {
			return nil, fmt.Errorf("config file %s: unknown key %q (see the configuration table in the README)", path, name)
		}
		switch x := v.(type) {
		case nil:
			continue
		case []any:
			parts := make([]string, len(x))
			for i, e := range x {
				parts[i] = fmt.Sprint(e)
			}
			out[name] = strings.Join(parts, ",")
		case map[string]any:
			return nil, fmt.Errorf("config file %s: %s must be a scalar", path, name)
		default:
			out[name] = fmt.Sprint(x)
		}
	}
	return out, nil
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
