//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/vc-mcp/vc-mcp/internal/files"
	"github.com/vc-mcp/vc-mcp/internal/syncbuf"
	"github.com/vc-mcp/vc-mcp/share"
)

// TestReadOnlyDataDirectoryOverMCP runs `vc-mcp serve` from a host, with
// sharing on as hosts run it, as a user who may not write the data
// directory (the test's own user after chmod, or, when the tests run as
// root, whom permissions do not stop, the unprivileged uid 65534). The
// server starts, answers recall_context as the writable server did,
// finds quotes and reports read-only in domain_status; compact_context and
// forget are refused with a message naming the directory; the directory is
// left exactly as it was and the snapshot is removed at exit. rebuild
// refuses with a message saying what to do.
func TestReadOnlyDataDirectoryOverMCP(t *testing.T) {
	u := newOtherUser(t)
	base, bin := u.base, u.bin
	data := filepath.Join(base, "data")

	// Filled by a writable server, shared as hosts run it.
	probe := map[string]any{"conversation_id": "ro", "message": "Which gate does the ferry to the island leave from?", "max_tokens": 400}
	w := startStdio(t, data)
	mustOK(t, w.c, "compact_context", map[string]any{"conversation_id": "ro", "messages": []any{
		msg("user", "The ferry to the island leaves from gate 14 at half past seven."),
		msg("assistant", "Gate 14, 7:30, noted."),
		msg("user", "My sister's birthday dinner is at the Lebanese place on Friday."),
	}})
	want := text(mustOK(t, w.c, "recall_context", probe))
	w.c.Close()
	quiesceNow(t, data)

	// Read-only for the server's user: files 0444, directories 0555.
	if err := filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil // after their files
		}
		return os.Chmod(p, 0o444)
	}); err != nil {
		t.Fatal(err)
	}
	if err := filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o555)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, data)
	// Derived parts it cannot even read (an owner's later server made
	// them owner-only): the snapshot does without them.
	unreadable := []string{filepath.Join(data, "index.bleve"), filepath.Join(data, "requests")}
	for _, p := range unreadable {
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
	}

	asUser := u.prepare
	stderr := &syncbuf.Buffer{}
	var server *exec.Cmd
	tr := transport.NewStdioWithOptions(bin, nil, []string{"serve", "--data-dir", data}, transport.WithCommandFunc(
		func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			asUser(cmd)
			cmd.Stderr = stderr
			server = cmd
			return cmd, nil
		}))
	c := client.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("read-only server's stderr:\n%s", stderr.String())
		}
	}()
	initialize(t, c)

	if got := text(mustOK(t, c, "recall_context", probe)); got != want {
		t.Errorf("recall_context read-only:\n%s\nwant what the writable server answered:\n%s", got, want)
	}
	if q := text(mustOK(t, c, "find_quote", map[string]any{"conversation_id": "ro", "query": "Lebanese birthday dinner"})); !strings.Contains(q, "Lebanese") {
		t.Errorf("find_quote read-only: %q", q)
	}
	if st := text(mustOK(t, c, "domain_status", map[string]any{"conversation_id": "ro"})); !strings.Contains(st, "Read-only: the data directory "+data) {
		t.Errorf("domain_status does not say it is read-only: %q", st)
	}
	for _, refused := range []struct {
		tool string
		args map[string]any
	}{
		{"compact_context", map[string]any{"conversation_id": "ro", "messages": []any{msg("user", "The gate changed to 15.")}}},
		{"forget", map[string]any{"conversation_id": "ro", "query": "ferry gate"}},
	} {
		res := call(t, c, refused.tool, refused.args)
		if !res.IsError || !strings.Contains(text(res), refused.tool+" refused: the data directory "+data+" is served read-only (it cannot be written: ") {
			t.Errorf("%s on a read-only data directory: isError %v, %q", refused.tool, res.IsError, text(res))
		}
	}
	c.Close()
	if server == nil || server.ProcessState == nil || !server.ProcessState.Success() {
		t.Errorf("the read-only server did not exit cleanly: %v", server.ProcessState)
	}

	// Commands: a read (aliases list) needs no hand-over; an LLM
	// configured records no usage in the directory.
	for _, args := range [][]string{{"aliases", "list", "--data-dir", data}, {"status", "--data-dir", data}} {
		cmd := exec.Command(bin, args...)
		asUser(cmd)
		cmd.Env = append(cmd.Env, "VC_LLM_PROVIDER=sampling")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("vc-mcp %s on a read-only data directory: %v\n%s", args[0], err, out)
		}
	}

	// A hang-up ends a read-only server as SIGTERM does: its snapshot goes.
	hup := exec.Command(bin, "serve", "--data-dir", data)
	asUser(hup)
	hupIn, err := hup.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	hupOut, err := hup.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hup.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(hupIn, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hup","version":"1"}}}`)
	if line, err := bufio.NewReader(hupOut).ReadString('\n'); err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("initialize before the hang-up: %q, %v", line, err)
	}
	if err := hup.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := hup.Wait(); err != nil {
		t.Errorf("after SIGHUP: %v", err)
	}

	for _, p := range unreadable {
		if err := os.Chmod(p, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range files.Changes(before, treeState(t, data)) {
		t.Errorf("the read-only data directory was written: %s", c)
	}
	if left, _ := os.ReadDir(filepath.Join(base, "tmp")); len(left) > 0 {
		t.Errorf("a server left %s in its temporary directory", left[0].Name())
	}

	rebuild := exec.Command(bin, "rebuild", "--data-dir", data)
	asUser(rebuild)
	out, err := rebuild.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "make it writable") {
		t.Errorf("rebuild of a read-only data directory: %v\n%s", err, out)
	}
}

