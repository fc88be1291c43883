package main

// End-to-end tests of `vc-mcp proxy`: the built binary, a real store, the
// official OpenAI and Anthropic Python SDKs as clients (pinned in
// proxy/testdata/requirements.txt, installed by `make sdk-venv`), and a fake
// upstream on 127.0.0.1 that records what it receives.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/vc-mcp/vc-mcp/internal/syncbuf"
	"github.com/vc-mcp/vc-mcp/proxy/proxytest"
)

var (
	proxyListening = regexp.MustCompile(`vc-mcp proxy \S+: (http://\S+) ->`)
	sessionMarker  = regexp.MustCompile(`<!-- vc:session=([A-Za-z0-9._:-]+) -->`)
)

// sdkPython is the test venv's interpreter. A missing venv fails the test:
// these tests are the proof that real clients work through the proxy.
func sdkPython(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VC_SDK_PYTHON"); p != "" {
		return p
	}
	p, err := filepath.Abs(filepath.Join("..", "..", ".venv-test", "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the OpenAI and Anthropic SDKs are not installed (%v): run `make sdk-venv` (or set VC_SDK_PYTHON)", err)
	}
	return p
}

type proxyProc struct {
	base   string
	stderr *syncbuf.Buffer
}

// startProxy runs `vc-mcp proxy` in front of upstream.
func startProxy(t *testing.T, upstream string, extra ...string) *proxyProc {
	t.Helper()
	args := append([]string{"proxy", "--upstream", upstream, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Env = childEnv(t)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proxyProc{stderr: &syncbuf.Buffer{}}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("proxy stderr:\n%s", p.stderr.String())
		}
	})
	lines := bufio.NewScanner(pipe)
	for lines.Scan() {
		p.stderr.Write([]byte(lines.Text() + "\n"))
		if m := proxyListening.FindStringSubmatch(lines.Text()); m != nil {
			p.base = m[1]
			break
		}
	}
	if p.base == "" {
		t.Fatalf("proxy did not report its address; stderr:\n%s", p.stderr.String())
	}
	go func() {
		for lines.Scan() {
			p.stderr.Write([]byte(lines.Text() + "\n"))
		}
	}()
	return p
}

// sdkTurn is one line of sdk_client.py's output.
type sdkTurn struct {
	Turn   int      `json:"turn"`
	Text   string   `json:"text"`
	Raw    string   `json:"raw"`
	Sent   []string `json:"sent"`
	Status int      `json:"status"`
	Error  string   `json:"error"`
}

func (s sdkTurn) raw(t *testing.T) []byte {
	b, err := base64.StdEncoding.DecodeString(s.Raw)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s sdkTurn) sent(t *testing.T, i int) []byte {
	if i >= len(s.Sent) {
		t.Fatalf("turn %d: the SDK sent %d requests, want at least %d", s.Turn, len(s.Sent), i+1)
	}
	b, err := base64.StdEncoding.DecodeString(s.Sent[i])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sdkClient is one sdk_client.py process serving jobs for a test.
type sdkClient struct {
	mu     sync.Mutex
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *syncbuf.Buffer
}

var (
	sdkOnce   sync.Once
	sdkShared *sdkClient
	sdkErr    error
)

// newSDKClient returns the one sdk_client.py process the tests share
// (importing an SDK takes seconds). It ends when the test binary does: its
// stdin closes.
func newSDKClient(t *testing.T) *sdkClient {
	t.Helper()
	py := sdkPython(t)
	sdkOnce.Do(func() {
		cmd := exec.Command(py, filepath.Join("..", "..", "proxy", "testdata", "sdk_client.py"))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			sdkErr = err
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			sdkErr = err
			return
		}
		stderr := &syncbuf.Buffer{}
		cmd.Stderr = stderr
		if sdkErr = cmd.Start(); sdkErr != nil {
			return
		}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		sdkShared = &sdkClient{in: stdin, out: sc, stderr: stderr}
	})
	if sdkErr != nil {
		t.Fatalf("start sdk_client.py: %v", sdkErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sdk_client.py stderr:\n%s", sdkShared.stderr.String())
		}
	})
	return sdkShared
}

