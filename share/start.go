package share

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Config says how to reach, and if needed start, the owner of a data
// directory.
type Config struct {
	DataDir string
	// Version is this binary's version; an owner of another version is not
	// used (see ErrVersion).
	Version string
	// OwnerArgs start an owner: the executable's arguments, e.g.
	// ["daemon", "--data-dir", dir]. Empty: never start one, wait up to
	// StartTimeout for another process to.
	OwnerArgs []string
	// Executable defaults to os.Executable().
	Executable string
	// Env is the owner's environment (default os.Environ()).
	Env []string
	// StartTimeout bounds the wait for an owner to accept connections
	// (default 2 minutes: opening a large store replays its logs).
	StartTimeout time.Duration
	Log          *slog.Logger
}

// LogFile is where a started owner's stderr goes.
func LogFile(dataDir string) string { return filepath.Join(dataDir, "daemon.log") }

// ErrVersion means the owner runs another version of vc-mcp.
var ErrVersion = errors.New("the shared vc-mcp server runs another version")

func versionError(cfg Config, h Hello) error {
	return fmt.Errorf("%w: %s is served by vc-mcp %s (pid %d, since %s) and this is vc-mcp %s; "+
		"run `vc-mcp daemon stop --data-dir %s` (or quit the hosts using the old version) and retry: the next request starts a server of this version",
		ErrVersion, cfg.DataDir, h.Version, h.PID, h.Since.Format(time.RFC3339), cfg.Version, cfg.DataDir)
}

// ConnectOrStart connects to dataDir's owner for one MCP session, starting
// an owner process when none listens. Several callers may race: the data
// directory's lock lets exactly one started owner serve, the others exit
// and everyone connects to the winner. The caller checks Hello.Version.
func ConnectOrStart(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	deadline := time.Now().Add(cfg.StartTimeout)
	var exited chan error
	wait := 5 * time.Millisecond
	for {
		conn, r, h, err := connect(ctx, cfg.DataDir, ModeMCP, cfg.Version)
		if err == nil {
			return &Conn{Conn: conn, r: r, Hello: h}, nil
		}
		if !errors.Is(err, ErrNoOwner) {
			return nil, err
		}
		if exited == nil && len(cfg.OwnerArgs) > 0 {
			if exited, err = startOwner(cfg); err != nil {
				return nil, err
			}
		}
		select {
		case err := <-exited:
			// Exit status 0: another owner won the lock (or one stopped
			// on request); look again, and start another if none listens.
			exited = nil
			if err != nil {
				return nil, fmt.Errorf("vc-mcp daemon for %s failed: %w%s", cfg.DataDir, err, logTail(cfg.DataDir))
			}
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if wait < 100*time.Millisecond {
			wait *= 2
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no vc-mcp server for %s accepted connections within %s%s", cfg.DataDir, cfg.StartTimeout, logTail(cfg.DataDir))
		}
	}
}

// startOwner starts a detached owner process; its exit status arrives on
// the channel.
func startOwner(cfg Config) (chan error, error) {
	exe := cfg.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("start vc-mcp daemon: %w", err)
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("start vc-mcp daemon: %w", err)
	}
	logf, err := os.OpenFile(LogFile(cfg.DataDir), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start vc-mcp daemon: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, cfg.OwnerArgs...)
	cmd.Env = cfg.Env
	cmd.Dir = cfg.DataDir
	cmd.Stdout, cmd.Stderr = logf, logf
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start vc-mcp daemon: %w", err)
	}
	cfg.Log.Info("started a vc-mcp daemon", "pid", cmd.Process.Pid, "data_dir", cfg.DataDir)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited, nil
}

// logTail is the end of the owner's log, for error messages.
func logTail(dataDir string) string {
	b, err := os.ReadFile(LogFile(dataDir))
	if err != nil || len(b) == 0 {
		return ""
	}
	b = bytes.TrimSpace(b)
	if i := len(b) - 600; i > 0 {
		b = b[i:]
	}
	return "; the end of " + LogFile(dataDir) + ":\n" + string(b)
}

// Status asks dataDir's owner who it is and who is connected. It never
// starts one: ErrNoOwner when nobody serves the directory.
func Status(ctx context.Context, dataDir string) (Hello, error) {
	conn, _, h, err := connect(ctx, dataDir, ModeStatus, "")
	if err != nil {
		return Hello{}, err
	}
	conn.Close()
	return h, nil
}

// stopTimeout bounds the wait for a stopped owner to exit (it closes its
// sessions and its store first).
const stopTimeout = 30 * time.Second

