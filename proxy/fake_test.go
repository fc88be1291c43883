package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/proxy"
)

// seen is one request the fake upstream received.
type seen struct {
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// answerFunc scripts the fake upstream: the n-th request (0-based) and
// what it received -> the SSE or JSON to send back.
type answerFunc func(n int, s seen) (contentType string, body []byte)

// upstream is a fake LLM API on 127.0.0.1 that records what it receives.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	got    []seen
	answer answerFunc
}

func newUpstream(t *testing.T, answer answerFunc) *upstream {
	t.Helper()
	u := &upstream{answer: answer}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s := seen{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
		u.mu.Lock()
		n := len(u.got)
		u.got = append(u.got, s)
		u.mu.Unlock()
		ct, out := u.answer(n, s)
		w.Header().Set("Content-Type", ct)
		if strings.HasPrefix(ct, "text/event-stream") {
			// Send event by event, flushing, as a real API does.
			rc := http.NewResponseController(w)
			for _, ev := range splitEvents(out) {
				w.Write(ev)
				rc.Flush()
			}
			return
		}
		if strings.Contains(string(out), `"error"`) {
			w.WriteHeader(http.StatusTooManyRequests)
		}
		w.Write(out)
	}))
	u.Server.Listener.Close()
	u.Server.Listener = l
	u.Start()
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.got...)
}

func (u *upstream) last(t *testing.T) seen {
	t.Helper()
	r := u.requests()
	if len(r) == 0 {
		t.Fatal("upstream received nothing")
	}
	return r[len(r)-1]
}

// splitEvents cuts an SSE body after each blank line.
func splitEvents(b []byte) [][]byte {
	var out [][]byte
	s := string(b)
	for s != "" {
		i := strings.Index(s, "\n\n")
		if i < 0 {
			out = append(out, []byte(s))
			break
		}
		out = append(out, []byte(s[:i+2]))
		s = s[i+2:]
	}
	return out
}

// Canned answers, per format.

func openAIText(text string) []byte {
	return mustMarshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": nil}},
		"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

func openAIToolCall(id, name, args string) []byte {
	return mustMarshal(map[string]any{"id": "chatcmpl-2", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": nil,
			"tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]string{"name": name, "arguments": args}}}}, "finish_reason": "tool_calls", "logprobs": nil}},
		"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

func openAIStream(pieces ...string) []byte {
	var b strings.Builder
	chunk := func(delta map[string]any, finish any) {
		fmt.Fprintf(&b, "data: %s\n\n", mustMarshal(map[string]any{"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}}))
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, p := range pieces {
		chunk(map[string]any{"content": p}, nil)
	}
	chunk(map[string]any{}, "stop")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

func openAIStreamToolCall(id, name, args string) []byte {
	var b strings.Builder
	chunk := func(delta map[string]any, finish any) {
		fmt.Fprintf(&b, "data: %s\n\n", mustMarshal(map[string]any{"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}))
	}
	chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"index": 0, "id": id, "type": "function", "function": map[string]string{"name": name, "arguments": ""}}}}, nil)
	chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]string{"arguments": args}}}}, nil)
	chunk(map[string]any{}, "tool_calls")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

func anthropicText(text string) []byte {
	return mustMarshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{map[string]string{"type": "text", "text": text}}, "stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 10, "output_tokens": 5}})
}

func anthropicToolUse(id, name string, input any) []byte {
	return mustMarshal(map[string]any{"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content":     []any{map[string]string{"type": "text", "text": "Let me look."}, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}},
		"stop_reason": "tool_use", "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 5}})
}

func sse(name string, v any) string {
	return fmt.Sprintf("event: %s\ndata: %s\n\n", name, mustMarshal(v))
}

func anthropicStream(pieces ...string) []byte {
	var b strings.Builder
	b.WriteString(sse("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_s", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}}))
	b.WriteString(sse("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]string{"type": "text", "text": ""}}))
	b.WriteString(sse("ping", map[string]string{"type": "ping"}))
	for _, p := range pieces {
		b.WriteString(sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": p}}))
	}
	b.WriteString(sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}))
	b.WriteString(sse("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}}))
	b.WriteString(sse("message_stop", map[string]string{"type": "message_stop"}))
	return []byte(b.String())
}

func anthropicStreamToolUse(id, name, input string) []byte {
	var b strings.Builder
	b.WriteString(sse("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_t", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}}))
	b.WriteString(sse("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]string{"type": "text", "text": ""}}))
	b.WriteString(sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": "Checking memory. "}}))
	b.WriteString(sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}))
	b.WriteString(sse("content_block_start", map[string]any{"type": "content_block_start", "index": 1, "content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}}))
	b.WriteString(sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": 1, "delta": map[string]string{"type": "input_json_delta", "partial_json": input}}))
	b.WriteString(sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1}))
	b.WriteString(sse("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}}))
	b.WriteString(sse("message_stop", map[string]string{"type": "message_stop"}))
	return []byte(b.String())
}

func geminiText(text string) []byte {
	return mustMarshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": text}}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}})
}

func geminiStream(pieces ...string) []byte {
	var b strings.Builder
	for i, p := range pieces {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": p}}}, "index": 0}
		if i == len(pieces)-1 {
			c["finishReason"] = "STOP"
		}
		fmt.Fprintf(&b, "data: %s\n\n", mustMarshal(map[string]any{"candidates": []any{c}}))
	}
	return []byte(b.String())
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// harness is a proxy on 127.0.0.1 over a real store, in front of a fake upstream.
type harness struct {
	store *memory.Store
	proxy *proxy.Server
	up    *upstream
	url   string
}

func newHarness(t *testing.T, answer answerFunc, tweak func(*proxy.Options)) *harness {
	t.Helper()
	store, err := memory.Open(context.Background(), memory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	up := newUpstream(t, answer)
	opts := proxy.Options{Upstream: up.URL, Memory: store, ProtectedTurns: 2}
	if tweak != nil {
		tweak(&opts)
	}
	p, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Drain(ctx)
		srv.Close()
	})
	return &harness{store: store, proxy: p, up: up, url: "http://" + l.Addr().String()}
}

func (h *harness) drain(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.proxy.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

// post sends a body to the proxy and returns the status and answer.
func (h *harness) post(t *testing.T, path string, body any, header map[string]string) (int, []byte) {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case []byte:
		data = b
	default:
		data = mustMarshal(b)
	}
	req, err := http.NewRequest("POST", h.url+path, strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}
