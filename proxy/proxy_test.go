package proxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/proxy"
	"github.com/vc-mcp/vc-mcp/proxy/proxytest"
)

var markerRE = regexp.MustCompile(`<!-- vc:session=([A-Za-z0-9._:-]+) -->`)

// chat builds a request body of a format from alternating user/assistant
// texts (the last one is the user's new message).
func chat(format proxy.Format, stream bool, texts ...string) (path string, body map[string]any) {
	switch format {
	case proxy.FormatOpenAI:
		var msgs []any
		msgs = append(msgs, map[string]string{"role": "system", "content": "You are terse."})
		for i, t := range texts {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, map[string]string{"role": role, "content": t})
		}
		return "/v1/chat/completions", map[string]any{"model": "gpt-4o", "messages": msgs, "stream": stream}
	case proxy.FormatAnthropic:
		var msgs []any
		for i, t := range texts {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, map[string]any{"role": role, "content": []any{map[string]string{"type": "text", "text": t}}})
		}
		return "/v1/messages", map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "You are terse.", "messages": msgs, "stream": stream}
	default:
		var msgs []any
		for i, t := range texts {
			role := "user"
			if i%2 == 1 {
				role = "model"
			}
			msgs = append(msgs, map[string]any{"role": role, "parts": []any{map[string]string{"text": t}}})
		}
		p := "/v1beta/models/gemini-2.0-flash:generateContent"
		if stream {
			p = "/v1beta/models/gemini-2.0-flash:streamGenerateContent"
		}
		return p, map[string]any{"contents": msgs}
	}
}

func textAnswer(format proxy.Format, stream bool, text string) (string, []byte) {
	switch {
	case format == proxy.FormatOpenAI && stream:
		return "text/event-stream", openAIStream(splitWords(text)...)
	case format == proxy.FormatOpenAI:
		return "application/json", openAIText(text)
	case format == proxy.FormatAnthropic && stream:
		return "text/event-stream", anthropicStream(splitWords(text)...)
	case format == proxy.FormatAnthropic:
		return "application/json", anthropicText(text)
	case stream:
		return "text/event-stream", geminiStream(splitWords(text)...)
	default:
		return "application/json", geminiText(text)
	}
}

func splitWords(s string) []string {
	var out []string
	for _, w := range strings.SplitAfter(s, " ") {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// systemText returns what the upstream got as the system prompt.
func systemText(t *testing.T, format proxy.Format, body []byte) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("upstream body: %v", err)
	}
	switch format {
	case proxy.FormatAnthropic:
		return string(m["system"])
	case proxy.FormatGemini:
		return string(m["systemInstruction"])
	default:
		var msgs []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		json.Unmarshal(m["messages"], &msgs)
		var b strings.Builder
		for _, x := range msgs {
			if x.Role == "system" {
				b.WriteString(x.Content + "\n")
			}
		}
		return b.String()
	}
}

// sseData returns the data of each "data:" line of a client-side
// streamed answer, "[DONE]" aside.
func sseData(out []byte) []string {
	var datas []string
	for _, ev := range splitEvents(out) {
		for _, line := range strings.Split(string(ev), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
				datas = append(datas, data)
			}
		}
	}
	return datas
}

