package share

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

func testServer(name string) *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("vc-mcp", "1", mcpserver.WithToolCapabilities(false))
	slow := func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return mcpgo.NewToolResultText(req.Params.Name + " from " + name), nil
	}
	s.AddTool(mcpgo.NewTool("safe", mcpgo.WithIdempotentHintAnnotation(true)), slow)
	s.AddTool(mcpgo.NewTool("unsafe", mcpgo.WithIdempotentHintAnnotation(false), mcpgo.WithReadOnlyHintAnnotation(false)), slow)
	return s
}

// serveOwner runs an in-process owner on dir until the returned stop is
// called.
func serveOwner(t *testing.T, dir, name string) (stop func()) {
	t.Helper()
	return serveOwnerWith(t, dir, testServer(name))
}

func serveOwnerWith(t *testing.T, dir string, srv *mcpserver.MCPServer) (stop func()) {
	t.Helper()
	l, err := Listen(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Owner{Server: srv, Version: "1", Kind: "daemon", DataDir: dir}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := o.Serve(ctx, l); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop) // a failed test leaves no owner behind
	return stop
}

// crashingOwner accepts one bridge, answers its hello and initialize, and
// dies (closes everything) once it has received n tool calls, answering
// none: an owner killed with requests in flight.
func crashingOwner(t *testing.T, dir string, n int) (dead <-chan struct{}) {
	t.Helper()
	l, err := Listen(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer l.Close()
		c, err := l.Accept()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		if _, err := r.ReadBytes('\n'); err != nil {
			t.Error(err)
			return
		}
		b, _ := json.Marshal(Hello{Proto: protoVersion, PID: 1, Version: "1", Kind: "daemon", DataDir: dir})
		c.Write(append(b, '\n'))
		calls := 0
		for calls < n {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Error(err)
				return
			}
			if strings.Contains(string(line), `"tools/call"`) {
				calls++
			}
		}
	}()
	return done
}

// TestBridgeHandOver: the owner dies with two calls in flight; the bridge
// reconnects to the next owner, retries the idempotent call there and
// answers the other with the retry error.
func TestBridgeHandOver(t *testing.T) {
	dir := t.TempDir()
	dead := crashingOwner(t, dir, 2)

	hostIn, bridgeIn := io.Pipe()   // host writes -> bridge reads
	bridgeOut, hostOut := io.Pipe() // bridge writes -> host reads
	b := &Bridge{Config: Config{DataDir: dir, Version: "1", StartTimeout: 20 * time.Second}, Local: testServer("local")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bridgeDone := make(chan error, 1)
	go func() { bridgeDone <- b.Run(ctx, hostIn, hostOut) }()

	c := client.NewClient(transport.NewIO(bridgeOut, bridgeIn, nil))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "host", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	callTool := func(name string) (string, error) {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = name
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return "", err
		}
		return res.Content[0].(mcpgo.TextContent).Text, nil
	}
	var wg sync.WaitGroup
	var safe, unsafe string
	var safeErr, unsafeErr error
	wg.Go(func() { safe, safeErr = callTool("safe") })
	wg.Go(func() { unsafe, unsafeErr = callTool("unsafe") })
	<-dead
	stop2 := serveOwner(t, dir, "owner-2")
	defer stop2()
	wg.Wait()
	if safeErr != nil || safe != "safe from owner-2" {
		t.Errorf("idempotent call in flight: %q, %v; want it retried on owner-2", safe, safeErr)
	}
	if unsafeErr == nil || !strings.Contains(unsafeErr.Error(), RestartedMessage) {
		t.Errorf("non-idempotent call in flight: %q, %v; want %q", unsafe, unsafeErr, RestartedMessage)
	}
	if got, err := callTool("unsafe"); err != nil || got != "unsafe from owner-2" {
		t.Errorf("after the hand-over: %q, %v", got, err)
	}
	st, err := Status(ctx, dir)
	if err != nil || len(st.Hosts) != 1 || st.Hosts[0].Name != "host" {
		t.Errorf("status after the hand-over: %+v, %v; want the replayed initialize's client info", st, err)
	}
	bridgeIn.Close()
	select {
	case err := <-bridgeDone:
		if err != nil {
			t.Errorf("bridge: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("bridge did not end with its stdin")
	}
}

func TestSocketPathFits(t *testing.T) {
	long := "/" + strings.Repeat("d", 200)
	if p := SocketPath(long); len(p) > maxSocketPath {
		t.Errorf("SocketPath(long) = %s (%d bytes), over %d", p, len(p), maxSocketPath)
	}
	if a, b := SocketPath(long), SocketPath(long+"x"); a == b {
		t.Errorf("two data dirs share the socket %s", a)
	}
	if p := SocketPath("/tmp/x"); p != "/tmp/x/vc-mcp.sock" {
		t.Errorf("short dir: %s, want the socket inside it", p)
	}
}

// shortTempDir is a new directory in /tmp, short enough for runtimeDir to
// take as $XDG_RUNTIME_DIR and for a socket inside it (t.TempDir and
// macOS's $TMPDIR are too long for both).
func shortTempDir(t *testing.T, prefix string) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// deadSocket leaves a socket file at path that nobody listens on: what an
// owner killed with SIGKILL leaves.
func deadSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// TestEverySpellingOfADirectoryFindsItsOwner: a data directory reached by
// a long path (its socket then lives in the runtime directory), by a long
// and by a short symbolic link, each with its own $XDG_RUNTIME_DIR, has one
// owner whichever spelling started it; a new owner removes the socket a
// dead one left under another spelling.
func TestEverySpellingOfADirectoryFindsItsOwner(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need a privilege on Windows")
	}
	base := t.TempDir()
	long := filepath.Join(base, strings.Repeat("r", 120))
	longLink := filepath.Join(base, strings.Repeat("l", 110))
	shortLink := filepath.Join(shortTempDir(t, "vcl"), "d")
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{longLink, shortLink} {
		if err := os.Symlink(long, l); err != nil {
			t.Fatal(err)
		}
	}
	spellings := []string{long, longLink, shortLink}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var lastSocket string
	for i, owner := range spellings {
		t.Setenv("XDG_RUNTIME_DIR", shortTempDir(t, "vcrun"))
		if lastSocket != "" {
			deadSocket(t, lastSocket) // the previous owner was killed
		}
		stop := serveOwner(t, owner, fmt.Sprintf("owner-%d", i))
		if lastSocket != "" && lastSocket != SocketPath(owner) {
			if _, err := os.Stat(lastSocket); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("owner via %s: the dead owner's socket %s is still there (%v)", filepath.Base(owner), lastSocket, err)
			}
		}
		for _, client := range spellings {
			t.Setenv("XDG_RUNTIME_DIR", shortTempDir(t, "vcrun"))
			if h, err := Status(ctx, client); err != nil || h.PID != os.Getpid() {
				t.Errorf("owner via %s, client via %s: %+v, %v", filepath.Base(owner), filepath.Base(client), h, err)
			}
		}
		lastSocket = SocketPath(owner)
		stop()
	}
}

