package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/proxy"
)

// TestPagingRound: the model calls vc_find_quote; the proxy answers it from
// memory, continues upstream, and the client sees one answer, with no trace
// of the paging call.
func TestPagingRound(t *testing.T) {
	cases := []struct {
		format proxy.Format
		stream bool
		call   func() (string, []byte)
	}{
		{proxy.FormatAnthropic, false, func() (string, []byte) {
			return "application/json", anthropicToolUse("toolu_1", "vc_find_quote", map[string]any{"query": "Marigold"})
		}},
		{proxy.FormatAnthropic, true, func() (string, []byte) {
			return "text/event-stream", anthropicStreamToolUse("toolu_1", "vc_find_quote", `{"query":"Marigold"}`)
		}},
		{proxy.FormatOpenAI, false, func() (string, []byte) {
			return "application/json", openAIToolCall("call_1", "vc_find_quote", `{"query":"Marigold"}`)
		}},
		{proxy.FormatOpenAI, true, func() (string, []byte) {
			return "text/event-stream", openAIStreamToolCall("call_1", "vc_find_quote", `{"query":"Marigold"}`)
		}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/stream=%t", tc.format, tc.stream), func(t *testing.T) {
			final := "The boat is Marigold."
			h := newHarness(t, func(n int, s seen) (string, []byte) {
				if n == 1 {
					return tc.call()
				}
				return textAnswer(tc.format, tc.stream, final)
			}, nil)
			path, body := chat(tc.format, tc.stream, "My sailing boat is called Marigold.")
			_, out := h.post(t, path, body, nil)
			h.drain(t)
			first := answerText(t, tc.format, tc.stream, out)
			path, body = chat(tc.format, tc.stream, "My sailing boat is called Marigold.", first, "Quote what I said about my boat.")
			status, out := h.post(t, path, body, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, out)
			}
			got := h.up.Requests()
			if len(got) != 3 {
				t.Fatalf("upstream got %d requests, want 3 (turn 1, the paging call, its continuation)", len(got))
			}
			if !bytes.Contains(got[1].Body, []byte(`"vc_find_quote"`)) {
				t.Fatalf("paging tools not offered: %s", got[1].Body)
			}
			cont := string(got[2].Body)
			if !strings.Contains(cont, "Marigold") || !(strings.Contains(cont, "tool_result") || strings.Contains(cont, `"role":"tool"`)) {
				t.Fatalf("continuation lacks the tool result from memory: %s", cont)
			}
			text := answerText(t, tc.format, tc.stream, out)
			if !strings.Contains(text, final) || !markerRE.MatchString(text) {
				t.Fatalf("client answer %q lacks the final text or the marker", text)
			}
			if strings.Contains(string(out), "vc_find_quote") {
				t.Fatalf("the client saw the paging call: %s", out)
			}
			// The client pays for both rounds: its usage is their sum (the
			// canned answers each report 10 in, 5 out; OpenAI's canned
			// stream reports no usage).
			switch {
			case !tc.stream:
				var v struct{ Usage map[string]int }
				if err := json.Unmarshal(out, &v); err != nil {
					t.Fatal(err)
				}
				want := map[string]int{"input_tokens": 20, "output_tokens": 10}
				if tc.format == proxy.FormatOpenAI {
					want = map[string]int{"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}
				}
				for k, n := range want {
					if v.Usage[k] != n {
						t.Errorf("usage %s = %d, want %d (both rounds): %v", k, v.Usage[k], n, v.Usage)
					}
				}
			case tc.format == proxy.FormatAnthropic:
				var in, outTok int
				for _, ev := range splitEvents(out) {
					var v struct {
						Type    string
						Message struct {
							Usage struct {
								InputTokens int `json:"input_tokens"`
							}
						}
						Usage struct {
							InputTokens  *int `json:"input_tokens"`
							OutputTokens int  `json:"output_tokens"`
						}
					}
					at := bytes.Index(ev, []byte("data:"))
					if at < 0 {
						continue
					}
					data, _ := bytes.CutPrefix(bytes.TrimSpace(ev[at:]), []byte("data:"))
					if json.Unmarshal(bytes.TrimSpace(data), &v) != nil {
						continue
					}
					switch v.Type {
					case "message_start":
						in = v.Message.Usage.InputTokens
					case "message_delta": // the SDKs take its fields as final
						outTok = v.Usage.OutputTokens
						if v.Usage.InputTokens != nil {
							in = *v.Usage.InputTokens
						}
					}
				}
				if in != 20 || outTok != 10 {
					t.Errorf("streamed usage: input %d, output %d; want 20 and 10 (both rounds)", in, outTok)
				}
			}
			if tc.stream && tc.format == proxy.FormatAnthropic {
				// One message: one message_start, one message_stop, indexes in order.
				if n := strings.Count(string(out), "event: message_start"); n != 1 {
					t.Fatalf("%d message_start events, want 1", n)
				}
				if n := strings.Count(string(out), "event: message_stop"); n != 1 {
					t.Fatalf("%d message_stop events, want 1", n)
				}
				checkIndexes(t, out)
			}
			recs := h.proxy.Journal().Snapshot().Records
			if len(recs[0].Paging) != 1 || recs[0].Paging[0].Tool != "vc_find_quote" {
				t.Fatalf("paging call not recorded: %+v", recs[0].Paging)
			}
		})
	}
}

