package share

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// protoVersion is the version of the hello exchange below.
const protoVersion = 1

// Modes a connection asks for in its hello.
const (
	ModeMCP    = "mcp"    // the rest of the connection is one MCP session
	ModeStatus = "status" // the owner answers its Hello and closes
	ModeStop   = "stop"   // the owner answers, then closes every session and exits
)

// request is the first line a client sends.
type request struct {
	Proto   int    `json:"vc_mcp"`
	Mode    string `json:"mode"`
	Version string `json:"version"`
	PID     int    `json:"pid"`
	// DataDir is the directory the client wants served (absolute): an
	// owner of another directory answers its hello and does nothing more.
	DataDir string `json:"data_dir,omitempty"`
}

// Hello is the owner's first line: who serves the data directory.
type Hello struct {
	Proto   int       `json:"vc_mcp"`
	PID     int       `json:"pid"`
	Version string    `json:"version"`
	Kind    string    `json:"kind"` // "daemon", "http" (a `serve --http` that owns the data dir) or "proxy" (a `vc-mcp proxy`)
	Addr    string    `json:"addr,omitempty"`
	DataDir string    `json:"data_dir"`
	Since   time.Time `json:"since"`
	Hosts   []Host    `json:"hosts"`
}

// ServesHTTP reports whether the owner is a `serve --http` or a proxy: it
// has HTTP clients of its own and is never stopped on request (a stop would
// cut them off and leave it holding the directory without its socket).
func (h Hello) ServesHTTP() bool { return h.Kind != "daemon" }

// Command is how the owner was started, e.g. "vc-mcp serve --http".
func (h Hello) Command() string {
	switch h.Kind {
	case "daemon":
		return "vc-mcp daemon"
	case "http":
		return "vc-mcp serve --http"
	}
	return "vc-mcp " + h.Kind
}

// Host is one connected MCP session, named by its initialize.
type Host struct {
	Session   string    `json:"session"`
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	Connected time.Time `json:"connected"`
	PID       int       `json:"pid,omitempty"` // the bridge's process, when it said
}

// ErrNoOwner means no process serves the data directory.
var ErrNoOwner = errors.New("no vc-mcp process serves this data directory")

// maxSocketPath keeps below the smallest sun_path (104 bytes on macOS and
// the BSDs, 108 on Linux and Windows), terminating NUL included.
const maxSocketPath = 100

// SocketPath is the local socket dataDir's owner listens on, as the owner
// recorded it in the directory's socketFile, so that every spelling of the
// directory (a symbolic link, another letter case on a case-insensitive
// file system, another $XDG_RUNTIME_DIR in the host's environment) finds
// the one owner. With no record, it is where an owner would bind
// (ownSocketPath).
func SocketPath(dataDir string) string {
	if p := namedSocket(dataDir); p != "" {
		return p
	}
	return ownSocketPath(dataDir)
}

// ownSocketPath is the socket an owner reaching dataDir by this spelling
// binds: vc-mcp.sock inside it, or, when that path would not fit in a
// socket address, a name derived from the directory's absolute path in the
// user's runtime directory.
func ownSocketPath(dataDir string) string {
	if p := filepath.Join(dataDir, "vc-mcp.sock"); len(p) <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(absDir(dataDir)))
	return filepath.Join(runtimeDir(), "vc-mcp-"+hex.EncodeToString(sum[:8])+".sock")
}

// socketFile records the socket an owner of the directory bound: the owner
// writes it after binding. A copy of the directory carries it too, so a
// client checks the owner it reaches (sameDir).
func socketFile(dataDir string) string { return filepath.Join(dataDir, "vc-mcp.sock.path") }

// namedSocket is the socket dataDir's socketFile names, or "" when there is
// none (or it names something that is not a vc-mcp socket name).
func namedSocket(dataDir string) string {
	b, err := os.ReadFile(socketFile(dataDir))
	if err != nil {
		return ""
	}
	p := strings.TrimSpace(string(b))
	if !isSocketName(p) {
		return ""
	}
	return p
}

// isSocketName reports whether p is a socket name ownSocketPath makes,
// absolute: a file read back from the data directory is trusted only that
// far (Listen may remove what it names).
func isSocketName(p string) bool {
	base := filepath.Base(p)
	return len(p) <= maxSocketPath && filepath.IsAbs(p) &&
		(base == "vc-mcp.sock" || strings.HasPrefix(base, "vc-mcp-") && strings.HasSuffix(base, ".sock"))
}

// sameDir reports whether a and b name one directory. When either cannot
// be looked at, it cannot tell and says yes: the check only keeps a copy
// of a data directory from reaching the original's owner.
func sameDir(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return true
	}
	fb, err := os.Stat(b)
	if err != nil {
		return true
	}
	return os.SameFile(fa, fb)
}

// absDir is dir made absolute, or dir when that fails.
func absDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// runtimeDir is a per-user directory for sockets: $XDG_RUNTIME_DIR, or
// vc-mcp-<uid> (0700) in the temporary directory. On Windows %TEMP% is
// already per user.
func runtimeDir() string {
	if runtime.GOOS == "windows" {
		return os.TempDir()
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && len(d) < maxSocketPath-40 {
		return d
	}
	return filepath.Join("/tmp", fmt.Sprintf("vc-mcp-%d", os.Getuid()))
}

// dialTimeout bounds one connection attempt and its hello.
const dialTimeout = 5 * time.Second

// connect opens the data directory's socket and exchanges hellos. The
// returned reader holds whatever the owner sent after its hello.
func connect(ctx context.Context, dataDir, mode, version string) (net.Conn, *bufio.Reader, Hello, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	path := SocketPath(dataDir)
	conn, err := d.DialContext(dctx, "unix", path)
	if own := ownSocketPath(dataDir); err != nil && own != path {
		// A stale record (an owner of an earlier version, or one that
		// has bound and not yet recorded): where this spelling binds.
		path = own
		conn, err = d.DialContext(dctx, "unix", path)
	}
	if err != nil {
		return nil, nil, Hello{}, fmt.Errorf("%w: %w", ErrNoOwner, err)
	}
	fail := func(err error) (net.Conn, *bufio.Reader, Hello, error) {
		conn.Close()
		return nil, nil, Hello{}, err
	}
	_ = conn.SetDeadline(time.Now().Add(dialTimeout))
	b, _ := json.Marshal(request{Proto: protoVersion, Mode: mode, Version: version, PID: os.Getpid(), DataDir: absDir(dataDir)})
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return fail(fmt.Errorf("%w: hello: %w", ErrNoOwner, err))
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	if err != nil {
		// An owner that is shutting down closes at once.
		return fail(fmt.Errorf("%w: hello: %w", ErrNoOwner, err))
	}
	var h Hello
	if err := json.Unmarshal(line, &h); err != nil || h.Proto == 0 {
		return fail(fmt.Errorf("%s does not speak vc-mcp's hello (%q)", path, truncate(line, 80)))
	}
	if h.DataDir != "" && !sameDir(h.DataDir, dataDir) {
		// A copy of the data directory names the original's socket.
		return fail(fmt.Errorf("%w: %s serves %s, not %s", ErrNoOwner, path, h.DataDir, dataDir))
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, r, h, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