// treeState fingerprints the tree under dir (files.State).
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	st, err := files.State(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestReadOnlyHTTPLeavesTheDirectoryToItsWriter: `serve --http
// --read-only` beside the shared server writing the directory reports it
// in use; it does not take the directory over (a writable `serve --http`
// would, and the hosts would reconnect to it).
func TestReadOnlyHTTPLeavesTheDirectoryToItsWriter(t *testing.T) {
	dir := t.TempDir()
	host := startStdio(t, dir)
	mustOK(t, host.c, "compact_context", map[string]any{"conversation_id": "w", "messages": []any{
		msg("user", "The spare tyre is under the boot floor."),
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ro := exec.CommandContext(ctx, binary, "serve", "--http", "127.0.0.1:0", "--read-only", "--data-dir", dir)
	ro.Env = childEnv(t)
	out, err := ro.CombinedOutput()
	if err == nil || !strings.Contains(string(out), dir+" is in use by") {
		t.Errorf("serve --http --read-only beside a writer: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "took the data directory over") {
		t.Errorf("the read-only server took the directory over:\n%s", out)
	}
	if b, _ := os.ReadFile(share.LogFile(dir)); strings.Contains(string(b), "stop requested") {
		t.Errorf("the writer was asked to stop:\n%s", b)
	}
	mustOK(t, host.c, "compact_context", map[string]any{"conversation_id": "w", "messages": []any{
		msg("user", "The jack is in the left side pocket."),
	}})
}

// TestReadOnlyFlagOnAWritableDirectory: --read-only keeps a directory the
// user may write untouched. A CLI write asked to be read-only does not
// reach the shared server writing the directory; `serve --read-only`
// answers and refuses, saying how to store again; `proxy --read-only`
// takes no socket and no host over. The directory's files and times are
// as they were.
func TestReadOnlyFlagOnAWritableDirectory(t *testing.T) {
	dir := t.TempDir()
	env := childEnv(t)
	host := startStdio(t, dir)
	mustOK(t, host.c, "compact_context", map[string]any{"conversation_id": "w", "messages": []any{
		msg("user", "The spare tyre is under the boot floor."),
	}})
	_, stderr, code := cliRun(t, append(env, "VC_READ_ONLY=1"), `[{"role":"user","content":"The jack is in the glovebox."}]`,
		"compact", "-i", "-", "--data-dir", dir, "--conversation", "w")
	if code == 0 || !strings.Contains(stderr, "in use") {
		t.Errorf("a read-only CLI write beside the shared server: exit %d, %q", code, stderr)
	}
	if q := text(mustOK(t, host.c, "find_quote", map[string]any{"conversation_id": "w", "query": "jack glovebox"})); strings.Contains(q, "is in the glovebox") {
		t.Errorf("the read-only CLI write was stored: %q", q)
	}
	host.c.Close()
	quiesceNow(t, dir)
	before := treeState(t, dir)

	ro := startStdio(t, dir, "--read-only")
	if q := text(mustOK(t, ro.c, "find_quote", map[string]any{"conversation_id": "w", "query": "spare tyre"})); !strings.Contains(q, "boot floor") {
		t.Errorf("find_quote with --read-only: %q", q)
	}
	res := call(t, ro.c, "compact_context", map[string]any{"conversation_id": "w", "messages": []any{msg("user", "The jack is in the glovebox.")}})
	if !res.IsError || !strings.Contains(text(res), "(it was opened read-only)") || !strings.Contains(text(res), "without read-only") {
		t.Errorf("compact_context with --read-only: isError %v, %q", res.IsError, text(res))
	}
	ro.c.Close()

	proxy := exec.Command(binary, "proxy", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0", "--data-dir", dir, "--read-only")
	proxy.Env = env
	pipe, err := proxy.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	for lines := bufio.NewScanner(pipe); lines.Scan(); {
		log.WriteString(lines.Text() + "\n")
		if proxyListening.MatchString(lines.Text()) {
			break
		}
	}
	if _, err := share.Status(context.Background(), dir); err == nil {
		t.Error("the read-only proxy serves the shared socket: stdio hosts would reach a memory that refuses to store")
	}
	if err := proxy.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pipe)
	if err := proxy.Wait(); err != nil {
		t.Errorf("proxy --read-only: %v\n%s", err, log.String())
	}
	for _, c := range files.Changes(before, treeState(t, dir)) {
		t.Errorf("--read-only wrote to the directory: %s", c)
	}
}

// otherUser is a user who may not write what the tests' own user made:
// the tests' user itself after a chmod, or, when the tests run as root
// (whom permissions do not stop), the unprivileged uid 65534. base (0755)
// holds a copy of the binary it can run and a home and a temporary
// directory it can write.
type otherUser struct {
	base, bin string
	env       []string
}

func newOtherUser(t *testing.T) *otherUser {
	t.Helper()
	base, err := os.MkdirTemp("", "vc-mcp-read-only-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		_ = os.RemoveAll(base)
	})
	home := filepath.Join(base, "home")
	for _, d := range []string{home, filepath.Join(base, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	u := &otherUser{base: base, bin: filepath.Join(base, "vc-mcp")}
	if err := files.Copy(binary, u.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	u.env = append(childEnv(t), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "TMPDIR="+filepath.Join(base, "tmp"))
	return u
}

// prepare makes cmd run as the other user, in its environment.
func (u *otherUser) prepare(cmd *exec.Cmd) {
	cmd.Env = u.env
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
}

// TestAForeignDerivedFileKeepsTheMemoryWritable: one file of a derived
// part that the user may not write (a request history left by a run as
// root) does not make the memory read-only: it stores as before.
func TestAForeignDerivedFileKeepsTheMemoryWritable(t *testing.T) {
	u := newOtherUser(t)
	data := filepath.Join(u.base, "data")
	w := startStdio(t, data)
	mustOK(t, w.c, "compact_context", map[string]any{"conversation_id": "fd", "messages": []any{
		msg("user", "The recycling goes out on Tuesday evenings."),
	}})
	mustOK(t, w.c, "recall_context", map[string]any{"conversation_id": "fd", "message": "When does the recycling go out?"})
	w.c.Close()
	quiesceNow(t, data)
	histories, err := filepath.Glob(filepath.Join(data, "requests", "*"))
	if err != nil || len(histories) == 0 {
		t.Fatalf("no request history to make foreign: %v", err)
	}
	if os.Geteuid() == 0 {
		if err := filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				err = os.Lchown(p, 65534, 65534)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(histories[0], 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(histories[0], 0o444); err != nil {
		t.Fatal(err)
	}

	stderr := &syncbuf.Buffer{}
	tr := transport.NewStdioWithOptions(u.bin, nil, []string{"serve", "--data-dir", data}, transport.WithCommandFunc(
		func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			u.prepare(cmd)
			cmd.Env = append(cmd.Env, "VC_SHARE=off")
			cmd.Stderr = stderr
			return cmd, nil
		}))
	c := client.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	defer c.Close()
	defer func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	}()
	initialize(t, c)
	res := call(t, c, "compact_context", map[string]any{"conversation_id": "fd", "messages": []any{
		msg("user", "Glass goes in the green bin."),
	}})
	if res.IsError {
		t.Fatalf("compact_context with one foreign request history: %s", text(res))
	}
	if st := text(mustOK(t, c, "domain_status", map[string]any{"conversation_id": "fd"})); strings.Contains(st, "Read-only") {
		t.Errorf("domain_status: %q", st)
	}
}
