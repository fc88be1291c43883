package share

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/mcp"
	"github.com/vc-mcp/vc-mcp/memory"
)

// DefaultIdle is how long an owner started for stdio hosts lives with no
// connection.
const DefaultIdle = 5 * time.Minute

// Listen binds dataDir's socket, readable and writable by the user only,
// and records its name in the directory's socketFile, where every client
// looks it up. Call it only while holding the data directory's lock: a
// leftover socket of a dead owner is removed first. A name that cannot be
// recorded (a full disk) is logged and the socket served all the same:
// clients that reach the directory by this spelling find the socket where
// it binds; only those that reach it by another one (a symbolic link) do
// not.
func Listen(dataDir string, log *slog.Logger) (net.Listener, error) {
	path := ownSocketPath(dataDir)
	// A previous owner that reached the directory by another spelling bound
	// elsewhere. Nobody serves this directory there now (the lock says so),
	// but a copy of the directory names the original's socket: one that
	// answers is left alone.
	if old := namedSocket(dataDir); old != "" && old != path && !answers(old) {
		if err := os.Remove(old); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket %s: %w", old, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// On Windows the mode bits mean little: the directory's ACL (the
	// user's profile) is what keeps other users out.
	if err := os.Chmod(path, 0o600); err != nil && runtime.GOOS != "windows" {
		l.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if err := writeSocketFile(dataDir, absDir(path)); err != nil {
		// A stale record would send clients elsewhere first.
		if namedSocket(dataDir) != absDir(path) {
			_ = os.Remove(socketFile(dataDir))
		}
		if log != nil {
			log.Warn("serving without recording the socket's name in the data directory; hosts that reach it through another path (a symbolic link) will not find this server", "socket", path, "err", err)
		}
	}
	return l, nil
}

// answers reports whether something accepts connections on the socket.
func answers(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// writeSocketFile records path as dataDir's socket, replacing the file
// whole (a client never reads half a name) unless it says so already. On
// Windows a rename over a file that a client is reading fails: it is tried
// again for a while.
func writeSocketFile(dataDir, path string) error {
	if b, err := os.ReadFile(socketFile(dataDir)); err == nil && strings.TrimSpace(string(b)) == path {
		return nil
	}
	tmp, err := os.CreateTemp(dataDir, "vc-mcp.sock.path-*")
	if err != nil {
		return fmt.Errorf("record the socket's name: %w", err)
	}
	_, werr := tmp.WriteString(path + "\n")
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("record the socket's name: %w", err)
	}
	for try := 0; ; try++ {
		err := os.Rename(tmp.Name(), socketFile(dataDir))
		if err == nil {
			return nil
		}
		if try == 40 {
			os.Remove(tmp.Name())
			return fmt.Errorf("record the socket's name: %w", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Owner serves one MCP server to every connection on a data directory's
// socket, each connection its own MCP session.
type Owner struct {
	Server  *mcpserver.MCPServer
	Version string
	Kind    string // "daemon", "http" or "proxy" (see Hello.Kind)
	Addr    string // the HTTP address, for Kind "http" and "proxy"
	DataDir string
	// Idle ends Serve after this long without a connection; 0 never.
	Idle time.Duration
	Log  *slog.Logger

	mu     sync.Mutex
	since  time.Time
	hosts  map[string]*Host
	nextID int
	stop   chan struct{}
	once   sync.Once
}

// Serve accepts connections on l until ctx ends, a client asks the owner to
// stop, or it has been idle for o.Idle. It closes l (removing the socket)
// and every session before returning.
func (o *Owner) Serve(ctx context.Context, l net.Listener) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	o.mu.Lock()
	o.since = time.Now().UTC()
	o.hosts = map[string]*Host{}
	o.stop = make(chan struct{})
	o.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	conns := make(chan net.Conn)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			select {
			case conns <- c:
			case <-ctx.Done():
				c.Close()
				return
			}
		}
	}()

	active := 0
	done := make(chan struct{}, 16)
	var idle <-chan time.Time
	var idleTimer *time.Timer
	resetIdle := func() {
		if idleTimer != nil {
			idleTimer.Stop()
			idle = nil
		}
		if active == 0 && o.Idle > 0 {
			idleTimer = time.NewTimer(o.Idle)
			idle = idleTimer.C
		}
	}
	resetIdle()
	var err error
loop:
	for {
		select {
		case c := <-conns:
			active++
			resetIdle()
			wg.Go(func() {
				o.handle(ctx, c)
				done <- struct{}{}
			})
		case <-done:
			active--
			resetIdle()
		case <-idle:
			o.Log.Info("no host connected for a while; exiting", "idle", o.Idle)
			break loop
		case <-o.stop:
			o.Log.Info("asked to stop; closing every session")
			break loop
		case <-ctx.Done():
			break loop
		case e := <-acceptErr:
			err = fmt.Errorf("accept: %w", e)
			break loop
		}
	}
	l.Close()
	cancel()
	go func() {
		for range done {
		}
	}()
	wg.Wait()
	close(done)
	return err
}

// Hello is the owner's current answer to a hello.
func (o *Owner) Hello() Hello {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := Hello{Proto: protoVersion, PID: os.Getpid(), Version: o.Version, Kind: o.Kind, Addr: o.Addr, DataDir: absDir(o.DataDir), Since: o.since, Hosts: []Host{}}
	for _, host := range o.hosts {
		h.Hosts = append(h.Hosts, *host)
	}
	sort.Slice(h.Hosts, func(i, j int) bool { return h.Hosts[i].Connected.Before(h.Hosts[j].Connected) })
	return h
}

func (o *Owner) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(dialTimeout))
	r := bufio.NewReader(c)
	line, err := r.ReadBytes('\n')
	if err != nil {
		o.Log.Debug("connection closed before its hello", "err", err)
		return
	}
	var req request
	if err := json.Unmarshal(line, &req); err != nil || req.Proto == 0 {
		o.Log.Warn("connection refused: not a vc-mcp hello", "line", truncate(line, 80))
		return
	}
	b, _ := json.Marshal(o.Hello())
	if _, err := c.Write(append(b, '\n')); err != nil {
		return
	}
	if req.DataDir != "" && !sameDir(req.DataDir, o.DataDir) {
		// A client of a copy of our directory, sent here by the copied
		// socketFile: it sees our directory in the hello and goes.
		o.Log.Info("connection for another data directory refused", "data_dir", req.DataDir, "pid", req.PID)
		return
	}
	_ = c.SetDeadline(time.Time{})
	switch req.Mode {
	case ModeStop:
		if o.Kind != "daemon" {
			// Its HTTP clients keep it; the client saw the kind in
			// the hello and says whom to stop.
			o.Log.Warn("stop refused: this process serves HTTP clients too; stop the process itself", "by_pid", req.PID, "by_version", req.Version)
			return
		}
		o.Log.Info("stop requested", "by_pid", req.PID, "by_version", req.Version)
		o.once.Do(func() { close(o.stop) })
		return
	case ModeMCP:
		if req.Version != o.Version {
			// The client saw our version in the hello and decides; it
			// closes the connection when it does not match.
			o.Log.Info("client of another version connected", "client_version", req.Version, "pid", req.PID)
		}
	default:
		return
	}
	o.mu.Lock()
	o.nextID++
	id := fmt.Sprintf("share-%d", o.nextID)
	o.hosts[id] = &Host{Session: id, Connected: time.Now().UTC(), PID: req.PID}
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		delete(o.hosts, id)
		o.mu.Unlock()
	}()
	err = mcp.ServeConn(ctx, o.Server, readWriteCloser{r, c}, mcp.ConnOptions{
		SessionID: id,
		Logger:    o.Log,
		OnInitialize: func(info mcpgo.Implementation) {
			o.mu.Lock()
			if h := o.hosts[id]; h != nil {
				h.Name, h.Version = info.Name, info.Version
			}
			o.mu.Unlock()
			o.Log.Info("host connected", "session", id, "client", memory.RedactSecrets(info.Name), "client_version", memory.RedactSecrets(info.Version), "pid", req.PID)
		},
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		o.Log.Debug("session ended", "session", id, "err", err)
	}
}

type readWriteCloser struct {
	io.Reader
	net.Conn
}

func (rw readWriteCloser) Read(p []byte) (int, error) { return rw.Reader.Read(p) }
