package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/internal/syncbuf"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/proxy"
	"github.com/vc-mcp/vc-mcp/proxy/proxytest"
)

// storedTurns lists a conversation's turns in memory, oldest first, as
// "role: text" (a tool-only turn shows its flags).
func storedTurns(t *testing.T, store *memory.Store, conv string) []string {
	t.Helper()
	v, err := store.View(context.Background(), conv)
	if err != nil {
		t.Fatalf("view %s: %v", conv, err)
	}
	var turns []memory.ViewTurn
	for _, s := range v.Segments {
		turns = append(turns, s.Turns...)
	}
	turns = append(turns, v.Active...)
	sort.SliceStable(turns, func(i, j int) bool { return turnNumber(turns[i].TurnID) < turnNumber(turns[j].TurnID) })
	out := make([]string, len(turns))
	for i, tu := range turns {
		text := tu.Text
		if tu.ToolUse {
			text += " [tool call]"
		}
		if tu.ToolResult {
			text += " [tool result]"
		}
		out[i] = tu.Role + ": " + strings.TrimSpace(text)
	}
	return out
}

func turnNumber(id string) int {
	var n int
	fmt.Sscanf(id, "t%d", &n)
	return n
}

// sessionOf returns the conversation an answer's marker names.
func sessionOf(t *testing.T, out []byte) string {
	t.Helper()
	m := markerRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no session marker in %s", out)
	}
	return string(m[1])
}