// run sends one job and reads its turns.
func (c *sdkClient) run(t *testing.T, job map[string]any) []sdkTurn {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	line, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		t.Fatalf("sdk_client.py: %v", err)
	}
	var turns []sdkTurn
	for c.out.Scan() {
		var s struct {
			sdkTurn
			Done bool `json:"done"`
		}
		if err := json.Unmarshal(c.out.Bytes(), &s); err != nil {
			t.Fatalf("sdk_client.py output %q: %v", c.out.Bytes(), err)
		}
		if s.Done {
			return turns
		}
		turns = append(turns, s.sdkTurn)
	}
	t.Fatalf("sdk_client.py ended during a job (%v); see its stderr below", c.out.Err())
	return nil
}

// waitStored polls the dashboard until n requests' exchanges are stored.
func waitStored(t *testing.T, base string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/dashboard/api/snapshot")
		if err != nil {
			t.Fatal(err)
		}
		var snap struct {
			Records []struct {
				Stored int `json:"stored"`
			} `json:"records"`
		}
		err = json.NewDecoder(resp.Body).Decode(&snap)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, r := range snap.Records {
			if r.Stored > 0 {
				done++
			}
		}
		if done >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d exchanges stored after 60s", done, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func messageCount(t *testing.T, body []byte, field string) int {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("body: %v", err)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw[field], &list); err != nil {
		t.Fatalf("body.%s: %v", field, err)
	}
	return len(list)
}

