package proxy_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/proxy"
)

var byteRange = regexp.MustCompile(`\[truncated: [^\]]*bytes (\d+)-(\d+); vc_read_log reads it back\]`)

// TestDroppedHistoryReferenced: the turns the proxy leaves out of the
// forwarded history are named in the injected context with a reference to
// their master log bytes, and the model reads them back with vc_read_log,
// answered from memory.
func TestDroppedHistoryReferenced(t *testing.T) {
	var start, end int64
	h := newHarness(t, func(n int, s seen) (string, []byte) {
		if n == 1 {
			m := byteRange.FindStringSubmatch(string(s.Body))
			if m == nil {
				return textAnswer(proxy.FormatOpenAI, false, "no reference")
			}
			start, _ = strconv.ParseInt(m[1], 10, 64)
			end, _ = strconv.ParseInt(m[2], 10, 64)
			return "application/json", openAIToolCall("call_1", "vc_read_log", fmt.Sprintf(`{"start":%d,"end":%d}`, start, end))
		}
		return textAnswer(proxy.FormatOpenAI, false, "ok")
	}, func(o *proxy.Options) { o.ProtectedTurns, o.RecallTokens = 1, 150 }) // a small recall: it leaves the marathon out too
	var texts []string
	for _, topic := range []string{"Kubernetes cluster autoscaling pods", "Marathon training tempo runs at 4:50 per km", "Kubernetes ingress controller certificates",
		"Marathon nutrition gels every 40 minutes", "Kubernetes pod eviction", "Marathon taper week"} {
		texts = append(texts, "Tell me about "+topic, "Here is what I know about "+topic+".")
	}
	send := func(q string) {
		path, body := chat(proxy.FormatOpenAI, false, append(append([]string{}, texts...), q)...)
		if status, out := h.post(t, path, body, nil); status != 200 {
			t.Fatalf("status %d: %s", status, out)
		}
		h.drain(t)
	}
	send("Kubernetes pod autoscaling again?") // first sight: stored
	send("More about Kubernetes pods autoscaling please")
	got := h.up.Requests()
	if len(got) != 3 {
		t.Fatalf("upstream got %d requests, want 3 (first sight, filtered turn, its vc_read_log continuation)", len(got))
	}
	filtered := string(got[1].Body)
	if !strings.Contains(filtered, "Left out of the history below") || start == 0 && end == 0 {
		t.Fatalf("the filtered request names no dropped turn:\n%s", filtered)
	}
	if strings.Contains(filtered, "4:50 per km") {
		t.Fatalf("the marathon turn was not dropped:\n%s", filtered)
	}
	cont := string(got[2].Body)
	if !strings.Contains(cont, "Marathon training tempo runs at 4:50 per km") || !strings.Contains(cont, "call_1") {
		t.Fatalf("vc_read_log's answer (bytes %d-%d) lacks the dropped turn:\n%s", start, end, cont)
	}
}
