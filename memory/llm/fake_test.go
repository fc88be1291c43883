package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// recorded is one request a fake provider received.
type recorded struct {
	header http.Header
	body   map[string]any
}

// fakeServer is a real HTTP server on 127.0.0.1 whose answers a test
// scripts per request number (0-based).
type fakeServer struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []recorded
	answer func(n int, body map[string]any, w http.ResponseWriter, r *http.Request)
}

func newFakeServer(t testing.TB, answer func(n int, body map[string]any, w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	f := &fakeServer{answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, `{"error":{"message":"request is not JSON"}}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, recorded{header: r.Header.Clone(), body: body})
		f.mu.Unlock()
		f.answer(n, body, w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client notices a failed write
}

// openAIAnswer writes a chat completion in OpenAI's wire format.
func openAIAnswer(w http.ResponseWriter, model, text string, in, out int) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text},
		}},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}

// anthropicAnswer writes a Messages API answer.
func anthropicAnswer(w http.ResponseWriter, model string, blocks []map[string]any, stop string, in, out int) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": model,
		"content": blocks, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": out},
	})
}

// userText returns the last user message of an OpenAI or Anthropic request.
func userText(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

// sleeps records the waits a retry loop asks for, without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
