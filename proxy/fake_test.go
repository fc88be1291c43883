package proxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/proxy"
	"github.com/vc-mcp/vc-mcp/proxy/proxytest"
)

type seen = proxytest.Seen

var (
	splitEvents            = proxytest.SplitEvents
	openAIText             = proxytest.OpenAIText
	openAIToolCall         = proxytest.OpenAIToolCall
	openAIStream           = proxytest.OpenAIStream
	openAIStreamToolCall   = proxytest.OpenAIStreamToolCall
	anthropicText          = proxytest.AnthropicText
	anthropicToolUse       = proxytest.AnthropicToolUse
	anthropicStream        = proxytest.AnthropicStream
	anthropicStreamToolUse = proxytest.AnthropicStreamToolUse
	geminiText             = proxytest.GeminiText
	geminiStream           = proxytest.GeminiStream
	mustMarshal            = proxytest.MustMarshal
)

// harness is a proxy on 127.0.0.1 over a real store, in front of a fake upstream.
type harness struct {
	store *memory.Store
	proxy *proxy.Server
	up    *proxytest.Upstream
	url   string
}

func newHarness(t testing.TB, answer proxytest.AnswerFunc, tweak func(*proxy.Options)) *harness {
	t.Helper()
	up := proxytest.NewUpstream(t, answer)
	h := newHarnessFor(t, up.URL, tweak)
	h.up = up
	return h
}

// newHarnessFor is newHarness in front of any upstream URL.
func newHarnessFor(t testing.TB, upstream string, tweak func(*proxy.Options)) *harness {
	t.Helper()
	store, err := memory.Open(context.Background(), memory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return newHarnessWith(t, upstream, store, tweak)
}

// newHarnessWith is newHarnessFor over a given store.
func newHarnessWith(t testing.TB, upstream string, store *memory.Store, tweak func(*proxy.Options)) *harness {
	t.Helper()
	opts := proxy.Options{Upstream: upstream, Memory: store, ProtectedTurns: 2}
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
	return &harness{store: store, proxy: p, url: "http://" + l.Addr().String()}
}

func (h *harness) drain(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.proxy.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

// post sends a body to the proxy and returns the status and answer.
func (h *harness) post(t testing.TB, path string, body any, header map[string]string) (int, []byte) {
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