// answerText pulls the assistant's text out of a client-side answer.
func answerText(t *testing.T, format proxy.Format, stream bool, out []byte) string {
	t.Helper()
	if stream {
		var b strings.Builder
		for _, data := range sseData(out) {
			var v struct {
				Delta struct {
					Text string `json:"text"`
				} `json:"delta"`
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
				Candidates []struct {
					Content struct {
						Parts []struct {
							Text string `json:"text"`
						} `json:"parts"`
					} `json:"content"`
				} `json:"candidates"`
			}
			json.Unmarshal([]byte(data), &v)
			b.WriteString(v.Delta.Text)
			for _, c := range v.Choices {
				b.WriteString(c.Delta.Content)
			}
			for _, c := range v.Candidates {
				for _, p := range c.Content.Parts {
					b.WriteString(p.Text)
				}
			}
		}
		return b.String()
	}
	var v struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("answer is not JSON: %v: %s", err, out)
	}
	var b strings.Builder
	for _, c := range v.Content {
		b.WriteString(c.Text)
	}
	for _, c := range v.Choices {
		b.WriteString(c.Message.Content)
	}
	for _, c := range v.Candidates {
		for _, p := range c.Content.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// TestRoundTrip runs a conversation through each format, streaming and
// not: the answer carries a session marker, the marker is stripped from the
// history before it goes upstream, and recall of an earlier turn is
// injected where the format keeps its system prompt.
func TestRoundTrip(t *testing.T) {
	for _, format := range []proxy.Format{proxy.FormatOpenAI, proxy.FormatAnthropic, proxy.FormatGemini} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", format, stream), func(t *testing.T) {
				replies := []string{"Noted: the boat is called Marigold.", "Sourdough needs a 12 hour rise.", "Your boat is Marigold."}
				// One protected turn: at turn 3 the first exchange is not
				// forwarded for certain, so recall brings it.
				h := newHarness(t, func(n int, s seen) (string, []byte) {
					return textAnswer(format, stream, replies[n%len(replies)])
				}, func(o *proxy.Options) { o.ProtectedTurns = 1 })
				texts := []string{"My sailing boat is called Marigold, remember that."}
				for turn := 0; turn < 3; turn++ {
					path, body := chat(format, stream, texts...)
					status, out := h.post(t, path, body, map[string]string{"x-api-key": "sk-test-secret"})
					if status != 200 {
						t.Fatalf("turn %d: status %d: %s", turn, status, out)
					}
					text := answerText(t, format, stream, out)
					if !markerRE.MatchString(text) {
						t.Fatalf("turn %d: answer has no session marker: %q", turn, text)
					}
					if !strings.HasPrefix(text, replies[turn]) {
						t.Fatalf("turn %d: answer %q does not start with the model's %q", turn, text, replies[turn])
					}
					got := h.up.Last(t)
					if got.Header.Get("x-api-key") != "sk-test-secret" {
						t.Fatalf("turn %d: credential not passed through: %q", turn, got.Header.Get("x-api-key"))
					}
					if bytes.Contains(got.Body, []byte("vc:session=")) {
						t.Fatalf("turn %d: marker forwarded upstream: %s", turn, got.Body)
					}
					h.drain(t)
					next := []string{"What about bread baking?", "What is my boat called?"}
					if turn < 2 {
						texts = append(texts, text, next[turn])
					}
				}
				if sys := systemText(t, format, h.up.Last(t).Body); !strings.Contains(sys, "Marigold") || !strings.Contains(sys, "virtual-context") {
					t.Fatalf("turn 3: recall not injected into the system prompt: %s", sys)
				}
				if sys := systemText(t, format, h.up.Requests()[0].Body); strings.Contains(sys, "virtual-context") {
					t.Fatalf("turn 1: nothing to recall yet, but injected: %s", sys)
				}
			})
		}
	}
}

// TestRecallSkipsForwardedTurns: a turn the proxy forwards anyway (a
// protected recent one) is not injected again as recalled context.
func TestRecallSkipsForwardedTurns(t *testing.T) {
	replies := []string{"Noted: the boat is called Marigold.", "Noted: the mooring is at Pier 39.", "Marigold, at Pier 39."}
	h := newHarness(t, func(n int, s seen) (string, []byte) {
		return textAnswer(proxy.FormatOpenAI, false, replies[n%len(replies)])
	}, nil) // two protected turns: the whole history below is forwarded
	texts := []string{"My sailing boat is called Marigold, remember that."}
	next := []string{"The boat Marigold is moored at Pier 39.", "Where is my boat Marigold moored?"}
	for turn := 0; turn < 3; turn++ {
		path, body := chat(proxy.FormatOpenAI, false, texts...)
		if status, out := h.post(t, path, body, nil); status != 200 {
			t.Fatalf("turn %d: status %d: %s", turn, status, out)
		} else if turn < 2 {
			texts = append(texts, answerText(t, proxy.FormatOpenAI, false, out), next[turn])
		}
		h.drain(t)
	}
	last := h.up.Last(t).Body
	if !bytes.Contains(last, []byte("moored at Pier 39")) {
		t.Fatalf("the protected turn was not forwarded: %s", last)
	}
	if sys := systemText(t, proxy.FormatOpenAI, last); strings.Contains(sys, "Pier 39") {
		t.Fatalf("a forwarded turn was injected again as recalled context: %s", sys)
	}
	var r proxy.Record
	for _, rec := range h.proxy.Journal().Snapshot().Records {
		if rec.ID > r.ID {
			r = rec
		}
	}
	if r.RecallExcluded == 0 {
		t.Fatalf("the last record counts no recalled turn left out: %+v", r)
	}
}

