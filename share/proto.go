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
}

// Hello is the owner's first line: who serves the data directory.
type Hello struct {
	Proto   int       `json:"vc_mcp"`
	PID     int       `json:"pid"`
	Version string    `json:"version"`
	Kind    string    `json:"kind"` // "daemon" or "http" (a `serve --http` that owns the data dir)
	Addr    string    `json:"addr,omitempty"`
	DataDir string    `json:"data_dir"`
	Since   time.Time `json:"since"`
	Hosts   []Host    `json:"hosts"`
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

// SocketPath is the local socket dataDir's owner listens on: vc-mcp.sock
// inside the directory, or, when that path would not fit in a socket
// address, the socket its owner named in the directory's socketFile. The
// name is kept in the directory itself so that every spelling of it (a
// symbolic link, another case on a case-insensitive file system, another
// $XDG_RUNTIME_DIR in the host's environment) finds the one owner.
func SocketPath(dataDir string) string {
	if p := filepath.Join(dataDir, "vc-mcp.sock"); len(p) <= maxSocketPath {
		return p
	}
	if p := namedSocket(dataDir); p != "" {
		return p
	}
	return longSocketPath(dataDir)
}

// socketFile names the socket of a data directory whose own socket path
// would be too long: the owner writes it after binding.
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

// isSocketName reports whether p is a socket name longSocketPath makes: a
// file read back from the data directory is trusted only that far (Listen
// removes what it names).
func isSocketName(p string) bool {
	base := filepath.Base(p)
	return len(p) <= maxSocketPath && filepath.IsAbs(p) &&
		strings.HasPrefix(base, "vc-mcp-") && strings.HasSuffix(base, ".sock")
}

// longSocketPath is the socket this process would bind for a data directory
// whose own socket path is too long: a name derived from the directory's
// absolute path in the user's runtime directory.
func longSocketPath(dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(dataDir))
	return filepath.Join(runtimeDir(), "vc-mcp-"+hex.EncodeToString(sum[:8])+".sock")
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
	conn, err := d.DialContext(dctx, "unix", SocketPath(dataDir))
	if err != nil {
		return nil, nil, Hello{}, fmt.Errorf("%w: %w", ErrNoOwner, err)
	}
	fail := func(err error) (net.Conn, *bufio.Reader, Hello, error) {
		conn.Close()
		return nil, nil, Hello{}, err
	}
	_ = conn.SetDeadline(time.Now().Add(dialTimeout))
	b, _ := json.Marshal(request{Proto: protoVersion, Mode: mode, Version: version, PID: os.Getpid()})
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
		return fail(fmt.Errorf("%s does not speak vc-mcp's hello (%q)", SocketPath(dataDir), truncate(line, 80)))
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
