package main

// End-to-end tests of the shared server: real `vc-mcp serve` processes
// started as hosts start them (no --data-dir, a minimal environment, `/` as
// working directory), driven by mcp-go clients.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/internal/syncbuf"
	"github.com/vc-mcp/vc-mcp/share"
)

// hostEnv is what a GUI host passes a stdio server: PATH and the user's
// directories (here inside home), nothing else.
func hostEnv(home string, extra ...string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"VC_DAEMON_IDLE=3s",
	}, extra...)
}

func sharedDataDir(home string) string { return filepath.Join(home, ".local", "share", "vc-mcp") }

type host struct {
	name   string
	c      *client.Client
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer
}

// startHost starts `vc-mcp serve` exactly as a host does and initializes
// it with the host's name as client info.
func startHost(t testing.TB, env []string, name string, opts ...client.ClientOption) *host {
	t.Helper()
	h := &host{name: name, stderr: &syncbuf.Buffer{}}
	tr := transport.NewStdioWithOptions(binary, nil, []string{"serve"}, transport.WithCommandFunc(
		func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Env, cmd.Dir, cmd.Stderr = env, "/", h.stderr
			h.cmd = cmd
			return cmd, nil
		}))
	h.c = client.NewClient(tr, opts...)
	if err := h.c.Start(context.Background()); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		h.c.Close()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, h.stderr.String())
		}
	})
	initAs(t, h.c, name)
	return h
}

func initAs(t testing.TB, c *client.Client, name string) {
	t.Helper()
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: name, Version: "1.0"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize %s: %v", name, err)
	}
}

// stopOwner stops the data directory's shared server when the test ends
// (after the hosts, whose bridges would otherwise start a new one), and
// waits until no process holds the data directory.
func stopOwner(t testing.TB, env []string) {
	quiesce(t, sharedDataDir(envValue(env, "HOME")))
}

var quiesced sync.Map // test name + data dir -> true

// quiesce registers, once per test and data directory, a cleanup that
// stops the shared server and waits until no process holds dir. Call it
// before starting the first host on dir, so it runs after their cleanups.
// stopShared stops the shared server of dir (if any) and waits until no
// process holds the data directory, so a test can change its files.
func stopShared(t testing.TB, dir string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, err := share.Stop(context.Background(), dir, "")
		if errors.Is(err, share.ErrNoOwner) && !holderAlive(dir) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("a vc-mcp process still holds %s", dir)
}

func quiesce(t testing.TB, dir string) {
	if _, loaded := quiesced.LoadOrStore(t.Name()+"\x00"+dir, true); loaded {
		return
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(share.LogFile(dir)); err == nil {
				t.Logf("daemon.log:\n%s", b)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		quiet := 0
		for quiet < 3 && time.Now().Before(deadline) {
			_, err := share.Stop(context.Background(), dir, "")
			if errors.Is(err, share.ErrNoOwner) && !holderAlive(dir) {
				quiet++
			} else {
				quiet = 0
			}
			time.Sleep(100 * time.Millisecond)
		}
		if quiet < 3 {
			t.Errorf("a vc-mcp process still holds %s", dir)
		}
	})
}

// holderAlive reports whether the process named in the data directory's
// holder.json is alive.
func holderAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "holder.json"))
	if err != nil {
		return false
	}
	var h struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(b, &h) != nil || h.PID <= 0 {
		return false
	}
	return processAlive(h.PID)
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// ledger records the codewords whose compact_context was acknowledged.
type ledger struct {
	mu    sync.Mutex
	acked []string
	n     atomic.Int64
}

func (l *ledger) add(w string) {
	l.mu.Lock()
	l.acked = append(l.acked, w)
	l.mu.Unlock()
	l.n.Add(1)
}

func (l *ledger) words() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.acked...)
}

// codeword is a unique, letters-only token: the tokenizer keeps it whole.
func codeword(prefix string, i int) string {
	return fmt.Sprintf("%s%c%c%c", prefix, 'a'+i/676%26, 'a'+i/26%26, 'a'+i%26)
}