// TestTopicsSurviveRestart: a proxy that restarts learns the topics of the
// history's turns from memory, so it still drops the off-topic ones.
func TestTopicsSurviveRestart(t *testing.T) {
	replies := []string{"Noted: your sailing boat is Marigold.", "Use strong bread flour for sourdough.", "Stake the tomato plants early.", "Your sailing boat is Marigold."}
	answer := func(n int, s seen) (string, []byte) {
		return textAnswer(proxy.FormatOpenAI, false, replies[n%len(replies)])
	}
	h := newHarness(t, answer, func(o *proxy.Options) { o.ProtectedTurns = 1 })
	texts := []string{"My sailing boat is called Marigold."}
	next := []string{"Sourdough bread needs a long rise; which flour should I buy?", "The tomato plants in the garden keep falling over.", "What is my sailing boat called?"}
	for turn := 0; turn < 3; turn++ {
		path, body := chat(proxy.FormatOpenAI, false, texts...)
		status, out := h.post(t, path, body, nil)
		if status != 200 {
			t.Fatalf("turn %d: status %d: %s", turn, status, out)
		}
		texts = append(texts, answerText(t, proxy.FormatOpenAI, false, out), next[turn])
		h.drain(t)
	}

	// A new proxy over the same memory: nothing of the session in its own
	// state.
	up := proxytest.NewUpstream(t, answer)
	p2, err := proxy.New(proxy.Options{Upstream: up.URL, Memory: h.store, ProtectedTurns: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p2}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	h2 := &harness{store: h.store, proxy: p2, up: up, url: "http://" + l.Addr().String()}
	path, body := chat(proxy.FormatOpenAI, false, texts...)
	if status, out := h2.post(t, path, body, nil); status != 200 {
		t.Fatalf("after restart: status %d: %s", status, out)
	}
	h2.drain(t)
	got := up.Last(t).Body
	if !bytes.Contains(got, []byte("Marigold")) {
		t.Fatalf("the on-topic turn is missing upstream: %s", got)
	}
	var fwd struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(got, &fwd); err != nil {
		t.Fatal(err)
	}
	for _, m := range fwd.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "Sourdough bread") {
			t.Fatalf("after a restart the off-topic turn was forwarded (its topics unknown): %s", got)
		}
	}
}

// TestStreamBytes: the client gets the upstream's stream byte for byte,
// plus only the marker events.
func TestStreamBytes(t *testing.T) {
	for _, format := range []proxy.Format{proxy.FormatOpenAI, proxy.FormatAnthropic, proxy.FormatGemini} {
		t.Run(string(format), func(t *testing.T) {
			var sent []byte
			h := newHarness(t, func(n int, s seen) (string, []byte) {
				ct, b := textAnswer(format, true, "one two three four")
				sent = b
				return ct, b
			}, nil)
			path, body := chat(format, true, "hello there")
			_, out := h.post(t, path, body, nil)
			rest := removeMarkerEvents(t, out)
			if !bytes.Equal(rest, sent) {
				t.Fatalf("stream differs from the upstream's:\n got %q\nwant %q", rest, sent)
			}
		})
	}
}

// removeMarkerEvents drops the events that carry the session marker (for
// Anthropic, the whole added content block), failing if there are none.
func removeMarkerEvents(t *testing.T, out []byte) []byte {
	t.Helper()
	evs := splitEvents(out)
	var rest []byte
	found := -1
	for i, ev := range evs {
		if markerRE.Match(ev) {
			found = i
		}
	}
	if found < 0 {
		t.Fatalf("no marker event in %q", out)
	}
	skip := map[int]bool{found: true}
	if bytes.Contains(evs[found], []byte("content_block_delta")) {
		skip[found-1], skip[found+1] = true, true
	}
	for i, ev := range evs {
		if !skip[i] {
			rest = append(rest, ev...)
		}
	}
	return rest
}