// clientMessage is the assistant message a client SDK builds from the
// proxy's answer and sends back in its next request's history: the
// non-streamed message as it came, or the stream's deltas put together.
func clientMessage(t *testing.T, format proxy.Format, stream bool, out []byte) any {
	t.Helper()
	if !stream {
		var v struct {
			Content    json.RawMessage `json:"content"`
			Choices    []struct{ Message json.RawMessage }
			Candidates []struct{ Content json.RawMessage }
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("answer is not JSON: %v: %s", err, out)
		}
		switch format {
		case proxy.FormatOpenAI:
			return v.Choices[0].Message
		case proxy.FormatAnthropic:
			return map[string]any{"role": "assistant", "content": v.Content}
		default:
			return v.Candidates[0].Content
		}
	}
	var text strings.Builder
	var calls []map[string]any // OpenAI
	blocks := map[int]map[string]any{}
	var inputs = map[int]*strings.Builder{}
	var parts []any // Gemini: each chunk's parts, as they came
	for _, data := range sseData(out) {
		var v struct {
			Type         string         `json:"type"`
			Index        int            `json:"index"`
			ContentBlock map[string]any `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
			Candidates []struct {
				Content struct {
					Parts []any `json:"parts"`
				} `json:"content"`
			} `json:"candidates"`
		}
		json.Unmarshal([]byte(data), &v)
		for _, c := range v.Choices {
			text.WriteString(c.Delta.Content)
			for _, tc := range c.Delta.ToolCalls {
				for len(calls) <= tc.Index {
					calls = append(calls, map[string]any{"type": "function", "function": map[string]string{"name": "", "arguments": ""}})
				}
				fn := calls[tc.Index]["function"].(map[string]string)
				if tc.ID != "" {
					calls[tc.Index]["id"] = tc.ID
				}
				fn["name"] += tc.Function.Name
				fn["arguments"] += tc.Function.Arguments
			}
		}
		switch v.Type {
		case "content_block_start":
			blocks[v.Index] = v.ContentBlock
			inputs[v.Index] = &strings.Builder{}
		case "content_block_delta":
			if v.Delta.Type == "text_delta" {
				blocks[v.Index]["text"] = blocks[v.Index]["text"].(string) + v.Delta.Text
			} else {
				inputs[v.Index].WriteString(v.Delta.PartialJSON)
			}
		}
		for _, c := range v.Candidates {
			parts = append(parts, c.Content.Parts...)
		}
	}
	switch format {
	case proxy.FormatOpenAI:
		m := map[string]any{"role": "assistant", "content": text.String()}
		if len(calls) > 0 {
			m["tool_calls"] = calls
		}
		return m
	case proxy.FormatAnthropic:
		content := make([]any, len(blocks))
		for i, b := range blocks {
			if b["type"] == "tool_use" {
				b["input"] = json.RawMessage(inputs[i].String())
			}
			content[i] = b
		}
		return map[string]any{"role": "assistant", "content": content}
	default:
		return map[string]any{"role": "model", "parts": parts}
	}
}

// toolResult is the client's answer to its own tool call in each format.
func toolResult(format proxy.Format, id, text string) any {
	switch format {
	case proxy.FormatOpenAI:
		return map[string]any{"role": "tool", "tool_call_id": id, "content": text}
	case proxy.FormatAnthropic:
		return map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": text}}}
	default:
		return map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "get_weather", "response": map[string]any{"content": text}}}}}
	}
}

// toolCallAnswer is the model calling the client's own get_weather tool.
func toolCallAnswer(format proxy.Format, stream bool) (string, []byte) {
	switch {
	case format == proxy.FormatOpenAI && stream:
		return "text/event-stream", openAIStreamToolCall("call_w", "get_weather", `{"city": "Paris"}`)
	case format == proxy.FormatOpenAI:
		return "application/json", openAIToolCall("call_w", "get_weather", `{"city": "Paris"}`)
	case format == proxy.FormatAnthropic && stream:
		return "text/event-stream", anthropicStreamToolUse("toolu_w", "get_weather", `{"city": "Paris"}`)
	case format == proxy.FormatAnthropic:
		return "application/json", anthropicToolUse("toolu_w", "get_weather", map[string]any{"city": "Paris"})
	case stream:
		return "text/event-stream", proxytest.GeminiStreamFunctionCall("get_weather", map[string]any{"city": "Paris"})
	default:
		return "application/json", proxytest.GeminiFunctionCall("get_weather", map[string]any{"city": "Paris"})
	}
}

// history appends messages to a request body's history.
func history(format proxy.Format, body map[string]any, msgs ...any) {
	key := "messages"
	if format == proxy.FormatGemini {
		key = "contents"
	}
	body[key] = append(body[key].([]any), msgs...)
}

// TestToolLoopStoredOnce: a client answering the model's tool call sends
// back its history with the model's tool call in it; the proxy stored that
// answer in the form the client resends it, so the resend is recognised
// and every message is stored once, streamed or not, in every format.
func TestToolLoopStoredOnce(t *testing.T) {
	for _, format := range []proxy.Format{proxy.FormatOpenAI, proxy.FormatAnthropic, proxy.FormatGemini} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", format, stream), func(t *testing.T) {
				h := newHarness(t, func(n int, s seen) (string, []byte) {
					switch n {
					case 1:
						return toolCallAnswer(format, stream)
					case 2:
						return textAnswer(format, stream, "Sunny, 23C in Paris.")
					}
					return textAnswer(format, stream, "Noted.")
				}, nil)
				path, body := chat(format, stream, "I am planning a trip to Paris.")
				_, out := h.post(t, path, body, nil)
				h.drain(t)
				conv := sessionOf(t, out)
				history(format, body, clientMessage(t, format, stream, out), userMessage(format, "What is the weather there?"))
				_, out = h.post(t, path, body, nil)
				h.drain(t)
				id := map[proxy.Format]string{proxy.FormatOpenAI: "call_w", proxy.FormatAnthropic: "toolu_w"}[format]
				history(format, body, clientMessage(t, format, stream, out), toolResult(format, id, "sunny 23C"))
				if status, out := h.post(t, path, body, nil); status != 200 {
					t.Fatalf("status %d: %s", status, out)
				}
				h.drain(t)
				got := storedTurns(t, h.store, conv)
				if len(got) != 6 {
					t.Fatalf("stored %d turns, want 6 (each message once):\n%s", len(got), strings.Join(got, "\n"))
				}
			})
		}
	}
}

// userMessage is a user's text message in each format.
func userMessage(format proxy.Format, text string) any {
	switch format {
	case proxy.FormatOpenAI:
		return map[string]string{"role": "user", "content": text}
	case proxy.FormatAnthropic:
		return map[string]any{"role": "user", "content": []any{map[string]string{"type": "text", "text": text}}}
	default:
		return map[string]any{"role": "user", "parts": []any{map[string]string{"text": text}}}
	}
}

// TestRepeatedExchangesKept: the same words said again later, with the
// same answer, are new turns (three rounds of "continue" leave the eight
// messages the client's history holds), while a request sent again as it
// was (a retry) stores nothing new, and a retry answered differently
// stores only the new answer.
func TestRepeatedExchangesKept(t *testing.T) {
	for _, format := range []proxy.Format{proxy.FormatOpenAI, proxy.FormatAnthropic, proxy.FormatGemini} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", format, stream), func(t *testing.T) {
				answer := "Same answer."
				h := newHarness(t, func(n int, s seen) (string, []byte) {
					return textAnswer(format, stream, answer)
				}, nil)
				path, body := chat(format, stream, "first message about gardens")
				var conv string
				var last []byte
				for round := 0; round < 4; round++ {
					if round > 0 {
						history(format, body, clientMessage(t, format, stream, last), userMessage(format, "continue"))
					}
					status, out := h.post(t, path, body, nil)
					if status != 200 {
						t.Fatalf("round %d: status %d: %s", round, status, out)
					}
					h.drain(t)
					conv, last = sessionOf(t, out), out
				}
				want := 8 // the first exchange, then three of "continue"
				if got := storedTurns(t, h.store, conv); len(got) != want {
					t.Fatalf("stored %d turns, want %d:\n%s", len(got), want, strings.Join(got, "\n"))
				}
				// A retry: the same request again, the same answer.
				h.post(t, path, body, nil)
				h.drain(t)
				if got := storedTurns(t, h.store, conv); len(got) != want {
					t.Fatalf("after a retry: stored %d turns, want %d:\n%s", len(got), want, strings.Join(got, "\n"))
				}
				// A retry answered differently: only the answer is new.
				answer = "A different answer."
				h.post(t, path, body, nil)
				h.drain(t)
				got := storedTurns(t, h.store, conv)
				if len(got) != want+1 || !strings.HasSuffix(got[want], answer) {
					t.Fatalf("after a retry answered differently: want the %d turns and the new answer:\n%s", want, strings.Join(got, "\n"))
				}
			})
		}
	}
}

// TestLongMessagesStored: a message up to memory's max_message_bytes is
// stored verbatim (a 300 KiB paste, once cut at 200 KiB); one over it is
// refused as memory refuses it: in its place a turn says how big it was
// and the limit, the rest of the exchange is stored, and a warning names
// the conversation and the sizes.
func TestLongMessagesStored(t *testing.T) {
	cases := []struct {
		name  string
		limit int // memory's and the proxy's; 0: the defaults
		size  int
		whole bool
	}{
		{"under the default limit", 0, 300 << 10, true},
		{"over the limit", 64 << 10, 100 << 10, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store, err := memory.Open(context.Background(), memory.Options{Dir: t.TempDir(), MaxMessageBytes: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			var logs syncbuf.Buffer
			up := proxytest.NewUpstream(t, func(n int, s seen) (string, []byte) {
				return textAnswer(proxy.FormatOpenAI, false, "Read it.")
			})
			h := newHarnessWith(t, up.URL, store, func(o *proxy.Options) {
				o.MaxMessageBytes = tc.limit
				o.Log = slog.New(slog.NewTextHandler(&logs, nil))
			})
			h.up = up
			paste := strings.Repeat("pasted log line 0123456789\n", tc.size/27+1)
			path, body := chat(proxy.FormatOpenAI, false, paste)
			status, out := h.post(t, path, body, nil)
			if status != 200 {
				t.Fatalf("status %d: %s", status, out)
			}
			h.drain(t)
			conv := sessionOf(t, out)
			v, err := store.View(context.Background(), conv)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Active) != 2 {
				t.Fatalf("stored %d turns, want the paste's and the answer's", len(v.Active))
			}
			got := v.Active[0].Text
			if tc.whole {
				if got != paste {
					t.Fatalf("stored %d bytes of a %d byte message, ending %q", len(got), len(paste), got[max(0, len(got)-40):])
				}
				if logs.String() != "" {
					t.Fatalf("a message under the limit was warned about: %s", logs.String())
				}
				return
			}
			if !strings.Contains(got, "not stored") || !strings.Contains(got, fmt.Sprint(tc.limit)) {
				t.Fatalf("the turn standing for the message over the limit says %q", got)
			}
			warn := logs.String()
			for _, want := range []string{"level=WARN", conv, fmt.Sprintf("bytes=%d", len(mustMarshal(paste))), fmt.Sprintf("limit=%d", tc.limit)} {
				if !strings.Contains(warn, want) {
					t.Fatalf("the warning lacks %q: %s", want, warn)
				}
			}
		})
	}
}
