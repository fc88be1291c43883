package proxy_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/internal/syncbuf"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/proxy"
	"github.com/vc-mcp/vc-mcp/proxy/proxytest"
)

// TestReadOnlyMemory: in front of a read-only memory the proxy forwards
// every exchange and stores none; each exchange's record says why, and the
// log says it once, not once per exchange.
func TestReadOnlyMemory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := memory.Open(ctx, memory.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Ingest(ctx, memory.IngestRequest{ConversationID: "earlier", Messages: []memory.Message{
		{Role: "user", Content: json.RawMessage(`"The boat Marigold is moored at Pier 39."`)},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := memory.Open(ctx, memory.Options{Dir: dir, ReadOnly: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })

	var logs syncbuf.Buffer
	up := proxytest.NewUpstream(t, func(n int, s seen) (string, []byte) {
		return textAnswer(proxy.FormatOpenAI, false, "Noted.")
	})
	h := newHarnessWith(t, up.URL, ro, func(o *proxy.Options) { o.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	texts := []string{"Where is my boat Marigold moored?"}
	for turn := 0; turn < 3; turn++ {
		path, body := chat(proxy.FormatOpenAI, false, texts...)
		status, out := h.post(t, path, body, nil)
		if status != 200 {
			t.Fatalf("turn %d: status %d: %s", turn, status, out)
		}
		texts = append(texts, answerText(t, proxy.FormatOpenAI, false, out), "And what colour is she?")
		h.drain(t)
	}
	recs := h.proxy.Journal().Snapshot().Records
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, r := range recs {
		if r.Stored != 0 || !strings.Contains(r.StoreError, "is served read-only") {
			t.Errorf("record %d: stored %d, store error %q", r.ID, r.Stored, r.StoreError)
		}
	}
	if n := strings.Count(logs.String(), "the memory is read-only"); n != 1 {
		t.Errorf("the read-only refusal was logged %d times, want once:\n%s", n, logs.String())
	}
	convs, err := ro.Conversations(ctx)
	if err != nil || len(convs) != 1 {
		t.Errorf("conversations after the exchanges: %+v, %v (want the one stored before)", convs, err)
	}
}