// TestProxySDKLongConversation: 45 turns with the OpenAI SDK. The fact from
// turn 1 reaches the upstream at turn 45 while the forwarded history is
// smaller than the client's; the exchange is then found by find_quote over
// MCP on the same port.
func TestProxySDKLongConversation(t *testing.T) {
	sdk := newSDKClient(t)
	up := proxytest.NewUpstream(t, func(n int, s proxytest.Seen) (string, []byte) {
		if n == 0 {
			return "application/json", proxytest.OpenAIText("Noted, I will keep the code zephyr-7 safe.")
		}
		return "application/json", proxytest.OpenAIText(fmt.Sprintf("Answer %d.", n+1))
	})
	p := startProxy(t, up.URL)
	topics := []string{"sourdough bread baking and oven spring", "kubernetes pod scheduling and node affinity", "marathon training with tempo runs", "tomato garden watering and mulch"}
	turns := []string{"Please remember: my bike locker code is 4417."}
	for i := 2; i <= 44; i++ {
		turns = append(turns, fmt.Sprintf("Tell me one more thing about %s (question %d).", topics[i%len(topics)], i))
	}
	turns = append(turns, "What was my bike locker code again?")
	got := sdk.run(t, map[string]any{"sdk": "openai", "base_url": p.base, "model": "gpt-4o", "system": "You are terse.", "turns": turns})
	if len(got) != 45 {
		t.Fatalf("%d turns answered, want 45", len(got))
	}
	m := sessionMarker.FindStringSubmatch(got[0].Text)
	if m == nil {
		t.Fatalf("turn 1 answer has no session marker: %q", got[0].Text)
	}
	reqs := up.Requests()
	if len(reqs) != 45 {
		t.Fatalf("upstream got %d requests, want 45", len(reqs))
	}
	last := reqs[44].Body
	if !bytes.Contains(last, []byte("4417")) {
		t.Fatalf("turn 45: the fact from turn 1 did not reach the upstream: %s", last)
	}
	client45 := messageCount(t, got[44].sent(t, 0), "messages")
	fwd45 := messageCount(t, last, "messages")
	if fwd45 >= client45 {
		t.Fatalf("turn 45: forwarded %d messages, the client sent %d; want fewer", fwd45, client45)
	}
	if !strings.Contains(p.stderr.String(), "turn=45 format=openai") {
		t.Fatalf("no request line for turn 45 in:\n%s", p.stderr.String())
	}
	for _, r := range reqs {
		if r.Header.Get("Authorization") != "Bearer sk-test-openai-key" {
			t.Fatalf("credential not passed through: %q", r.Header.Get("Authorization"))
		}
	}
	if strings.Contains(p.stderr.String(), "sk-test-openai-key") {
		t.Fatal("the API key was logged")
	}
	waitStored(t, p.base, 45)

	c, err := client.NewStreamableHttpClient(p.base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	for _, q := range []string{"bike locker code", "zephyr-7"} {
		res := mustOK(t, c, "find_quote", map[string]any{"conversation_id": m[1], "query": q})
		if !strings.Contains(text(res), "4417") && !strings.Contains(text(res), "zephyr") {
			t.Fatalf("find_quote %q over /mcp: %s", q, text(res))
		}
	}
}

// removeMarkerEvents drops the events carrying the session marker (for
// Anthropic the whole added content block); it fails if there are none.
func removeMarkerEvents(t *testing.T, out []byte) []byte {
	t.Helper()
	evs := proxytest.SplitEvents(out)
	found := -1
	for i, ev := range evs {
		if sessionMarker.Match(ev) {
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
	var rest []byte
	for i, ev := range evs {
		if !skip[i] {
			rest = append(rest, ev...)
		}
	}
	return rest
}

// TestProxySDKStream: a streamed answer reaches the SDK exactly as the
// upstream sent it, plus the marker events, and the SDK's own stream parser
// accepts it.
func TestProxySDKStream(t *testing.T) {
	sdk := newSDKClient(t)
	for _, kind := range []string{"anthropic", "openai"} {
		t.Run(kind, func(t *testing.T) {
			var sent [][]byte
			up := proxytest.NewUpstream(t, func(n int, s proxytest.Seen) (string, []byte) {
				var b []byte
				if kind == "anthropic" {
					b = proxytest.AnthropicStream("The ", "tide ", "turns ", "at ", "six.")
				} else {
					b = proxytest.OpenAIStream("The ", "tide ", "turns ", "at ", "six.")
				}
				sent = append(sent, b)
				return "text/event-stream", b
			})
			p := startProxy(t, up.URL)
			model := map[string]string{"anthropic": "claude-vc-test", "openai": "gpt-4o"}[kind]
			got := sdk.run(t, map[string]any{"sdk": kind, "base_url": p.base, "model": model, "raw": true, "turns": []string{"When does the tide turn?"}})
			if rest := removeMarkerEvents(t, got[0].raw(t)); !bytes.Equal(rest, sent[0]) {
				t.Fatalf("stream differs from the upstream's:\n got %q\nwant %q", rest, sent[0])
			}
			got = sdk.run(t, map[string]any{"sdk": kind, "base_url": p.base, "model": model, "stream": true, "turns": []string{"When does the tide turn?", "And tomorrow?"}})
			for _, g := range got {
				if !strings.HasPrefix(g.Text, "The tide turns at six.") || !sessionMarker.MatchString(g.Text) {
					t.Fatalf("turn %d: the SDK parsed %q", g.Turn, g.Text)
				}
			}
			if bytes.Contains(up.Last(t).Body, []byte("vc:session")) {
				t.Fatal("the marker went upstream")
			}
		})
	}
}

// TestProxySDKToolPairs: with the Anthropic SDK and a history of tool
// calls, old turns about other topics are dropped but never a tool_use
// without its tool_result.
func TestProxySDKToolPairs(t *testing.T) {
	sdk := newSDKClient(t)
	up := proxytest.NewUpstream(t, func(n int, s proxytest.Seen) (string, []byte) {
		return "application/json", proxytest.AnthropicText("Done.")
	})
	p := startProxy(t, up.URL, "--protected-turns", "1")
	type block = map[string]any
	var history []any
	topics := []string{"kubernetes pod autoscaling", "marathon tempo runs", "kubernetes ingress certificates", "marathon nutrition gels", "kubernetes pod eviction", "marathon taper week"}
	for i, topic := range topics {
		id := fmt.Sprintf("toolu_%02d", i)
		history = append(history,
			block{"role": "user", "content": "Look up " + topic},
			block{"role": "assistant", "content": []any{block{"type": "text", "text": "Searching."}, block{"type": "tool_use", "id": id, "name": "search", "input": block{"q": topic}}}},
			block{"role": "user", "content": []any{block{"type": "tool_result", "tool_use_id": id, "content": "notes on " + topic}}},
			block{"role": "assistant", "content": "Here is what I found about " + topic + "."},
		)
	}
	sdk.run(t, map[string]any{"sdk": "anthropic", "base_url": p.base, "model": "claude-vc-test", "history": history, "turns": []string{"Kubernetes pod autoscaling: anything new?"}})
	waitStored(t, p.base, 1)
	history = append(history, block{"role": "user", "content": "Kubernetes pod autoscaling: anything new?"}, block{"role": "assistant", "content": "Done."})
	got := sdk.run(t, map[string]any{"sdk": "anthropic", "base_url": p.base, "model": "claude-vc-test", "history": history, "turns": []string{"More on kubernetes pod autoscaling please"}})
	fwd := up.Last(t).Body
	if n, c := messageCount(t, fwd, "messages"), messageCount(t, got[0].sent(t, 0), "messages"); n >= c {
		t.Fatalf("forwarded %d messages of the client's %d: nothing dropped", n, c)
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(fwd, &body); err != nil {
		t.Fatal(err)
	}
	uses, results := map[string]int{}, map[string]int{}
	for i, m := range body.Messages {
		var raw []map[string]any
		json.Unmarshal(m.Content, &raw) // a string content has no blocks
		for _, b := range raw {
			switch b["type"] {
			case "tool_use":
				uses[b["id"].(string)] = i
			case "tool_result":
				results[b["tool_use_id"].(string)] = i
			}
		}
	}
	if len(uses) == 0 {
		t.Fatalf("every tool call was dropped, including same-topic ones: %s", fwd)
	}
	for id, i := range uses {
		if j, ok := results[id]; !ok || j != i+1 {
			t.Fatalf("tool_use %s (message %d) forwarded without its tool_result right after it", id, i)
		}
	}
	for id := range results {
		if _, ok := uses[id]; !ok {
			t.Fatalf("tool_result %s forwarded without its tool_use", id)
		}
	}
}

// TestProxySDKPaging: the model calls vc_find_quote; the proxy answers from
// memory and continues upstream; the SDK sees one answer, streamed or not.
func TestProxySDKPaging(t *testing.T) {
	sdk := newSDKClient(t)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%t", stream), func(t *testing.T) {
			up := proxytest.NewUpstream(t, func(n int, s proxytest.Seen) (string, []byte) {
				switch {
				case n == 1 && stream:
					return "text/event-stream", proxytest.AnthropicStreamToolUse("toolu_vc", "vc_find_quote", `{"query":"locker code"}`)
				case n == 1:
					return "application/json", proxytest.AnthropicToolUse("toolu_vc", "vc_find_quote", map[string]string{"query": "locker code"})
				case stream:
					return "text/event-stream", proxytest.AnthropicStream("Your code ", "is 4417.")
				default:
					return "application/json", proxytest.AnthropicText("Your code is 4417.")
				}
			})
			p := startProxy(t, up.URL)
			first := sdk.run(t, map[string]any{"sdk": "anthropic", "base_url": p.base, "model": "claude-vc-test", "stream": stream, "turns": []string{"My bike locker code is 4417."}})
			waitStored(t, p.base, 1)
			history := []any{map[string]any{"role": "user", "content": "My bike locker code is 4417."}, map[string]any{"role": "assistant", "content": first[0].Text}}
			got := sdk.run(t, map[string]any{"sdk": "anthropic", "base_url": p.base, "model": "claude-vc-test", "stream": stream, "history": history, "turns": []string{"What is my locker code?"}})
			if len(got[0].Sent) != 1 {
				t.Fatalf("the SDK sent %d requests, want 1", len(got[0].Sent))
			}
			if !strings.Contains(got[0].Text, "Your code is 4417.") || strings.Contains(got[0].Text, "vc_find_quote") {
				t.Fatalf("the SDK saw %q", got[0].Text)
			}
			reqs := up.Requests()
			if len(reqs) != 3 {
				t.Fatalf("upstream got %d requests, want 3", len(reqs))
			}
			if !bytes.Contains(reqs[2].Body, []byte(`"tool_result"`)) || !bytes.Contains(reqs[2].Body, []byte("4417")) {
				t.Fatalf("the continuation lacks find_quote's answer: %s", reqs[2].Body)
			}
			// The request line is written once the exchange is done, which
			// may be just after the client has its answer.
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.stderr.String(), "paging=1"); {
				if time.Now().After(deadline) {
					t.Fatalf("request line does not mention the paging call:\n%s", p.stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestProxySDKEngineFailure: when vc-mcp cannot do its part in time, the
// request goes upstream exactly as the SDK sent it, and an upstream error
// reaches the SDK unchanged.
func TestProxySDKEngineFailure(t *testing.T) {
	sdk := newSDKClient(t)
	up := proxytest.NewUpstream(t, func(n int, s proxytest.Seen) (string, []byte) {
		if n == 1 {
			return "application/json", []byte(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		}
		return "application/json", proxytest.OpenAIText("Fine.")
	})
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	if err := os.WriteFile(cfg, []byte("engine_timeout: 1ns\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, up.URL, "--proxy-config", cfg)
	history := []any{map[string]any{"role": "user", "content": "hello"}, map[string]any{"role": "assistant", "content": "hi <!-- vc:session=px-known -->"}}
	got := sdk.run(t, map[string]any{"sdk": "openai", "base_url": p.base, "model": "gpt-4o", "history": history, "turns": []string{"first", "second"}})
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(reqs))
	}
	if sent := got[0].sent(t, 0); !bytes.Equal(reqs[0].Body, sent) {
		t.Fatalf("the request was modified:\n sdk sent %s\nupstream got %s", sent, reqs[0].Body)
	}
	if got[1].Status != 429 || !strings.Contains(got[1].Error, "Rate limit reached") {
		t.Fatalf("the upstream error did not reach the SDK unchanged: %+v", got[1])
	}
	if !strings.Contains(p.stderr.String(), "passthrough") {
		t.Fatalf("no passthrough in the request lines:\n%s", p.stderr.String())
	}
}

// TestProxyBadFlags: a bad upstream or format is a clear error before anything starts.
func TestProxyBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy"}, "give --upstream URL"},
		{[]string{"proxy", "--upstream", "api.openai.com"}, "must be an http or https URL"},
		{[]string{"proxy", "--upstream", "https://x", "--format", "cohere"}, "must be auto, openai, anthropic or gemini"},
		{[]string{"proxy", "--upstream", "https://x", "--listen", "0.0.0.0:5757"}, "not a loopback address"},
		// It served /mcp, the dashboard and memory-injecting LLM routes
		// off the host with no token at all.
		{[]string{"proxy", "--upstream", "https://x", "--listen", "0.0.0.0:5757", "--allow-remote"}, "allow_remote is refused"},
	} {
		cmd := exec.Command(binary, append(tc.args, "--data-dir", t.TempDir())...)
		cmd.Env = childEnv(t)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: got %v %q, want an error with %q", tc.args, err, out, tc.want)
		}
	}
}

// TestProxyInstances: a config file lists two instances (different
// upstreams and formats) that share one memory: what went through one is
// found over MCP on the other's port.
func TestProxyInstances(t *testing.T) {
	upA := proxytest.NewUpstream(t, func(n int, s proxytest.Seen) (string, []byte) {
		return "application/json", proxytest.AnthropicText("Stored: the lighthouse keeper is Ingrid.")
	})
	upB := proxytest.NewUpstream(t, func(n int, s proxytest.Seen) (string, []byte) {
		return "application/json", proxytest.OpenAIText("ok")
	})
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	yaml := fmt.Sprintf("instances:\n  - {listen: 127.0.0.1:0, upstream: %s, label: claude, format: anthropic}\n  - {listen: 127.0.0.1:0, upstream: %s, label: gpt, format: openai}\n", upA.URL, upB.URL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "proxy", "--proxy-config", cfg, "--data-dir", t.TempDir())
	cmd.Env = childEnv(t)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	bases := map[string]string{}
	lines := bufio.NewScanner(pipe)
	for len(bases) < 2 && lines.Scan() {
		if m := regexp.MustCompile(`vc-mcp proxy (\S+): (http://\S+) ->`).FindStringSubmatch(lines.Text()); m != nil {
			bases[m[1]] = m[2]
		}
	}
	if len(bases) != 2 {
		t.Fatalf("instances reported: %v", bases)
	}
	go func() {
		for lines.Scan() {
		}
	}()
	body := `{"model":"claude-vc-test","max_tokens":50,"messages":[{"role":"user","content":"The lighthouse keeper is Ingrid."}]}`
	resp, err := http.Post(bases["claude"]+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Content []struct{ Text string } `json:"content"`
	}
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	m := sessionMarker.FindStringSubmatch(answer.Content[0].Text)
	if m == nil {
		t.Fatalf("no marker in %+v", answer)
	}
	waitStored(t, bases["gpt"], 1) // one journal: the other port's dashboard sees it
	c, err := client.NewStreamableHttpClient(bases["gpt"] + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	if res := mustOK(t, c, "find_quote", map[string]any{"conversation_id": m[1], "query": "lighthouse keeper"}); !strings.Contains(text(res), "Ingrid") {
		t.Fatalf("find_quote on the other instance: %s", text(res))
	}
}
