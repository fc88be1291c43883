package proxy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/proxy"
	"github.com/vc-mcp/vc-mcp/proxy/proxytest"
)

// errorEvents are each format's error event mid-stream (overloaded).
var errorEvents = map[proxy.Format]string{
	proxy.FormatOpenAI:    "data: {\"error\":{\"message\":\"overloaded mid-stream\",\"type\":\"server_error\"}}\n\n",
	proxy.FormatAnthropic: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
	proxy.FormatGemini:    "data: {\"error\":{\"code\":503,\"message\":\"overloaded\",\"status\":\"UNAVAILABLE\"}}\n\n",
}

// brokenStream is a streamed answer of text that stops after its first
// events (its text block still open, no finish), followed by tail: nothing
// (the upstream ends the body there), proxytest.Reset, or an error event.
func brokenStream(format proxy.Format, text, tail string) []byte {
	_, whole := textAnswer(format, true, text)
	keep := map[proxy.Format]int{proxy.FormatOpenAI: 3, proxy.FormatAnthropic: 5, proxy.FormatGemini: 2}[format]
	var b []byte
	for _, ev := range splitEvents(whole)[:keep] {
		b = append(b, ev...)
	}
	return append(b, tail...)
}

// postStream sends a body and reads the whole answer, returning the read's
// error instead of failing (a broken answer must end in one).
func postStream(t *testing.T, h *harness, path string, body any) (int, []byte, error) {
	t.Helper()
	resp, err := http.Post(h.url+path, "application/json", bytes.NewReader(mustMarshal(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// storedTexts lists a conversation's stored turns' texts, in order.
func storedTexts(t *testing.T, store *memory.Store, conv string) []string {
	t.Helper()
	var out []string
	for i := 1; ; i++ {
		turn, err := store.Turn(context.Background(), conv, fmt.Sprintf("t%d", i))
		if errors.Is(err, memory.ErrNotFound) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, turn.Text)
	}
}

// TestBrokenStream: a streamed answer that breaks off (the body ends before
// the answer does, the connection is reset, or an error event comes) is
// not passed off as whole: the client's read fails, no session marker is
// added, and nothing of the exchange is stored, so the client's retry
// stores the user's message once, with the whole answer.
func TestBrokenStream(t *testing.T) {
	const (
		first   = "My sailing boat is called Marigold."
		second  = "Where should I moor the boat tonight?"
		answer1 = "Noted: the boat is called Marigold."
		answer2 = "Moor her at Pier 39 tonight, away from the ferry wake."
	)
	for _, format := range []proxy.Format{proxy.FormatOpenAI, proxy.FormatAnthropic, proxy.FormatGemini} {
		for _, brk := range []struct{ name, tail string }{
			{"cut", ""},
			{"reset", proxytest.Reset},
			{"error event", errorEvents[format]},
		} {
			t.Run(fmt.Sprintf("%s/%s", format, brk.name), func(t *testing.T) {
				h := newHarness(t, func(n int, s seen) (string, []byte) {
					if n == 1 {
						return "text/event-stream", brokenStream(format, answer2, brk.tail)
					}
					return textAnswer(format, true, []string{answer1, "", answer2}[n])
				}, nil)
				path, body := chat(format, true, first)
				status, out, err := postStream(t, h, path, body)
				if status != 200 || err != nil {
					t.Fatalf("first exchange: status %d, %v: %s", status, err, out)
				}
				a1 := answerText(t, format, true, out)
				m := markerRE.FindStringSubmatch(a1)
				if m == nil {
					t.Fatalf("first answer has no marker: %q", a1)
				}
				h.drain(t)

				path, body = chat(format, true, first, a1, second)
				status, out, err = postStream(t, h, path, body)
				if err == nil {
					t.Errorf("the broken answer ended cleanly for the client (status %d): %q", status, out)
				}
				if markerRE.Match(out) {
					t.Errorf("the broken answer got a session marker: %q", out)
				}
				h.drain(t)

				status, out, err = postStream(t, h, path, body) // the client's retry
				if status != 200 || err != nil || !markerRE.Match(out) {
					t.Fatalf("retry: status %d, %v, marked %t: %s", status, err, markerRE.Match(out), out)
				}
				h.drain(t)
				got := storedTexts(t, h.store, m[1])
				if want := []string{first, answer1, second, answer2}; strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("stored turns:\n got %q\nwant %q", got, want)
				}
			})
		}
	}
}
