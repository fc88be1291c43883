package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// truncate writes the head of a response that promises a longer body, then
// drops the connection.
func truncate(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("test server cannot hijack")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"choices\":[{\"message\":{\"content\":\"{\\\"tags")
	buf.Flush()
}

// slow answers only after d, or gives up when the client goes away.
func slow(d time.Duration, w http.ResponseWriter, r *http.Request, then func()) {
	select {
	case <-time.After(d):
		then()
	case <-r.Context().Done():
	}
}

func TestOpenAI(t *testing.T) {
	type answer func(n int, body map[string]any, w http.ResponseWriter, r *http.Request)
	ok := func(n int, body map[string]any, w http.ResponseWriter, r *http.Request) {
		openAIAnswer(w, "gpt-test-0613", `{"ok":true}`, 120, 7)
	}
	cases := []struct {
		name       string
		answer     answer
		maxRetries int
		wantErr    error
		wantText   string
		wantCalls  int
		wantSleeps []time.Duration // exact waits; nil means no check beyond count
		wantNSleep int
		wantEst    bool
	}{
		{name: "ok", answer: ok, wantText: `{"ok":true}`, wantCalls: 1},
		{name: "429 honours Retry-After", maxRetries: 3, answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			if n < 2 {
				w.Header().Set("Retry-After", "2")
				writeJSON(w, 429, map[string]any{"error": map[string]any{"message": "Rate limit reached", "type": "requests"}})
				return
			}
			ok(n, b, w, r)
		}, wantText: `{"ok":true}`, wantCalls: 3, wantSleeps: []time.Duration{2 * time.Second, 2 * time.Second}, wantNSleep: 2},
		{name: "429 without Retry-After backs off", maxRetries: 1, answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 429, map[string]any{"error": map[string]any{"message": "slow down"}})
		}, wantErr: ErrRateLimited, wantCalls: 2, wantNSleep: 1},
		{name: "429 Retry-After too long", maxRetries: 3, answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3600")
			writeJSON(w, 429, map[string]any{"error": map[string]any{"message": "quota"}})
		}, wantErr: ErrRateLimited, wantCalls: 1},
		{name: "5xx exhausts retries", maxRetries: 2, answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 503, map[string]any{"error": map[string]any{"message": "overloaded"}})
		}, wantErr: ErrServer, wantCalls: 3, wantNSleep: 2},
		{name: "5xx then ok", maxRetries: 2, answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				http.Error(w, "bad gateway", 502)
				return
			}
			ok(n, b, w, r)
		}, wantText: `{"ok":true}`, wantCalls: 2, wantNSleep: 1},
		{name: "401 not retried", maxRetries: 3, answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "Incorrect API key provided"}})
		}, wantErr: ErrRejected, wantCalls: 1},
		{name: "slow answer times out", maxRetries: 1, answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			slow(2*time.Second, w, r, func() { ok(n, b, w, r) })
		}, wantErr: ErrServer, wantCalls: 2, wantNSleep: 1},
		{name: "truncated body retried", maxRetries: 1, answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				truncate(w)
				return
			}
			ok(n, b, w, r)
		}, wantText: `{"ok":true}`, wantCalls: 2, wantNSleep: 1},
		{name: "malformed JSON", maxRetries: 3, answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"choices": [{"message": {"content": "hi"}`))
		}, wantErr: ErrBadResponse, wantCalls: 1},
		{name: "no choices", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"choices": []any{}})
		}, wantErr: ErrBadResponse, wantCalls: 1},
		{name: "null content", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": nil}}}})
		}, wantErr: ErrBadResponse, wantCalls: 1},
		{name: "response_format refused, asked again without", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			if _, has := b["response_format"]; has {
				writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "'response_format.type' must be 'json_schema'"}})
				return
			}
			ok(n, b, w, r)
		}, wantText: `{"ok":true}`, wantCalls: 2},
		{name: "no usage: estimated", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"model": "local", "choices": []any{map[string]any{"message": map[string]any{"content": "abcdefgh"}}}})
		}, wantText: "abcdefgh", wantCalls: 1, wantEst: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, tc.answer)
			var sl sleeps
			o := NewOpenAI(srv.URL+"/v1/", "gpt-test", "sk-test", nil, Retry{MaxRetries: tc.maxRetries, Timeout: 200 * time.Millisecond, Sleep: sl.sleep})
			resp, err := o.Complete(t.Context(), Request{System: "be brief", Messages: []Message{{Role: "user", Content: "hello"}}, MaxTokens: 50, Temperature: 0.2, JSON: true})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got error %v, want %v", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("got error %v, want none", err)
			} else if resp.Text != tc.wantText {
				t.Errorf("got text %q, want %q", resp.Text, tc.wantText)
			}
			if got := len(srv.requests()); got != tc.wantCalls {
				t.Errorf("got %d requests, want %d", got, tc.wantCalls)
			}
			if got := sl.all(); len(got) != tc.wantNSleep {
				t.Errorf("got %d waits %v, want %d", len(got), got, tc.wantNSleep)
			} else if tc.wantSleeps != nil {
				for i := range got {
					if got[i] != tc.wantSleeps[i] {
						t.Errorf("got wait %d = %s, want %s", i, got[i], tc.wantSleeps[i])
					}
				}
			}
			if err == nil && resp.Estimated != tc.wantEst {
				t.Errorf("got estimated %v, want %v", resp.Estimated, tc.wantEst)
			}
		})
	}
}

func TestOpenAIWire(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "wrong endpoint "+r.Method+" "+r.URL.Path, 404)
			return
		}
		openAIAnswer(w, "gpt-test-0613", "hi", 12, 3)
	})
	o := NewOpenAI(srv.URL+"/v1", "gpt-test", "sk-secret", nil, Retry{})
	resp, err := o.Complete(t.Context(), Request{System: "sys", Messages: []Message{{Role: "user", Content: "u1"}, {Role: "assistant", Content: "a1"}, {Role: "user", Content: "u2"}}, MaxTokens: 99, Temperature: 0.3, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "gpt-test-0613" || resp.InputTokens != 12 || resp.OutputTokens != 3 || resp.Estimated {
		t.Errorf("got %+v, want model gpt-test-0613, 12 in, 3 out, not estimated", resp)
	}
	req := srv.requests()[0]
	if got := req.header.Get("Authorization"); got != "Bearer sk-secret" {
		t.Errorf("got Authorization %q, want Bearer sk-secret", got)
	}
	msgs := req.body["messages"].([]any)
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if strings.Join(roles, ",") != "system,user,assistant,user" {
		t.Errorf("got roles %v, want system,user,assistant,user", roles)
	}
	if req.body["model"] != "gpt-test" || req.body["max_tokens"] != float64(99) || req.body["temperature"] != 0.3 || req.body["stream"] != false {
		t.Errorf("got body %v, want model, max_tokens 99, temperature 0.3, stream false", req.body)
	}
	if rf, _ := req.body["response_format"].(map[string]any); rf["type"] != "json_object" {
		t.Errorf("got response_format %v, want json_object", req.body["response_format"])
	}

	// A local server without a key gets no Authorization header.
	local := NewOpenAI(srv.URL+"/v1", "llama3.2", "", nil, Retry{})
	if _, err := local.Complete(t.Context(), Request{Messages: []Message{{Role: "user", Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if got := srv.requests()[1].header.Get("Authorization"); got != "" {
		t.Errorf("got Authorization %q without a key, want none", got)
	}
}

func TestAnthropic(t *testing.T) {
	type answer func(n int, body map[string]any, w http.ResponseWriter, r *http.Request)
	text := func(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }
	cases := []struct {
		name      string
		answer    answer
		wantErr   error
		wantText  string
		wantTrunc bool
		wantCalls int
	}{
		{name: "ok", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			anthropicAnswer(w, "claude-test-1", text(`{"a":1}`), "end_turn", 30, 5)
		}, wantText: `{"a":1}`, wantCalls: 1},
		{name: "thinking block skipped", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			anthropicAnswer(w, "claude-test-1", []map[string]any{{"type": "thinking", "thinking": "hmm", "signature": "x"}, {"type": "text", "text": "answer"}}, "end_turn", 30, 5)
		}, wantText: "answer", wantCalls: 1},
		{name: "max_tokens truncation flagged", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			anthropicAnswer(w, "claude-test-1", text(`{"summary": "cut`), "max_tokens", 30, 50)
		}, wantText: `{"summary": "cut`, wantTrunc: true, wantCalls: 1},
		{name: "529 overloaded retried", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				writeJSON(w, 529, map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
				return
			}
			anthropicAnswer(w, "claude-test-1", text("ok"), "end_turn", 1, 1)
		}, wantText: "ok", wantCalls: 2},
		{name: "429 with retry-after", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				w.Header().Set("retry-after", "1")
				writeJSON(w, 429, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}})
				return
			}
			anthropicAnswer(w, "claude-test-1", text("ok"), "end_turn", 1, 1)
		}, wantText: "ok", wantCalls: 2},
		{name: "invalid key", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 401, map[string]any{"type": "error", "error": map[string]any{"type": "authentication_error", "message": "invalid x-api-key"}})
		}, wantErr: ErrRejected, wantCalls: 1},
		{name: "error object with 200", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": "boom"}})
		}, wantErr: ErrBadResponse, wantCalls: 1},
		{name: "malformed JSON", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"type":"message","content":[{"type":"text","text":"x"`))
		}, wantErr: ErrBadResponse, wantCalls: 1},
		{name: "truncated body exhausts retries", answer: func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
			truncate(w)
		}, wantErr: ErrServer, wantCalls: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, tc.answer)
			var sl sleeps
			a := NewAnthropic(srv.URL, "claude-test", "key-123", nil, Retry{MaxRetries: 2, Timeout: time.Second, Sleep: sl.sleep})
			resp, err := a.Complete(t.Context(), Request{System: "sys", Messages: []Message{{Role: "user", Content: "hi"}}, MaxTokens: 64})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got error %v, want %v", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("got error %v, want none", err)
			} else if resp.Text != tc.wantText || resp.Truncated != tc.wantTrunc {
				t.Errorf("got text %q truncated %v, want %q %v", resp.Text, resp.Truncated, tc.wantText, tc.wantTrunc)
			}
			reqs := srv.requests()
			if len(reqs) != tc.wantCalls {
				t.Fatalf("got %d requests, want %d", len(reqs), tc.wantCalls)
			}
			h, b := reqs[0].header, reqs[0].body
			if h.Get("x-api-key") != "key-123" || h.Get("anthropic-version") != AnthropicVersion || h.Get("Authorization") != "" {
				t.Errorf("got headers %v, want x-api-key, anthropic-version and no Authorization", h)
			}
			if b["system"] != "sys" || b["max_tokens"] != float64(64) || b["model"] != "claude-test" || userText(b) != "hi" {
				t.Errorf("got body %v, want system, max_tokens 64, model and the user message", b)
			}
		})
	}
}

func TestAnthropicURL(t *testing.T) {
	cases := []struct{ base, want string }{
		{"", "https://api.anthropic.com/v1/messages"},
		{"https://api.anthropic.com", "https://api.anthropic.com/v1/messages"},
		{"https://proxy.example/v1/", "https://proxy.example/v1/messages"},
	}
	for _, tc := range cases {
		t.Run(tc.base, func(t *testing.T) {
			if got := NewAnthropic(tc.base, "m", "k", nil, Retry{}).url; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCancelDuringBackoff: cancelling the caller's context ends the retry
// loop at once, with the context's error.
func TestCancelDuringBackoff(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		writeJSON(w, 429, map[string]any{"error": map[string]any{"message": "later"}})
	})
	ctx, cancel := context.WithCancel(t.Context())
	o := NewOpenAI(srv.URL, "m", "", nil, Retry{MaxRetries: 5, Sleep: func(ctx context.Context, d time.Duration) error {
		cancel()
		return sleep(ctx, d)
	}})
	_, err := o.Complete(ctx, Request{Messages: []Message{{Role: "user", Content: "x"}}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("got %d requests, want 1", n)
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"7", 7 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{"-3", 0, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := retryAfter(tc.in, now)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %s, %v; want %s, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	r := Retry{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}.withDefaults()
	for attempt, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		full *= time.Millisecond
		for range 20 {
			if got := r.backoff(attempt); got < full/2 || got > full {
				t.Fatalf("attempt %d: got %s, want within [%s, %s]", attempt, got, full/2, full)
			}
		}
	}
}