// TestACopiedDirectoryIsNotItsOriginal: a copy of a data directory carries
// the original's socket record; its clients must not reach the original's
// owner (nor stop it), and its own owner must not take the original's
// socket away.
func TestACopiedDirectoryIsNotItsOriginal(t *testing.T) {
	for _, tc := range []struct{ name, a, b string }{
		{"socket inside", "a", "b"},
		{"socket in the runtime directory", strings.Repeat("a", 110), strings.Repeat("b", 110)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := shortTempDir(t, "vcc")
			a, b := filepath.Join(base, tc.a), filepath.Join(base, tc.b)
			t.Setenv("XDG_RUNTIME_DIR", shortTempDir(t, "vcrun"))
			if err := os.Mkdir(a, 0o700); err != nil {
				t.Fatal(err)
			}
			serveOwner(t, a, "owner-a")
			aSock := SocketPath(a)
			// cp -r: the record comes along (the socket itself does not).
			if err := os.Mkdir(b, 0o700); err != nil {
				t.Fatal(err)
			}
			rec, err := os.ReadFile(socketFile(a))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(socketFile(b), rec, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if h, err := Status(ctx, b); !errors.Is(err, ErrNoOwner) {
				t.Errorf("status of the copy: %+v, %v; want ErrNoOwner, not the original's owner", h, err)
			}
			if _, err := Stop(ctx, b, "1"); !errors.Is(err, ErrNoOwner) {
				t.Errorf("stop of the copy: %v; want ErrNoOwner", err)
			}
			if _, err := Status(ctx, a); err != nil {
				t.Fatalf("the original's owner after the copy's stop: %v", err)
			}
			serveOwner(t, b, "owner-b")
			if _, err := os.Stat(aSock); err != nil {
				t.Errorf("the copy's owner removed the original's live socket %s: %v", aSock, err)
			}
			for _, dir := range []string{a, b} {
				if h, err := Status(ctx, dir); err != nil || !sameDir(h.DataDir, dir) {
					t.Errorf("status of %s: served for %q, %v", filepath.Base(dir), h.DataDir, err)
				}
			}
		})
	}
}

