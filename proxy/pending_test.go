package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/proxy"
)

// slowIngest is a real store whose Ingest takes a while, as it does on a
// busy machine or with a large history: the proxy stores in the background.
type slowIngest struct {
	*memory.Store
	delay time.Duration
}

func (m slowIngest) Ingest(ctx context.Context, req memory.IngestRequest) (memory.IngestResult, error) {
	time.Sleep(m.delay)
	return m.Store.Ingest(ctx, req)
}

// TestPagingSeesLastExchange: a paging call in the request right after an
// exchange (whose store is still running in the background) finds that
// exchange: the proxy waits for the conversation's pending store first.
func TestPagingSeesLastExchange(t *testing.T) {
	for _, tc := range []struct {
		format proxy.Format
		stream bool
		call   func() (string, []byte)
	}{
		{proxy.FormatOpenAI, true, func() (string, []byte) {
			return "text/event-stream", openAIStreamToolCall("call_1", "vc_find_quote", `{"query":"locker"}`)
		}},
		{proxy.FormatAnthropic, false, func() (string, []byte) {
			return "application/json", anthropicToolUse("toolu_1", "vc_find_quote", map[string]any{"query": "locker"})
		}},
	} {
		t.Run(fmt.Sprintf("%s/stream=%t", tc.format, tc.stream), func(t *testing.T) {
			store, err := memory.Open(context.Background(), memory.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			h := newHarness(t, func(n int, s seen) (string, []byte) {
				if n == 1 {
					return tc.call()
				}
				return textAnswer(tc.format, tc.stream, "Noted.")
			}, func(o *proxy.Options) { o.Memory = slowIngest{Store: store, delay: 500 * time.Millisecond} })
			h.store = store
			first := "My bike is in locker 17 at the station."
			path, body := chat(tc.format, tc.stream, first)
			_, out := h.post(t, path, body, nil)
			path, body = chat(tc.format, tc.stream, first, answerText(t, tc.format, tc.stream, out), "Which locker is my bike in?")
			if status, out := h.post(t, path, body, nil); status != 200 {
				t.Fatalf("status %d: %s", status, out)
			}
			got := h.up.Requests()
			if len(got) != 3 {
				t.Fatalf("upstream got %d requests, want 3 (turn 1, the paging call, its continuation)", len(got))
			}
			if res := toolResults(t, got[2].Body); !strings.Contains(res, "17 at the station") {
				t.Fatalf("the paging call did not find the exchange just stored: %q", res)
			}
		})
	}
}

// toolResults joins the tool results of a continuation (OpenAI tool
// messages, Anthropic tool_result blocks).
func toolResults(t *testing.T, body []byte) string {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range req.Messages {
		var s string
		if m.Role == "tool" && json.Unmarshal(m.Content, &s) == nil {
			b.WriteString(s + "\n")
		}
		var blocks []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, bl := range blocks {
				if bl.Type == "tool_result" {
					b.WriteString(bl.Content + "\n")
				}
			}
		}
	}
	return b.String()
}
