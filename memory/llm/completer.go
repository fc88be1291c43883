package llm

import (
	"context"
	"errors"
	"fmt"
)

// Message is one chat message sent to a model.
type Message struct {
	// Role is "user" or "assistant".
	Role    string
	Content string
}

// Request is one completion request.
type Request struct {
	// System is the system prompt ("" for none).
	System   string
	Messages []Message
	// MaxTokens bounds the answer's length in the model's tokens.
	MaxTokens int
	// Temperature is the sampling temperature (0 = most deterministic).
	Temperature float64
	// JSON asks for a JSON object answer where the provider supports it.
	// Prompts ask for JSON anyway; this is only a hint.
	JSON bool
	// Purpose names the job ("tag", "segment", "rollup", "turn", "split")
	// for usage accounting.
	Purpose string
}

// Response is a model's answer.
type Response struct {
	Text string
	// Model is the model that answered, as the provider reports it.
	Model string
	// InputTokens and OutputTokens are the provider's counts; Estimated is
	// true when the provider gave none and they were estimated from length.
	InputTokens, OutputTokens int
	Estimated                 bool
	// Truncated is true when the answer stopped at MaxTokens.
	Truncated bool
}

// Completer sends one request to a model. Implementations must be safe for
// concurrent use and must return promptly when ctx is cancelled.
type Completer interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Sentinel errors; every error from this package's Completers wraps at most one.
var (
	// ErrUnavailable: the provider cannot be used at all (no key, client
	// did not advertise sampling, disabled).
	ErrUnavailable = errors.New("model provider unavailable")
	// ErrRateLimited: the provider kept answering 429 after all retries.
	ErrRateLimited = errors.New("rate limited")
	// ErrServer: the provider kept failing (5xx, timeouts, cut-off bodies)
	// after all retries.
	ErrServer = errors.New("provider error")
	// ErrRejected: the provider refused the request (4xx other than 429),
	// e.g. a bad API key or an unknown model. Not retried.
	ErrRejected = errors.New("request rejected")
	// ErrBadResponse: the provider's or the model's answer could not be
	// parsed or failed validation.
	ErrBadResponse = errors.New("bad model response")
	// ErrCoolingDown: recent failures put the model on hold for a while.
	ErrCoolingDown = errors.New("model on hold after repeated failures")
)

// HTTPError is a non-2xx answer from an HTTP provider. It unwraps to
// ErrRateLimited, ErrServer or ErrRejected.
type HTTPError struct {
	Provider string
	Status   int
	// Message is the provider's error message, if it sent one.
	Message string
}

func (e *HTTPError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "no message"
	}
	switch {
	case e.Status == 429:
		return fmt.Sprintf("%s: %d rate limited: %s", e.Provider, e.Status, msg)
	default:
		return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.Status, msg)
	}
}

func (e *HTTPError) Unwrap() error {
	switch {
	case e.Status == 429:
		return ErrRateLimited
	case e.Status >= 500:
		return ErrServer
	default:
		return ErrRejected
	}
}

type conversationKey struct{}

// WithConversation returns a context whose model calls are accounted to
// the conversation id. memory sets it around Tag and Summarize calls.
func WithConversation(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, conversationKey{}, id)
}

// ConversationFrom returns the id set by WithConversation, or "".
func ConversationFrom(ctx context.Context) string {
	id, _ := ctx.Value(conversationKey{}).(string)
	return id
}

// estimateTokens is a rough token count for providers that report none:
// about four characters per token for English text.
func estimateTokens(s string) int {
	n := len([]rune(s))
	return (n + 3) / 4
}