// checkIndexes verifies content block indexes start at 0 and rise by one.
func checkIndexes(t *testing.T, out []byte) {
	t.Helper()
	next := 0
	for _, ev := range splitEvents(out) {
		data, ok := strings.CutPrefix(strings.SplitN(string(ev), "\n", 3)[1], "data: ")
		if !ok {
			continue
		}
		var v struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}
		json.Unmarshal([]byte(data), &v)
		if v.Type == "content_block_start" {
			if v.Index != next {
				t.Fatalf("content block %d started, want %d: %s", v.Index, next, out)
			}
			next++
		}
	}
}

// TestEngineFailure: with the memory closed, requests go upstream exactly
// as the client sent them, and upstream errors come back unchanged.
func TestEngineFailure(t *testing.T) {
	h := newHarness(t, func(n int, s seen) (string, []byte) {
		if n == 1 {
			return "application/json", []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
		}
		return textAnswer(proxy.FormatAnthropic, false, "fine")
	}, nil)
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}
	path, body := chat(proxy.FormatAnthropic, false, "hello", "hi <!-- vc:session=abc -->", "again")
	raw := mustMarshal(body)
	status, out := h.post(t, path, raw, nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, out)
	}
	if got := h.up.Last(t).Body; !bytes.Equal(got, raw) {
		t.Fatalf("upstream got a modified body:\n got %s\nwant %s", got, raw)
	}
	status, out = h.post(t, path, raw, nil)
	if status != 429 || !strings.Contains(string(out), "slow down") {
		t.Fatalf("upstream error changed: %d %s", status, out)
	}
	rec := h.proxy.Journal().Snapshot().Records[0]
	if rec.Passthrough == "" {
		t.Fatalf("passthrough not recorded: %+v", rec)
	}
}

