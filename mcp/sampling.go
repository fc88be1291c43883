package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/memory/llm"
)

// ErrSamplingUnavailable means the connected client cannot answer a
// sampling request: there is no MCP request in the context (background
// work), the client did not advertise sampling, the transport cannot carry
// server-to-client requests (legacy SSE, stateless HTTP), or the client
// speaks protocol 2026-07-28, which removed them. It wraps
// llm.ErrUnavailable, so the LLM layer falls back to its deterministic path.
var ErrSamplingUnavailable = fmt.Errorf("MCP sampling: %w", llm.ErrUnavailable)

// Sampler is an llm.Completer that asks the connected MCP client's own
// model (sampling/createMessage). It needs the context of the tool call
// being served: memory must pass the handler's ctx down to Tag and
// Summarize. The server must have called EnableSampling.
//
// Sampling is deprecated from protocol 2026-07-28 on, and mcp-go only
// delivers it over stdio and stateful Streamable HTTP; against anything
// else Complete returns ErrSamplingUnavailable at once.
type Sampler struct {
	modelHint string
	timeout   time.Duration
}

var _ llm.Completer = (*Sampler)(nil)

// NewSampler returns a Sampler. modelHint ("" for none) is passed to the
// client as a model preference; timeout (0: llm.DefaultTimeout) bounds
// each request, including any time the client spends asking its user to
// approve it.
func NewSampler(modelHint string, timeout time.Duration) *Sampler {
	if timeout <= 0 {
		timeout = llm.DefaultTimeout
	}
	return &Sampler{modelHint: modelHint, timeout: timeout}
}

// SamplingAvailable reports whether ctx belongs to a request from a client
// that can answer sampling requests, and if not, why.
func SamplingAvailable(ctx context.Context) (bool, string) {
	if server.ServerFromContext(ctx) == nil {
		return false, "no MCP request in progress"
	}
	if server.InProcessSamplingHandlerFromContext(ctx) != nil {
		return true, ""
	}
	session := server.ClientSessionFromContext(ctx)
	if session == nil {
		return false, "no MCP client session"
	}
	if _, ok := session.(server.SessionWithSampling); !ok {
		return false, "this transport cannot carry sampling requests (use stdio or Streamable HTTP)"
	}
	if info, ok := session.(server.SessionWithClientInfo); ok && info.GetClientCapabilities().Sampling == nil {
		return false, "the client did not advertise sampling"
	}
	return true, ""
}

// Complete implements llm.Completer.
func (s *Sampler) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if ok, why := SamplingAvailable(ctx); !ok {
		return llm.Response{}, fmt.Errorf("%w: %s", ErrSamplingUnavailable, why)
	}
	srv := server.ServerFromContext(ctx)
	params := mcpgo.CreateMessageParams{
		SystemPrompt:   req.System,
		MaxTokens:      req.MaxTokens,
		Temperature:    req.Temperature,
		IncludeContext: "none",
		// Background bookkeeping: favour a cheap, fast model.
		ModelPreferences: &mcpgo.ModelPreferences{CostPriority: 0.8, SpeedPriority: 0.8, IntelligencePriority: 0.4},
	}
	if params.MaxTokens <= 0 {
		params.MaxTokens = llm.DefaultMaxTokens
	}
	if s.modelHint != "" {
		params.ModelPreferences.Hints = []mcpgo.ModelHint{{Name: s.modelHint}}
	}
	for _, m := range req.Messages {
		role := mcpgo.RoleUser
		if m.Role == "assistant" {
			role = mcpgo.RoleAssistant
		}
		params.Messages = append(params.Messages, mcpgo.SamplingMessage{Role: role, Content: mcpgo.NewTextContent(m.Content)})
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// RequestSampling is deprecated in mcp-go v1.2.1 (protocol 2026-07-28
	// removed server-initiated requests) but is the only way to reach the
	// clients that support sampling today, all of which speak older versions.
	//lint:ignore SA1019 see above
	res, err := srv.RequestSampling(ctx, mcpgo.CreateMessageRequest{CreateMessageParams: params})
	if err != nil {
		if errors.Is(err, server.ErrServerInitiatedRequestUnsupported) {
			return llm.Response{}, fmt.Errorf("%w: the client's protocol version has no sampling: %v", ErrSamplingUnavailable, err)
		}
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return llm.Response{}, fmt.Errorf("MCP sampling: no answer within %s: %w", s.timeout, llm.ErrServer)
		}
		return llm.Response{}, fmt.Errorf("MCP sampling: %w: %w", err, llm.ErrServer)
	}
	if res == nil {
		return llm.Response{}, fmt.Errorf("MCP sampling: empty result: %w", llm.ErrBadResponse)
	}
	text, ok := samplingText(res.Content)
	if !ok {
		return llm.Response{}, fmt.Errorf("MCP sampling: answer holds no text content: %w", llm.ErrBadResponse)
	}
	// Sampling reports no token counts; estimate them for the usage log.
	in := len(req.System)
	for _, m := range req.Messages {
		in += len(m.Content)
	}
	return llm.Response{
		Text:         text,
		Model:        res.Model,
		InputTokens:  (in + 3) / 4,
		OutputTokens: (len(text) + 3) / 4,
		Estimated:    true,
		Truncated:    res.StopReason == "maxTokens",
	}, nil
}

// samplingText collects the text of a sampling answer, whose content may be
// one block or (since 2025-11-25) a list of blocks, typed or decoded JSON.
func samplingText(content any) (string, bool) {
	switch c := content.(type) {
	case mcpgo.TextContent:
		return c.Text, true
	case *mcpgo.TextContent:
		if c == nil {
			return "", false
		}
		return c.Text, true
	case string:
		return c, true
	case map[string]any:
		if c["type"] == "text" {
			t, ok := c["text"].(string)
			return t, ok
		}
		return "", false
	case []mcpgo.Content:
		var b strings.Builder
		found := false
		for _, x := range c {
			if t, ok := samplingText(x); ok {
				b.WriteString(t)
				found = true
			}
		}
		return b.String(), found
	case []any:
		var b strings.Builder
		found := false
		for _, x := range c {
			if t, ok := samplingText(x); ok {
				b.WriteString(t)
				found = true
			}
		}
		return b.String(), found
	}
	return "", false
}