// drive stores n codewords one compact_context at a time, with a
// recall_context every few, and returns the first error.
func drive(c *client.Client, prefix string, n int, led *ledger) error {
	for i := range n {
		w := codeword(prefix, i)
		res, err := callErr(c, "compact_context", map[string]any{"conversation_id": "shared", "messages": []any{
			msg("user", "Remember the codeword "+w+" for the quarterly plan."),
		}}, nil)
		if err == nil && res.IsError {
			err = fmt.Errorf("compact_context isError: %s", text(res))
		}
		if err != nil {
			return fmt.Errorf("%s: compact %s: %w", prefix, w, err)
		}
		led.add(w)
		if i%4 == 3 {
			res, err := callErr(c, "recall_context", map[string]any{"conversation_id": "shared", "message": "which codeword " + w, "max_tokens": 300}, nil)
			if err == nil && res.IsError {
				err = fmt.Errorf("recall_context isError: %s", text(res))
			}
			if err != nil {
				return fmt.Errorf("%s: recall: %w", prefix, err)
			}
		}
	}
	return nil
}

// verifyOnce checks from c that every acknowledged codeword is stored
// exactly once.
func verifyOnce(t *testing.T, c *client.Client, words []string) {
	t.Helper()
	for _, w := range words {
		res := mustOK(t, c, "find_quote", map[string]any{"conversation_id": "shared", "query": w, "max_results": 10})
		var fq struct {
			Quotes []struct {
				Excerpt string `json:"excerpt"`
			} `json:"quotes"`
		}
		structured(t, res, &fq)
		n := 0
		for _, q := range fq.Quotes {
			if strings.Contains(strings.ReplaceAll(q.Excerpt, "*", ""), w) || strings.Contains(q.Excerpt, "**"+w) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("codeword %s: stored %d times, want exactly once (%s)", w, n, text(res))
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSharedHostsSurviveKill: three hosts on one memory; the first one and
// the shared server it started are killed -9 half way; the others carry on
// without an error and nothing acknowledged is lost or stored twice.
func TestSharedHostsSurviveKill(t *testing.T) {
	home := t.TempDir()
	env := hostEnv(home)
	stopOwner(t, env)
	const n = 24
	hosts := []*host{startHost(t, env, "host-a"), startHost(t, env, "host-b"), startHost(t, env, "host-c")}

	// Bridges answer initialize themselves and connect in the background.
	var st share.Hello
	waitFor(t, "three hosts in daemon status", func() bool {
		var err error
		st, err = share.Status(context.Background(), sharedDataDir(home))
		if err != nil || len(st.Hosts) != 3 {
			return false
		}
		// A session is listed when its bridge connects and named when its
		// initialize arrives; the three arrive in any order.
		for _, h := range st.Hosts {
			if h.Name == "" {
				return false
			}
		}
		return true
	})
	if len(st.Hosts) != 3 {
		t.Errorf("status lists %d hosts, want 3: %+v", len(st.Hosts), st.Hosts)
	}
	names := map[string]bool{}
	for _, h := range st.Hosts {
		names[h.Name] = true
	}
	for _, h := range hosts {
		if !names[h.name] {
			t.Errorf("status hosts %+v: %s missing (each session keeps its own client info)", st.Hosts, h.name)
		}
	}

	led := &ledger{}
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() { errs[i] = drive(h.c, strings.TrimPrefix(h.name, "host-")+"word", n, led) })
	}
	waitFor(t, "half the work", func() bool { return led.n.Load() >= int64(len(hosts)*n/2) })
	// kill -9 the first host's bridge and the shared server.
	if err := hosts[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if p, err := os.FindProcess(st.PID); err != nil {
		t.Fatalf("find the shared server: %v", err)
	} else if err := p.Kill(); err != nil { // SIGKILL on unix
		t.Fatalf("kill the shared server: %v", err)
	}
	wg.Wait()
	if errs[0] == nil {
		t.Log("host-a finished before the kill landed")
	}
	for i, err := range errs[1:] {
		if err != nil {
			t.Errorf("%s: %v (a hand-over must not surface to the other hosts)", hosts[i+1].name, err)
		}
	}
	after, err := share.Status(context.Background(), sharedDataDir(home))
	if err != nil || after.PID == st.PID {
		t.Errorf("after the kill: status %+v, %v; want a new shared server", after, err)
	}
	fresh := startHost(t, env, "fresh")
	verifyOnce(t, fresh.c, led.words())
	t.Logf("%d acknowledged codewords, each stored once; server pid %d replaced by %d", len(led.words()), st.PID, after.PID)
}

// TestSharedWithHTTPAndCLI: two stdio hosts share a daemon; half way a CLI
// command takes the data dir for itself and gives it back, then `serve
// --http` takes the data dir over and an HTTP host joins. No host sees an
// error, nothing acknowledged is lost or stored twice.
func TestSharedWithHTTPAndCLI(t *testing.T) {
	home := t.TempDir()
	env := hostEnv(home)
	stopOwner(t, env)
	const n = 30
	a, b := startHost(t, env, "host-a"), startHost(t, env, "host-b")
	led := &ledger{}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = drive(a.c, "alphaword", n, led) })
	wg.Go(func() { errs[1] = drive(b.c, "betaword", n, led) })

	waitFor(t, "a third of the work", func() bool { return led.n.Load() >= 2*n/3 })
	cli := exec.Command(binary, "summaries", "regenerate")
	cli.Env, cli.Dir = env, "/"
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("summaries regenerate while hosts run: %v\n%s", err, out)
	}

	waitFor(t, "half the work", func() bool { return led.n.Load() >= n })
	httpCmd := exec.Command(binary, "serve", "--http", "127.0.0.1:0")
	httpCmd.Env, httpCmd.Dir = env, "/"
	stderr := &syncbuf.Buffer{}
	httpCmd.Stderr = stderr
	if err := httpCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		httpCmd.Process.Signal(syscall.SIGTERM)
		httpCmd.Wait()
		if t.Failed() {
			t.Logf("serve --http stderr:\n%s", stderr.String())
		}
	})
	var base string
	waitFor(t, "serve --http to listen", func() bool {
		m := listening.FindStringSubmatch(stderr.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	hc, err := client.NewStreamableHttpClient(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initAs(t, hc, "http-host")
	wg.Go(func() { errs[2] = drive(hc, "gammaword", n/2, led) })
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("host %d: %v", i, err)
		}
	}
	st, err := share.Status(context.Background(), sharedDataDir(home))
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "http" || st.PID != httpCmd.Process.Pid {
		t.Errorf("status %+v: want serve --http (pid %d) to serve the data dir", st, httpCmd.Process.Pid)
	}
	fresh := startHost(t, env, "fresh")
	verifyOnce(t, fresh.c, led.words())
	if len(led.words()) != 2*n+n/2 {
		t.Errorf("%d acknowledged, want %d", len(led.words()), 2*n+n/2)
	}
	resp, err := http.Get(base + "/mcp")
	if err == nil {
		resp.Body.Close()
	}
}

// samplingCounter answers sampling requests and counts them.
type samplingCounter struct{ n atomic.Int64 }

func (s *samplingCounter) CreateMessage(ctx context.Context, req mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	s.n.Add(1)
	return &mcpgo.CreateMessageResult{
		SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.NewTextContent(`{"tags":["planning"]}`)},
		Model:           "test-model",
	}, nil
}