// TestOwnerStopDrains: an owner asked to stop answers the requests it has
// started before it closes the connection.
func TestOwnerStopDrains(t *testing.T) {
	dir := t.TempDir()
	stop := serveOwner(t, dir, "owner-1")
	c, err := ConnectOrStart(context.Background(), Config{DataDir: dir, Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewClient(transport.NewIO(c, c, nil))
	ctx := context.Background()
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := cl.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "unsafe"
		res, err := cl.CallTool(ctx, req)
		if err == nil && res.Content[0].(mcpgo.TextContent).Text != "unsafe from owner-1" {
			err = errors.New("wrong answer")
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	stop()
	if err := <-got; err != nil {
		t.Errorf("call in flight during a stop: %v; want it answered", err)
	}
}

// TestBridgeAnswersAfterStdinCloses: a host (or a script) that writes its
// requests and closes its input still gets every answer before the bridge
// ends.
func TestBridgeAnswersAfterStdinCloses(t *testing.T) {
	dir := t.TempDir()
	stop := serveOwner(t, dir, "owner")
	defer stop()
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"safe","arguments":{}}}` + "\n")
	out, w := io.Pipe()
	b := &Bridge{Config: Config{DataDir: dir, Version: "1", StartTimeout: 20 * time.Second}, Local: testServer("local")}
	done := make(chan error, 1)
	go func() {
		done <- b.Run(context.Background(), in, w)
		w.Close()
	}()
	answered := map[string]string{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && len(m.ID) > 0 {
			answered[string(m.ID)] = string(m.Result)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(answered["2"], "safe from owner") {
		t.Fatalf("answers after the input closed: %v; want the tool call's (id 2)", answered)
	}
}

// TestIDKeyMatchesTheOwnersEcho: the owner (mcp-go) writes a request's id
// back as it decoded it; the key that finds the request in flight is the
// same for both spellings.
func TestIDKeyMatchesTheOwnersEcho(t *testing.T) {
	for _, tc := range []struct{ sent, echoed string }{
		{`7`, `7`},
		{`1.0`, `1`},
		{`"\u0061b"`, `"ab"`},
		{`"req-12"`, `"req-12"`},
		{`"a<b"`, `"a\u003cb"`},
		{`12345678901234567`, `12345678901234567`},
	} {
		if a, b := idKey(json.RawMessage(tc.sent)), idKey(json.RawMessage(tc.echoed)); a != b {
			t.Errorf("id %s sent, %s echoed: keys %q and %q differ", tc.sent, tc.echoed, a, b)
		}
	}
}

// TestBridgeReplaysSubscriptions: the host subscribed to a resource and set
// its log level; when the shared server is replaced, the new one is told
// both again (the host is not asked to), and the answers to those replays
// do not reach the host.
func TestBridgeReplaysSubscriptions(t *testing.T) {
	dir := t.TempDir()
	stop1 := serveOwner(t, dir, "owner-1")
	hostIn, bridgeIn := io.Pipe()
	bridgeOut, hostOut := io.Pipe()
	b := &Bridge{Config: Config{DataDir: dir, Version: "1", StartTimeout: 20 * time.Second}, Local: testServer("local")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = b.Run(ctx, hostIn, hostOut) }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(bridgeOut)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"virtualcontext://domains"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"virtualcontext://conversations/a/turns/t1"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/unsubscribe","params":{"uri":"virtualcontext://conversations/a/turns/t1"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"debug"}}`,
	} {
		if _, err := io.WriteString(bridgeIn, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	answered := map[string]bool{}
	for len(answered) < 5 {
		select {
		case l := <-lines:
			var m struct{ ID json.RawMessage }
			if json.Unmarshal([]byte(l), &m) == nil && len(m.ID) > 0 {
				answered[string(m.ID)] = true
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("answers from the first server: %v", answered)
		}
	}
	stop1()

	var mu sync.Mutex
	var seen []string
	hooks := &mcpserver.Hooks{}
	hooks.AddBeforeAny(func(ctx context.Context, id any, method mcpgo.MCPMethod, message any) {
		js, _ := json.Marshal(message)
		mu.Lock()
		seen = append(seen, string(method)+" "+string(js))
		mu.Unlock()
	})
	srv := mcpserver.NewMCPServer("vc-mcp", "1", mcpserver.WithResourceCapabilities(true, false), mcpserver.WithLogging(), mcpserver.WithHooks(hooks))
	stop2 := serveOwnerWith(t, dir, srv)
	defer stop2()
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		all := strings.Join(seen, "\n")
		mu.Unlock()
		if strings.Contains(all, "virtualcontext://domains") && strings.Contains(all, `"debug"`) {
			if strings.Contains(all, "turns/t1") {
				t.Fatalf("the unsubscribed resource was subscribed again:\n%s", all)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new server was not told the host's subscription and log level; it saw:\n%s", all)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the replays' answers, if they were to leak
	for {
		select {
		case l := <-lines:
			if strings.Contains(l, "vc-mcp-bridge-") {
				t.Fatalf("the host got the answer to a bridge's own replay: %s", l)
			}
			continue
		default:
		}
		break
	}
	bridgeIn.Close()
}

// TestOwnerServesWithoutItsSocketRecord: an owner that cannot record its
// socket's name in the data directory (a full disk; here the record's
// place is taken by a directory) serves all the same, and clients of the
// directory find it where it binds (found by a hostile review: on a full
// disk every host lost its memory, reads included).
func TestOwnerServesWithoutItsSocketRecord(t *testing.T) {
	dir := shortTempDir(t, "vcnr")
	if err := os.MkdirAll(filepath.Join(socketFile(dir), "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	serveOwner(t, dir, "owner")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if h, err := Status(ctx, dir); err != nil || h.PID != os.Getpid() {
		t.Fatalf("a client of the directory: %+v, %v", h, err)
	}
}