// Stop asks dataDir's owner to close its sessions and exit, and waits until
// it has exited. Hosts' bridges reconnect by themselves. It returns the
// stopped owner's Hello, or ErrNoOwner. An owner that serves HTTP clients
// (Hello.ServesHTTP) is not stopped: the error says to stop that process.
func Stop(ctx context.Context, dataDir, version string) (Hello, error) {
	// Who it is first: an owner of an earlier version stops on request
	// whatever its kind.
	h, err := Status(ctx, dataDir)
	if err != nil {
		return Hello{}, err
	}
	if h.ServesHTTP() {
		return h, servesHTTPError(dataDir, h)
	}
	conn, r, h, err := connect(ctx, dataDir, ModeStop, version)
	if err != nil {
		return Hello{}, err
	}
	if h.ServesHTTP() {
		// Another owner since the status: it refuses the stop.
		conn.Close()
		return h, servesHTTPError(dataDir, h)
	}
	// The owner closes the connection when it goes.
	_, _ = r.ReadByte()
	conn.Close()
	deadline := time.Now().Add(stopTimeout)
	for {
		if !processAlive(h.PID) || h.PID == os.Getpid() {
			return h, nil
		}
		if time.Now().After(deadline) {
			return h, fmt.Errorf("%s (pid %d), asked to stop, still runs after %s; look at %s, or end that process", h.Command(), h.PID, stopTimeout, LogFile(dataDir))
		}
		select {
		case <-ctx.Done():
			return h, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// servesHTTPError says that dataDir's owner h serves HTTP clients and who
// to stop.
func servesHTTPError(dataDir string, h Hello) error {
	return fmt.Errorf("%s is served by `%s` (pid %d at %s), which has HTTP clients of its own: stop it first", dataDir, h.Command(), h.PID, h.Addr)
}

// Dial returns an mcp-go client connected to dataDir's owner (started if
// needed), for adapters that need the shared memory (the CLI, the proxy).
// The caller initializes it and closes it.
func Dial(ctx context.Context, cfg Config) (*client.Client, error) {
	c, err := ConnectOrStart(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if c.Hello.Version != cfg.Version {
		c.Close()
		return nil, versionError(cfg, c.Hello)
	}
	tr := transport.NewIO(closedIsEOF{c.r}, c.Conn, nil)
	// The transport's own errors go to the caller's log, not to the
	// process's default logger (a CLI's terminal).
	transport.WithCommandLogger(cmp.Or(cfg.Log, slog.New(slog.DiscardHandler)))(tr)
	cl := client.NewClient(tr)
	if err := cl.Start(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("connect to %s: %w", SocketPath(cfg.DataDir), err)
	}
	return cl, nil
}

// closedIsEOF reads r, and reports a connection this process closed (Close
// of the client) as its end: mcp-go's transport logs any other read error
// as a failure, which a command's user would see at every exit.
type closedIsEOF struct{ r io.Reader }

func (c closedIsEOF) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, net.ErrClosed) {
		err = io.EOF
	}
	return n, err
}

// holdFile marks that a process needs the data directory for itself (a
// rebuild): owners wait for it to go before opening the store.
func holdFile(dataDir string) string { return filepath.Join(dataDir, "vc-mcp.hold") }

// Exclusive takes dataDir for this process: it keeps new owners from
// starting, stops the running shared daemon (its hosts' bridges wait and
// reconnect afterwards) and returns a release function. The caller then
// opens the store itself. A `serve --http` or a proxy owning the directory
// is left serving, and the error names it.
func Exclusive(ctx context.Context, dataDir, version string) (release func(), err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(holdFile(dataDir), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		_ = os.Remove(holdFile(dataDir)) // a file left empty by a full disk
		return nil, fmt.Errorf("take %s for this command (its lock file %s): %w", dataDir, filepath.Base(holdFile(dataDir)),
			memory.FileError(err, dataDir, "run it", "nothing was changed"))
	}
	release = func() { _ = os.Remove(holdFile(dataDir)) }
	// Stop refuses to stop a `serve --http` or a proxy: that would cut its
	// HTTP clients off.
	if _, err := Stop(ctx, dataDir, version); err != nil && !errors.Is(err, ErrNoOwner) {
		release()
		return nil, err
	}
	return release, nil
}

// Held returns the pid of another live process holding dataDir (see
// Exclusive), or 0. A hold left by a process that is gone is removed.
func Held(dataDir string) int {
	b, err := os.ReadFile(holdFile(dataDir))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || !processAlive(pid) {
		_ = os.Remove(holdFile(dataDir))
		return 0
	}
	if pid == os.Getpid() {
		return 0
	}
	return pid
}

// WaitHold waits while another live process holds dataDir (see Exclusive).
func WaitHold(ctx context.Context, dataDir string, log *slog.Logger) error {
	logged := false
	for {
		pid := Held(dataDir)
		if pid == 0 {
			return nil
		}
		if !logged && log != nil {
			log.Info("waiting for another vc-mcp command to release the data directory", "pid", pid)
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