// TestSharedSamplingPerHost: with the client's model as the LLM, a tool
// call's sampling requests go to the host that made the call, not to
// another host of the same shared server.
func TestSharedSamplingPerHost(t *testing.T) {
	home := t.TempDir()
	env := hostEnv(home, "VC_LLM_PROVIDER=sampling")
	stopOwner(t, env)
	var sa, sb samplingCounter
	a := startHost(t, env, "host-a", client.WithSamplingHandler(&sa))
	b := startHost(t, env, "host-b", client.WithSamplingHandler(&sb))
	store := func(h *host, text string) {
		t.Helper()
		mustOK(t, h.c, "compact_context", map[string]any{"conversation_id": "sampling", "messages": []any{
			msg("user", text), msg("assistant", "Noted: "+text),
		}})
	}
	store(a, "We plan the garden irrigation schedule for the tomato beds next spring.")
	na, nb := sa.n.Load(), sb.n.Load()
	if na == 0 || nb != 0 {
		t.Fatalf("after host-a's call: host-a answered %d sampling requests, host-b %d; want >0 and 0", na, nb)
	}
	store(b, "The quarterly budget review moved to the second week of March.")
	if sb.n.Load() == 0 || sa.n.Load() != na {
		t.Fatalf("after host-b's call: host-a answered %d (was %d), host-b %d; want host-b's requests on host-b only", sa.n.Load(), na, sb.n.Load())
	}
}

