package llm

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// NewCompleter builds the HTTP Completer cfg names, reading the API key
// from the variable cfg.APIKeyEnv names (through getenv). The sampling
// Completer lives in package mcp; for ProviderSampling and ProviderNone
// this returns an error wrapping ErrUnavailable. client nil means a
// default http.Client.
func NewCompleter(cfg Config, getenv func(string) string, client *http.Client) (Completer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	key := ""
	if cfg.APIKeyEnv != "" {
		key = getenv(cfg.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("%s: the variable %s (named by VC_LLM_API_KEY_ENV) is empty: %w", cfg.Provider, cfg.APIKeyEnv, ErrUnavailable)
		}
	}
	retry := Retry{MaxRetries: cfg.MaxRetries, Timeout: cfg.Timeout}
	switch cfg.Provider {
	case ProviderOpenAI:
		return NewOpenAI(cfg.BaseURL, cfg.Model, key, client, retry), nil
	case ProviderAnthropic:
		return NewAnthropic(cfg.BaseURL, cfg.Model, key, client, retry), nil
	}
	return nil, fmt.Errorf("provider %q has no HTTP completer: %w", cfg.Provider, ErrUnavailable)
}

// Client wraps a Completer with bounded concurrency and usage accounting.
// Tagger and Summarizer share one Client, so the concurrency bound covers
// both. It is safe for concurrent use.
type Client struct {
	cfg    Config
	c      Completer
	sem    chan struct{}
	usage  *UsageLog
	logger *slog.Logger
	now    func() time.Time

	inFlight, peak atomic.Int64
	mu             sync.Mutex
	calls          int
}

// ClientOptions are optional parts of a Client; nil fields mean none or defaults.
type ClientOptions struct {
	// Usage receives one record per call (nil: not recorded).
	Usage *UsageLog
	// Logger receives failures at Warn (never conversation text).
	Logger *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

// NewClient wraps c. cfg supplies the provider label, the concurrency
// bound, temperature, output length and the price table.
func NewClient(cfg Config, c Completer, opts ClientOptions) *Client {
	cfg = cfg.WithDefaults()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Client{
		cfg:    cfg,
		c:      c,
		sem:    make(chan struct{}, cfg.MaxConcurrency),
		usage:  opts.Usage,
		logger: opts.Logger,
		now:    opts.Now,
	}
}

// Config returns the configuration in use, defaults applied.
func (c *Client) Config() Config { return c.cfg }

// Label is the provider and configured model, e.g. "openai/gpt-4o-mini".
func (c *Client) Label() string { return c.cfg.Label() }

// PeakConcurrency is the largest number of calls that were in flight at once.
func (c *Client) PeakConcurrency() int { return int(c.peak.Load()) }

// Calls is the number of completed calls, successful or not.
func (c *Client) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// Complete waits for a free slot, calls the model and records the usage.
// Zero MaxTokens and Temperature in req take the configured values.
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return Response{}, fmt.Errorf("%s: waiting for a free slot: %w", c.Label(), ctx.Err())
	}
	n := c.inFlight.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	defer func() {
		c.inFlight.Add(-1)
		<-c.sem
	}()
	if req.MaxTokens <= 0 {
		req.MaxTokens = c.cfg.MaxTokens
	}
	if req.Temperature == 0 {
		req.Temperature = c.cfg.Temperature
	}
	start := c.now()
	resp, err := c.c.Complete(ctx, req)
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	if c.usage != nil {
		rec := UsageRecord{
			Time:         start.UTC(),
			Conversation: ConversationFrom(ctx),
			Provider:     c.cfg.Provider,
			Model:        c.cfg.Model,
			Served:       resp.Model,
			Purpose:      req.Purpose,
			InputTokens:  resp.InputTokens,
			OutputTokens: resp.OutputTokens,
			Estimated:    resp.Estimated,
			DurationMS:   c.now().Sub(start).Milliseconds(),
			OK:           err == nil,
		}
		// Rows group by the configured model; the served name (often a
		// dated snapshot) prices the call when the table knows it. A
		// sampling client picks its own model, so that one is what counts.
		if rec.Model == "" || rec.Provider == ProviderSampling {
			rec.Model = cmp.Or(resp.Model, rec.Model)
		}
		p, ok := c.cfg.price(rec.Provider, cmp.Or(rec.Served, rec.Model))
		if !ok {
			p, ok = c.cfg.price(rec.Provider, rec.Model)
		}
		if ok {
			rec.CostUSD = (float64(rec.InputTokens)*p.Input + float64(rec.OutputTokens)*p.Output) / 1e6
			rec.Priced = true
		}
		if err != nil {
			rec.Error = err.Error()
		}
		if uerr := c.usage.Append(rec); uerr != nil {
			// Accounting must not break the call it accounts for.
			c.logger.Warn("llm usage log", "err", uerr)
		}
	}
	return resp, err
}
