package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Anthropic is a Completer for the Anthropic Messages API (POST /v1/messages).
type Anthropic struct {
	url    string
	model  string
	apiKey string
	poster poster
}

var _ Completer = (*Anthropic)(nil)

// NewAnthropic returns a Messages API Completer. baseURL may end in /v1 or
// not ("" means https://api.anthropic.com).
func NewAnthropic(baseURL, model, apiKey string, client *http.Client, retry Retry) *Anthropic {
	if client == nil {
		client = &http.Client{}
	}
	if baseURL == "" {
		baseURL = DefaultAnthropicURL
	}
	base := strings.TrimRight(baseURL, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return &Anthropic{
		url:    base + "/messages",
		model:  model,
		apiKey: apiKey,
		poster: poster{provider: ProviderAnthropic, client: client, retry: retry.withDefaults()},
	}
}

type anthropicRequest struct {
	Model       string             `json:"model"`
	MaxTokens   int                `json:"max_tokens"`
	System      string             `json:"system,omitempty"`
	Messages    []anthropicMessage `json:"messages"`
	Temperature float64            `json:"temperature"`
}

type anthropicMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type anthropicResponse struct {
	Type    string `json:"type"`
	Model   string `json:"model"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// Complete implements Completer. The JSON hint has no API counterpart; the
// prompts ask for JSON themselves.
func (a *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens // required by the API
	}
	body := anthropicRequest{Model: a.model, MaxTokens: maxTokens, System: req.System, Temperature: req.Temperature}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, anthropicMessage(m))
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return Response{}, fmt.Errorf("anthropic: encode request: %w", err)
	}
	header := http.Header{}
	header.Set("x-api-key", a.apiKey)
	header.Set("anthropic-version", AnthropicVersion)
	data, err := a.poster.post(ctx, a.url, header, raw)
	if err != nil {
		return Response{}, err
	}
	var r anthropicResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return Response{}, fmt.Errorf("anthropic: decode answer: %v: %w", err, ErrBadResponse)
	}
	if r.Type != "" && r.Type != "message" {
		return Response{}, fmt.Errorf("anthropic: answer of type %q, want message: %w", r.Type, ErrBadResponse)
	}
	var text strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" { // thinking and other blocks are not the answer
			text.WriteString(c.Text)
		}
	}
	if len(r.Content) == 0 {
		return Response{}, fmt.Errorf("anthropic: answer has no content: %w", ErrBadResponse)
	}
	out := Response{Text: text.String(), Model: r.Model, Truncated: r.StopReason == "max_tokens"}
	if out.Model == "" {
		out.Model = a.model
	}
	if r.Usage != nil {
		out.InputTokens, out.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
	} else {
		out.InputTokens, out.OutputTokens, out.Estimated = estimateRequest(req), estimateTokens(out.Text), true
	}
	return out, nil
}
