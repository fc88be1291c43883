package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vc-mcp/vc-mcp/dashboard"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/proxy"
	"github.com/vc-mcp/vc-mcp/proxy/proxytest"
)

// site is a proxy and its dashboard on one 127.0.0.1 port, over a real
// store and a fake upstream.
type site struct {
	base  string
	proxy *proxy.Server
}

func newSite(t *testing.T) *site {
	t.Helper()
	store, err := memory.Open(context.Background(), memory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	up := proxytest.NewUpstream(t, func(n int, s proxytest.Seen) (string, []byte) {
		return "application/json", proxytest.AnthropicText("Noted, the harbour gate code is 8812.")
	})
	journal := proxy.NewJournal(0)
	p, err := proxy.New(proxy.Options{Upstream: up.URL, Memory: store, Journal: journal, Label: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := dashboard.New(dashboard.Options{Journal: journal, Memory: store, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/dashboard", d)
	mux.Handle("/dashboard/", d)
	mux.Handle("/", p)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Drain(ctx)
		srv.Close()
	})
	return &site{base: "http://" + l.Addr().String(), proxy: p}
}

// ask sends one Messages API request with the given user turns through the proxy.
func (s *site) ask(t *testing.T, texts ...string) {
	t.Helper()
	var msgs []any
	for i, x := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]string{"role": role, "content": x})
	}
	body, _ := json.Marshal(map[string]any{"model": "claude-vc-test", "max_tokens": 100, "messages": msgs})
	req, _ := http.NewRequest("POST", s.base+"/v1/messages", strings.NewReader(string(body)))
	req.Header.Set("x-api-key", "sk-ant-secret-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("proxy answered %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.proxy.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, url string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestLoopbackOnly: foreign Hosts (DNS rebinding) and Origins are refused.
func TestLoopbackOnly(t *testing.T) {
	s := newSite(t)
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"loopback", nil, 200},
		{"localhost host", map[string]string{"Host": "localhost:5757"}, 200},
		{"rebinding host", map[string]string{"Host": "evil.example:5757"}, 403},
		{"foreign origin", map[string]string{"Origin": "https://evil.example"}, 403},
		{"loopback origin", map[string]string{"Origin": "http://127.0.0.1:5757"}, 200},
	} {
		if got, body := get(t, s.base+"/dashboard/api/snapshot", tc.header); got != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, got, tc.want, body)
		}
	}
}

// TestExports: the session export and the raw bodies hold what went
// through, and never the credential, nor a secret pasted in a message
// (the bodies used to show it raw: a hostile review).
func TestExports(t *testing.T) {
	s := newSite(t)
	pasted := "sk-proj-" + strings.Repeat("Qw3rTy9Ui0", 5)
	first := "The harbour gate code is 8812. My key is " + pasted + " for the gate app."
	s.ask(t, first)
	s.ask(t, first, "Noted.", "What is the harbour gate code?")
	status, body := get(t, s.base+"/dashboard/api/export", nil)
	if status != 200 {
		t.Fatalf("export: %d %s", status, body)
	}
	var ex dashboard.Export
	if err := json.Unmarshal([]byte(body), &ex); err != nil {
		t.Fatal(err)
	}
	if len(ex.Records) != 2 || len(ex.Sessions) != 1 || ex.Memory[ex.Sessions[0].ID].Totals.Turns == 0 {
		t.Fatalf("export: %d records, %d sessions, memory %+v", len(ex.Records), len(ex.Sessions), ex.Memory)
	}
	if ex.Records[0].ResponseTags == nil || ex.Records[0].InjectedTokens == 0 {
		t.Fatalf("newest record lacks response tags or injection: %+v", ex.Records[0])
	}
	_, bodies := get(t, s.base+"/dashboard/api/bodies?download=1", nil)
	if !strings.Contains(bodies, "harbour gate") {
		t.Fatalf("bodies: %s", bodies)
	}
	if strings.Contains(body+bodies, "sk-ant-secret-key") {
		t.Fatal("a credential reached the dashboard")
	}
	_, snap := get(t, s.base+"/dashboard/api/snapshot", nil)
	if strings.Contains(body+bodies+snap, pasted) || !strings.Contains(bodies, "[secret:openai-key]") {
		t.Fatal("a pasted secret reached the dashboard, or its placeholder is not in the bodies")
	}
}

// chromium finds Debian's Chromium (installed by .ci/run).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("headless Chromium not found: install Debian's chromium (apt-get install chromium; .ci/run does)")
	return ""
}

// TestDashboardInChromium: in headless Chromium, rows appear live as
// requests pass, newest first, response tags arrive, the inspector opens
// on a click, and a screenshot is kept.
func TestDashboardInChromium(t *testing.T) {
	exe := chromium(t)
	s := newSite(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	if err := chromedp.Do(bctx, chromedp.Navigate(s.base+"/dashboard/"), chromedp.WaitVisible("#live.on")); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}
	s.ask(t, "The harbour gate code is 8812.")
	if err := chromedp.Do(bctx, chromedp.WaitVisible(`#grid tbody tr[data-id="1"]`)); err != nil {
		t.Fatalf("row 1 did not appear live: %v", err)
	}
	s.ask(t, "The harbour gate code is 8812.", "Noted.", "What is the harbour gate code?")
	if err := chromedp.Do(bctx, chromedp.WaitVisible(`#grid tbody tr[data-id="2"] .tag.resp`)); err != nil {
		t.Fatalf("row 2 and its response tags did not appear live: %v", err)
	}
	first, err := chromedp.Run(bctx, chromedp.AttributeValue(`#grid tbody tr:first-child`, "data-id"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Value != "2" {
		t.Fatalf("first row is request %q, want the newest (2)", first.Value)
	}
	if err := chromedp.Do(bctx, chromedp.Click(`#grid tbody tr[data-id="2"]`), chromedp.WaitVisible(`#inspector #injected`), chromedp.WaitVisible(`#history table`)); err != nil {
		t.Fatalf("the inspector did not open: %v", err)
	}
	injected, err := chromedp.Run(bctx, chromedp.Text(`#injected`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(injected, "8812") {
		t.Fatalf("inspector's injected context: %q", injected)
	}
	msgs, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#messages .msg").length`))
	if err != nil {
		t.Fatal(err)
	}
	if msgs != 3 {
		t.Fatalf("inspector lists %d messages, want 3", msgs)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("VC_ARTIFACTS_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dashboard.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(shot))
}
