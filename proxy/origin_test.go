package proxy_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/proxy"
)

// TestWebPagesRefused: the proxy's routes have /mcp's Host and Origin
// policy. A web page that rebinds its DNS name to 127.0.0.1, or posts
// text/plain from its own origin (no CORS preflight), is refused before it
// reaches memory or the model: no recall of the conversation it names, no
// exchange stored. SDKs and curl (no Origin, a loopback Host) and allowed
// origins go through.
func TestWebPagesRefused(t *testing.T) {
	const secret = "The vault combination is 31-7-44 for the basement"
	// A conversation an MCP host stored under a well-known name; the page's
	// history names it in a session marker.
	attack := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"ok <!-- vc:session=work -->"},{"role":"user","content":"what is the vault combination for the basement"}]}`)
	for _, tc := range []struct {
		name    string
		path    string
		host    string // "" = the listener's address
		header  map[string]string
		allowed []string
		want    int
	}{
		{name: "rebound Host", path: "/v1/chat/completions", host: "evil.example:80", want: 403},
		{name: "rebound Host, its own Origin, text/plain", path: "/v1/chat/completions", host: "evil.example:80",
			header: map[string]string{"Origin": "http://evil.example:80", "Content-Type": "text/plain"}, want: 403},
		{name: "foreign Origin", path: "/v1/chat/completions", header: map[string]string{"Origin": "https://evil.example"}, want: 403},
		{name: "foreign Origin on Anthropic's route", path: "/v1/messages", header: map[string]string{"Origin": "https://evil.example"}, want: 403},
		{name: "foreign Origin on Gemini's route", path: "/v1beta/models/gemini-2.0-flash:generateContent", header: map[string]string{"Origin": "https://evil.example"}, want: 403},
		{name: "foreign Origin on a forwarded route", path: "/v1/models", header: map[string]string{"Origin": "https://evil.example"}, want: 403},
		{name: "rebound Host on a forwarded route", path: "/v1/embeddings", host: "evil.example", want: 403},
		{name: "origin null", path: "/v1/chat/completions", header: map[string]string{"Origin": "null"}, want: 403},
		{name: "SDK: no Origin", path: "/v1/chat/completions", want: 200},
		{name: "localhost Host", path: "/v1/chat/completions", host: "localhost", want: 200},
		{name: "loopback Origin", path: "/v1/chat/completions", header: map[string]string{"Origin": "http://localhost:3000"}, want: 200},
		{name: "allowed Origin", path: "/v1/chat/completions", header: map[string]string{"Origin": "https://app.example"}, allowed: []string{"https://app.example"}, want: 200},
		{name: "any Origin allowed", path: "/v1/chat/completions", header: map[string]string{"Origin": "https://evil.example"}, allowed: []string{"*"}, want: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(n int, s seen) (string, []byte) {
				return "application/json", openAIText("Noted.")
			}, func(o *proxy.Options) { o.AllowedOrigins = tc.allowed })
			if _, err := h.store.Ingest(context.Background(), memory.IngestRequest{ConversationID: "work", Messages: []memory.Message{
				{Role: "user", Content: mustMarshal(secret)}, {Role: "assistant", Content: mustMarshal("Noted the basement vault combination.")},
			}}); err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest("POST", h.url+tc.path, strings.NewReader(string(attack)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			h.drain(t)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, out)
			}
			got := storedTexts(t, h.store, "work")
			if tc.want != 403 {
				return
			}
			if n := len(h.up.Requests()); n != 0 {
				t.Errorf("a refused request reached the upstream (%d requests): %s", n, h.up.Last(t).Body)
			}
			if len(got) != 2 {
				t.Errorf("a refused request was stored: %q", got)
			}
			if !strings.Contains(string(out), "proxy_error") {
				t.Errorf("the refusal does not say why in the API's error shape: %s", out)
			}
		})
	}
}
