// Package proxytest is a fake LLM API for tests: it records what it
// receives and answers with canned OpenAI, Anthropic and Gemini replies,
// streamed event by event as the real APIs do.
package proxytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Seen is one request the fake Upstream received.
type Seen struct {
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// AnswerFunc scripts the fake Upstream: the n-th request (0-based) and
// what it received -> the SSE or JSON to send back.
type AnswerFunc func(n int, s Seen) (contentType string, body []byte)

// Upstream is a fake LLM API on 127.0.0.1 that records what it receives.
type Upstream struct {
	*httptest.Server
	mu     sync.Mutex
	got    []Seen
	answer AnswerFunc
}

func NewUpstream(t testing.TB, answer AnswerFunc) *Upstream {
	t.Helper()
	u := &Upstream{answer: answer}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s := Seen{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
		u.mu.Lock()
		n := len(u.got)
		u.got = append(u.got, s)
		u.mu.Unlock()
		ct, out := u.answer(n, s)
		w.Header().Set("Content-Type", ct)
		if strings.HasPrefix(ct, "text/event-stream") {
			// Send event by event, flushing, as a real API does.
			rc := http.NewResponseController(w)
			for _, ev := range SplitEvents(out) {
				if string(ev) == Reset {
					reset(rc)
					return
				}
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

// Reset, as an event of a streamed answer, makes the Upstream reset the
// connection there (a TCP RST, no end of the body), as an API whose server
// died mid-answer does.
const Reset = "event: proxytest-reset\n\n"

func reset(rc *http.ResponseController) {
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // closes without the body's end, at least
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST, not FIN
	}
	conn.Close()
}

func (u *Upstream) Requests() []Seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Seen(nil), u.got...)
}

func (u *Upstream) Last(t testing.TB) Seen {
	t.Helper()
	r := u.Requests()
	if len(r) == 0 {
		t.Fatal("Upstream received nothing")
	}
	return r[len(r)-1]
}

// SplitEvents cuts an SSE body after each blank line.
func SplitEvents(b []byte) [][]byte {
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

func OpenAIText(text string) []byte {
	return MustMarshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": nil}},
		"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

func OpenAIToolCall(id, name, args string) []byte {
	return MustMarshal(map[string]any{"id": "chatcmpl-2", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": nil,
			"tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]string{"name": name, "arguments": args}}}}, "finish_reason": "tool_calls", "logprobs": nil}},
		"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

func OpenAIStream(pieces ...string) []byte {
	var b strings.Builder
	chunk := func(delta map[string]any, finish any) {
		fmt.Fprintf(&b, "data: %s\n\n", MustMarshal(map[string]any{"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o",
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

func OpenAIStreamToolCall(id, name, args string) []byte {
	var b strings.Builder
	chunk := func(delta map[string]any, finish any) {
		fmt.Fprintf(&b, "data: %s\n\n", MustMarshal(map[string]any{"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}))
	}
	chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"index": 0, "id": id, "type": "function", "function": map[string]string{"name": name, "arguments": ""}}}}, nil)
	chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]string{"arguments": args}}}}, nil)
	chunk(map[string]any{}, "tool_calls")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

func AnthropicText(text string) []byte {
	return MustMarshal(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{map[string]string{"type": "text", "text": text}}, "stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 10, "output_tokens": 5}})
}

func AnthropicToolUse(id, name string, input any) []byte {
	return MustMarshal(map[string]any{"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content":     []any{map[string]string{"type": "text", "text": "Let me look."}, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}},
		"stop_reason": "tool_use", "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 5}})
}

func sseEvent(name string, v any) string {
	return fmt.Sprintf("event: %s\ndata: %s\n\n", name, MustMarshal(v))
}

func AnthropicStream(pieces ...string) []byte {
	var b strings.Builder
	b.WriteString(sseEvent("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_s", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}}))
	b.WriteString(sseEvent("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]string{"type": "text", "text": ""}}))
	b.WriteString(sseEvent("ping", map[string]string{"type": "ping"}))
	for _, p := range pieces {
		b.WriteString(sseEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": p}}))
	}
	b.WriteString(sseEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}))
	b.WriteString(sseEvent("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}}))
	b.WriteString(sseEvent("message_stop", map[string]string{"type": "message_stop"}))
	return []byte(b.String())
}

func AnthropicStreamToolUse(id, name, input string) []byte {
	var b strings.Builder
	b.WriteString(sseEvent("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_t", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}}))
	b.WriteString(sseEvent("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]string{"type": "text", "text": ""}}))
	b.WriteString(sseEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": "Checking memory. "}}))
	b.WriteString(sseEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}))
	b.WriteString(sseEvent("content_block_start", map[string]any{"type": "content_block_start", "index": 1, "content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}}))
	b.WriteString(sseEvent("content_block_delta", map[string]any{"type": "content_block_delta", "index": 1, "delta": map[string]string{"type": "input_json_delta", "partial_json": input}}))
	b.WriteString(sseEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1}))
	b.WriteString(sseEvent("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 5}}))
	b.WriteString(sseEvent("message_stop", map[string]string{"type": "message_stop"}))
	return []byte(b.String())
}

func GeminiText(text string) []byte {
	return MustMarshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": text}}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}})
}

func GeminiStream(pieces ...string) []byte {
	var b strings.Builder
	for i, p := range pieces {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": p}}}, "index": 0}
		if i == len(pieces)-1 {
			c["finishReason"] = "STOP"
		}
		fmt.Fprintf(&b, "data: %s\n\n", MustMarshal(map[string]any{"candidates": []any{c}}))
	}
	return []byte(b.String())
}

// GeminiFunctionCall is a generateContent answer calling one function.
func GeminiFunctionCall(name string, args any) []byte {
	return MustMarshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{
		map[string]any{"text": "Let me look."}, map[string]any{"functionCall": map[string]any{"name": name, "args": args}}}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}})
}

// GeminiStreamFunctionCall streams some text, then one function call.
func GeminiStreamFunctionCall(name string, args any) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "data: %s\n\n", MustMarshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": "Let me "}}}, "index": 0}}}))
	fmt.Fprintf(&b, "data: %s\n\n", MustMarshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": "look."}}}, "index": 0}}}))
	fmt.Fprintf(&b, "data: %s\n\n", MustMarshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{
		map[string]any{"functionCall": map[string]any{"name": name, "args": args}}}}, "finishReason": "STOP", "index": 0}}}))
	return []byte(b.String())
}

func MustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