// TestSharedRefusesOtherVersion: a host started from another vc-mcp
// version does not use the running server; its requests say what to do,
// and after `vc-mcp daemon stop` it starts a server of its own version.
func TestSharedRefusesOtherVersion(t *testing.T) {
	other := filepath.Join(t.TempDir(), "vc-mcp-v2")
	build := exec.Command("go", "build", "-o", other, "-ldflags", "-X main.version=v9.9.9-test", ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	home := t.TempDir()
	env := hostEnv(home)
	stopOwner(t, env)
	old := startHost(t, env, "old-host")
	mustOK(t, old.c, "domain_status", map[string]any{})

	saved := binary
	binary = other
	newer := startHost(t, env, "new-host")
	binary = saved
	_, err := callErr(newer.c, "domain_status", map[string]any{}, nil)
	if err == nil || !strings.Contains(err.Error(), "vc-mcp daemon stop") || !strings.Contains(err.Error(), "v9.9.9-test") {
		t.Fatalf("new host against the old server: err %v, want a refusal naming both versions and `vc-mcp daemon stop`", err)
	}

	old.c.Close()
	stop := exec.Command(other, "daemon", "stop")
	stop.Env, stop.Dir = env, "/"
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("daemon stop: %v\n%s", err, out)
	}
	waitFor(t, "the new host to get a server of its version", func() bool {
		_, err := callErr(newer.c, "domain_status", map[string]any{}, nil)
		return err == nil
	})
	st, err := share.Status(context.Background(), sharedDataDir(home))
	if err != nil || st.Version != "v9.9.9-test" {
		t.Errorf("status %+v, %v: want the new version serving", st, err)
	}
}

// TestDefaultDataDirWithoutHome: a host that passes only PATH still gets
// the per-user data directory (from the user database).
func TestDefaultDataDirWithoutHome(t *testing.T) {
	cmd := exec.Command(binary, "daemon", "status")
	cmd.Env, cmd.Dir = []string{"PATH=" + os.Getenv("PATH")}, "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("daemon status with only PATH: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), string(filepath.Separator)+"vc-mcp") || !strings.Contains(string(out), "serves") {
		t.Errorf("got %q, want it to name the per-user data directory", out)
	}
}

// TestSharedStdioLineCap: a host's `vc-mcp serve` that shares the
// data directory applies max_line_bytes as the one that serves it alone
// does: an over-long request is answered with the -32600 error under its
// own id (written after its params, as Python clients write it), and the
// next request is answered.
func TestSharedStdioLineCap(t *testing.T) {
	home := t.TempDir()
	env := hostEnv(home, "VC_MAX_LINE_BYTES=4096")
	stopOwner(t, env)
	cmd := exec.Command(binary, "serve")
	cmd.Env, cmd.Dir = env, "/"
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	answer := func() string {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			if lines.Scan() {
				got <- lines.Text()
			}
			close(got)
		}()
		select {
		case l := <-got:
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("no answer in 30 s")
			return ""
		}
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	answer()
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"compact_context","arguments":{"messages":[{"role":"user","content":"`+strings.Repeat("x", 5000)+`"}]}},"id":31}`+"\n")
	if got := answer(); !strings.Contains(got, `"id":31`) || !strings.Contains(got, "max_line_bytes") {
		t.Fatalf("over-long request: %s; want the max_line_bytes error under id 31", got)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":32,"method":"ping"}`+"\n")
	if got := answer(); !strings.Contains(got, `"id":32`) || strings.Contains(got, "error") {
		t.Fatalf("ping after it: %s", got)
	}
}