// TestToolPairsKept: old turns about other topics are dropped, but never a
// tool_use without its tool_result or the reverse.
func TestToolPairsKept(t *testing.T) {
	h := newHarness(t, func(n int, s seen) (string, []byte) {
		return textAnswer(proxy.FormatAnthropic, false, "ok")
	}, func(o *proxy.Options) { o.ProtectedTurns = 1 })
	type block = map[string]any
	msgs := []any{
		map[string]any{"role": "user", "content": "Let us plan the sourdough bread schedule with rye flour."},
		map[string]any{"role": "assistant", "content": []any{block{"type": "text", "text": "Checking the oven."}, block{"type": "tool_use", "id": "toolu_a", "name": "oven_temp", "input": block{}}}},
		map[string]any{"role": "user", "content": []any{block{"type": "tool_result", "tool_use_id": "toolu_a", "content": "oven at 230C"}}},
		map[string]any{"role": "assistant", "content": "Bake the rye sourdough at 230C."},
	}
	topics := []string{"Kubernetes cluster autoscaling pods", "Marathon training tempo runs", "Kubernetes ingress controller certificates", "Marathon nutrition gels", "Kubernetes pod eviction", "Marathon taper week"}
	for i, topic := range topics {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "user", "content": "Tell me about " + topic},
			map[string]any{"role": "assistant", "content": []any{block{"type": "tool_use", "id": id, "name": "search", "input": block{"q": topic}}}},
			map[string]any{"role": "user", "content": []any{block{"type": "tool_result", "tool_use_id": id, "content": "notes on " + topic}}},
			map[string]any{"role": "assistant", "content": "Here is what I know about " + topic + "."},
		)
	}
	// First sight stores the history; the next request is filtered.
	send := func(q string) seen {
		body := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": append(append([]any{}, msgs...), map[string]any{"role": "user", "content": q})}
		if status, out := h.post(t, "/v1/messages", body, nil); status != 200 {
			t.Fatalf("status %d: %s", status, out)
		}
		h.drain(t)
		return h.up.Last(t)
	}
	send("Kubernetes pod autoscaling again?")
	got := send("More about Kubernetes pods autoscaling please")
	var fwd struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(got.Body, &fwd); err != nil {
		t.Fatal(err)
	}
	clientCount := len(msgs) + 1
	if len(fwd.Messages) >= clientCount {
		t.Fatalf("forwarded %d messages, the client sent %d: nothing was filtered", len(fwd.Messages), clientCount)
	}
	uses, results := map[string]int{}, map[string]int{}
	prevRole := ""
	for i, m := range fwd.Messages {
		if m.Role == prevRole {
			t.Fatalf("message %d repeats role %s", i, m.Role)
		}
		prevRole = m.Role
		var blocks []struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			ToolUseID string `json:"tool_use_id"`
		}
		json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "tool_use" {
				uses[b.ID] = i
			}
			if b.Type == "tool_result" {
				results[b.ToolUseID] = i
			}
		}
	}
	for id, i := range uses {
		if j, ok := results[id]; !ok || j != i+1 {
			t.Fatalf("tool_use %s at %d has its result at %d (present %t)", id, i, j, ok)
		}
	}
	for id := range results {
		if _, ok := uses[id]; !ok {
			t.Fatalf("tool_result %s forwarded without its tool_use", id)
		}
	}
	if !strings.Contains(string(got.Body), "Kubernetes pod eviction") {
		t.Fatalf("a same-topic turn was dropped: %s", got.Body)
	}
}

// TestToolPolicy (seed 002 at the request level): "always" tools go
// upstream, "agent" tools only when the message is similar enough, and
// every decision is recorded with its reason.
func TestToolPolicy(t *testing.T) {
	h := newHarness(t, func(n int, s seen) (string, []byte) {
		return textAnswer(proxy.FormatOpenAI, false, "ok")
	}, func(o *proxy.Options) {
		o.Tools = &proxy.ToolPolicy{Default: "agent", Threshold: 0.3, Include: map[string]string{"run_shell": "always"}}
	})
	tool := func(name, desc string) map[string]any {
		return map[string]any{"type": "function", "function": map[string]any{"name": name, "description": desc, "parameters": map[string]any{"type": "object"}}}
	}
	path, body := chat(proxy.FormatOpenAI, false, "What is the weather forecast in Lisbon?")
	body["tools"] = []any{tool("run_shell", "Run a shell command"), tool("get_weather", "Weather forecast for a city"), tool("send_email", "Send an email message")}
	if status, out := h.post(t, path, body, nil); status != 200 {
		t.Fatalf("status %d: %s", status, out)
	}
	got := string(h.up.Last(t).Body)
	for name, want := range map[string]bool{"run_shell": true, "get_weather": true, "send_email": false} {
		if strings.Contains(got, `"`+name+`"`) != want {
			t.Errorf("tool %s forwarded: %t, want %t", name, !want, want)
		}
	}
	rec := h.proxy.Journal().Snapshot().Records[0]
	if len(rec.Tools) != 3 {
		t.Fatalf("recorded %d tool decisions, want 3: %+v", len(rec.Tools), rec.Tools)
	}
	for _, d := range rec.Tools {
		if d.Why == "" || (d.Name == "send_email") == d.Kept {
			t.Errorf("decision %+v", d)
		}
	}
}
