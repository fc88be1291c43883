package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// OpenAI is a Completer for OpenAI-compatible chat completions servers:
// OpenAI itself, Ollama (http://localhost:11434/v1), LM Studio
// (http://localhost:1234/v1), vLLM and others speaking POST
// {BaseURL}/chat/completions.
type OpenAI struct {
	baseURL string
	model   string
	apiKey  string
	poster  poster
}

var _ Completer = (*OpenAI)(nil)

// NewOpenAI returns an OpenAI-compatible Completer. apiKey may be empty
// for local servers. client nil means a default client (per-attempt
// timeouts come from retry).
func NewOpenAI(baseURL, model, apiKey string, client *http.Client, retry Retry) *OpenAI {
	if client == nil {
		client = &http.Client{}
	}
	if baseURL == "" {
		baseURL = DefaultOpenAIBaseURL
	}
	return &OpenAI{
		baseURL: strings.TrimRight(baseURL, "/"),
		model:   model,
		apiKey:  apiKey,
		poster:  poster{provider: ProviderOpenAI, client: client, retry: retry.withDefaults()},
	}
}

type openAIMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type openAIRequest struct {
	Model          string          `json:"model"`
	Messages       []openAIMessage `json:"messages"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    float64         `json:"temperature"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format,omitempty"`
	Stream bool `json:"stream"`
}

type openAIResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Complete implements Completer.
func (o *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	body := openAIRequest{Model: o.model, MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	if req.System != "" {
		body.Messages = append(body.Messages, openAIMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, openAIMessage{Role: m.Role, Content: m.Content})
	}
	if req.JSON {
		body.ResponseFormat = &struct {
			Type string `json:"type"`
		}{Type: "json_object"}
	}
	header := http.Header{}
	if o.apiKey != "" {
		header.Set("Authorization", "Bearer "+o.apiKey)
	}
	data, err := o.send(ctx, header, body)
	var herr *HTTPError
	if err != nil && body.ResponseFormat != nil && errors.As(err, &herr) && herr.Status == http.StatusBadRequest &&
		strings.Contains(strings.ToLower(herr.Message), "response_format") {
		// Some compatible servers (older Ollama, LM Studio) reject the JSON
		// mode hint; the prompt asks for JSON anyway, so ask again without it.
		body.ResponseFormat = nil
		data, err = o.send(ctx, header, body)
	}
	if err != nil {
		return Response{}, err
	}
	var r openAIResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return Response{}, fmt.Errorf("openai: decode answer: %v: %w", err, ErrBadResponse)
	}
	if len(r.Choices) == 0 || r.Choices[0].Message.Content == nil {
		return Response{}, fmt.Errorf("openai: answer has no message content: %w", ErrBadResponse)
	}
	out := Response{
		Text:      *r.Choices[0].Message.Content,
		Model:     r.Model,
		Truncated: r.Choices[0].FinishReason == "length",
	}
	if out.Model == "" {
		out.Model = o.model
	}
	if r.Usage != nil {
		out.InputTokens, out.OutputTokens = r.Usage.PromptTokens, r.Usage.CompletionTokens
	} else {
		out.InputTokens, out.OutputTokens, out.Estimated = estimateRequest(req), estimateTokens(out.Text), true
	}
	return out, nil
}

func (o *OpenAI) send(ctx context.Context, header http.Header, body openAIRequest) ([]byte, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("openai: encode request: %w", err)
	}
	return o.poster.post(ctx, o.baseURL+"/chat/completions", header, raw)
}

func estimateRequest(req Request) int {
	n := estimateTokens(req.System)
	for _, m := range req.Messages {
		n += estimateTokens(m.Content) + 4
	}
	return n
}
