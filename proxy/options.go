package proxy

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/modelctx"
)

// Format is an upstream API's wire format.
type Format string

const (
	FormatAuto      Format = "auto"
	FormatOpenAI    Format = "openai"
	FormatAnthropic Format = "anthropic"
	FormatGemini    Format = "gemini"
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case "", FormatAuto:
		return FormatAuto, nil
	case FormatOpenAI, FormatAnthropic, FormatGemini:
		return f, nil
	}
	return "", fmt.Errorf("format %q: must be auto, openai, anthropic or gemini", s)
}

// Options configure New. The zero value of every field but Upstream and
// Memory means its default.
type Options struct {
	// Upstream is the API's base URL (https://api.anthropic.com,
	// https://api.openai.com, https://generativelanguage.googleapis.com).
	// The request path is appended to it (a path in Upstream is a prefix).
	Upstream string
	// Format forces the wire format; auto (default) detects it per request
	// from the path and the body's shape.
	Format Format
	// Label names this instance in logs and the dashboard (default: the
	// upstream's host).
	Label string
	// Memory is the engine. Required.
	Memory Memory
	// RecallTokens bounds the injected context in cl100k tokens (default 2000).
	RecallTokens int
	// ProtectedTurns is how many most recent turns are always forwarded
	// whatever their topic (default 6).
	ProtectedTurns int
	// NoFilter forwards the whole history (recall is still injected).
	NoFilter bool
	// NoPaging does not offer the paging tools.
	NoPaging bool
	// MaxRounds bounds the paging tool rounds per request (default 5).
	MaxRounds int
	// EngineTimeout bounds the work done before forwarding; past it the
	// request goes upstream unmodified (default 2s).
	EngineTimeout time.Duration
	// ContextWindows override or extend the built-in table of model context
	// windows (model name or prefix -> tokens).
	ContextWindows map[string]int
	// SoftThreshold is the fraction of the model's window at which the
	// stored exchange triggers compaction (default 0.70).
	SoftThreshold float64
	// MaxMessageBytes is memory's max_message_bytes (default 1 MiB, memory's
	// default): a message over it is not stored; a turn saying so stands
	// in its place (memory would refuse the exchange's whole batch).
	MaxMessageBytes int
	// Tools narrows the request's tool list (seed 002); nil keeps every tool.
	Tools *ToolPolicy
	// AllowedOrigins are browser origins accepted besides loopback ones
	// ("*" = any), as for /mcp: a request from a web page on another
	// origin, or with a rebound Host, must not reach memory or the model.
	AllowedOrigins []string
	// Client sends upstream requests (default: a client without a timeout,
	// since answers stream for minutes).
	Client *http.Client
	// Journal receives a record of every request (nil: a private one).
	Journal *Journal
	// Log receives operational logs (default: discard); LineOut the one
	// line per request (nil: none).
	Log     *slog.Logger
	LineOut io.Writer
	// Now is the clock (tests).
	Now func() time.Time
}

// ToolPolicy narrows a request's tools (seed 002 at the request level): a
// tool whose mode is "always" is kept; "agent" tools are kept when the new
// user message is similar enough to the tool's name and description.
// Tools not listed take Default.
type ToolPolicy struct {
	// Default is the mode of unlisted tools ("always" when empty).
	Default string `yaml:"default"`
	// Threshold is the least similarity (0-1) for an "agent" tool.
	Threshold float64 `yaml:"threshold"`
	// Include maps a tool name to its mode: always or agent.
	Include map[string]string `yaml:"include"`
}

func (o *Options) setDefaults() error {
	if o.Memory == nil {
		return fmt.Errorf("proxy: no memory")
	}
	u, err := url.Parse(o.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("upstream %q: must be an http or https URL such as https://api.anthropic.com", o.Upstream)
	}
	if o.Format == "" {
		o.Format = FormatAuto
	}
	if _, err := ParseFormat(string(o.Format)); err != nil {
		return err
	}
	if o.Label == "" {
		o.Label = u.Host
	}
	if o.RecallTokens <= 0 {
		o.RecallTokens = 2000
	}
	if o.ProtectedTurns <= 0 {
		o.ProtectedTurns = 6
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = 5
	}
	if o.EngineTimeout <= 0 {
		o.EngineTimeout = 2 * time.Second
	}
	if o.SoftThreshold <= 0 || o.SoftThreshold >= 1 {
		o.SoftThreshold = 0.70
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 1 << 20
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if o.Journal == nil {
		o.Journal = NewJournal(0)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Tools != nil {
		for name, mode := range o.Tools.Include {
			if mode != "always" && mode != "agent" {
				return fmt.Errorf("tools.include.%s: mode must be always or agent, got %q", name, mode)
			}
		}
		if d := o.Tools.Default; d != "" && d != "always" && d != "agent" {
			return fmt.Errorf("tools.default: must be always or agent, got %q", d)
		}
		if o.Tools.Threshold < 0 || o.Tools.Threshold > 1 {
			return fmt.Errorf("tools.threshold: must be between 0 and 1, got %v", o.Tools.Threshold)
		}
	}
	return nil
}

// ContextWindow returns a model's window: an override if one matches
// (model name, prefix or glob; the most specific wins), else the built-in
// table of memory/modelctx, else 128k.
func ContextWindow(model string, overrides map[string]int) int {
	return modelctx.New(overrides).Window(strings.TrimPrefix(model, "models/"))
}
