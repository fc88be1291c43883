package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runCLIIn runs the binary with stdin and returns stdout, stderr and the
// error (a non-zero exit is not fatal here).
func runCLIIn(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = childEnv(t)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func filesWith(t *testing.T, dir, word string) []string {
	t.Helper()
	// The logs are JSON: a word with &, < or > is stored escaped there.
	js, _ := json.Marshal(word)
	escaped := js[1 : len(js)-1]
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && (bytes.Contains(b, []byte(word)) || bytes.Contains(b, escaped)) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestForgetCLI: `vc-mcp forget` while a stdio host runs (the shared
// server pauses and the host reconnects): dry run, a refused confirmation,
// then forgetting; the host no longer finds the fact, the other turns stay.
func TestForgetCLI(t *testing.T) {
	dir := t.TempDir()
	s := startStdio(t, dir)
	mustOK(t, s.c, "compact_context", map[string]any{"conversation_id": "home", "messages": []any{
		msg("user", "The boathouse key hides under the blue heron statue."),
		msg("assistant", "Noted where the boathouse key is."),
		msg("user", "Next week we repaint the kayak rack green."),
	}})
	out, _, err := runCLIIn(t, "", "forget", "--data-dir", dir, "--conversation", "home", "--query", "Blue Heron", "--dry-run")
	if err != nil || !strings.Contains(out, "1 turn(s) of \"home\" match: t1") || !strings.Contains(out, "dry run") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	// (The host reconnects to a restarted shared server before the next
	// command pauses it again.)
	mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "home", "query": "kayak"})
	if _, _, err := runCLIIn(t, "", "forget", "--data-dir", dir, "--query", "heron"); err == nil {
		t.Fatal("forget without --conversation succeeded")
	}
	if _, _, err := runCLIIn(t, "", "forget", "--data-dir", dir, "--conversation", "home"); err == nil {
		t.Fatal("forget without a selector succeeded")
	}
	out, stderr, err := runCLIIn(t, "n\n", "forget", "--data-dir", dir, "--conversation", "home", "--query", "blue heron")
	if err == nil || !strings.Contains(stderr, "not confirmed") {
		t.Fatalf("refused confirmation: %v\n%s\n%s", err, out, stderr)
	}
	got := text(mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "home", "query": "heron statue"}))
	if !strings.Contains(got, "boathouse") {
		t.Fatalf("a refused forget forgot: %s", got)
	}
	out, stderr, err = runCLIIn(t, "yes\n", "forget", "--data-dir", dir, "--conversation", "home", "--query", "blue heron")
	if err != nil || !strings.Contains(out, "forgot 1 turn(s) of \"home\": t1") {
		t.Fatalf("forget: %v\n%s\n%s", err, out, stderr)
	}
	got = text(mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "home", "query": "heron statue"}))
	if strings.Contains(got, "boathouse") || !strings.Contains(got, "No stored turn matches") {
		t.Fatalf("the host still finds the forgotten turn: %s", got)
	}
	got = text(mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "home", "query": "kayak rack"}))
	if !strings.Contains(got, "repaint") {
		t.Fatalf("the other turns were lost: %s", got)
	}
}

// TestScanCLI: history imported with scrubbing off holds a password; `vc-mcp
// scan` reports it by rule and turn without printing it, --redact replaces
// it in place, and no file of the data directory keeps it.
func TestScanCLI(t *testing.T) {
	dir := t.TempDir()
	const secret = "Tr0ub4dor&3"
	fixture := filepath.Join("..", "..", "memory", "testdata", "import", "chatgpt.json")
	runCLI(t, "import", "--scrub=false", "--format", "chatgpt", fixture, "--data-dir", dir)
	if len(filesWith(t, dir, secret)) == 0 {
		t.Fatal("setup: the password was not stored")
	}
	out, stderr, err := runCLIIn(t, "", "scan", "--data-dir", dir)
	if err != nil || !strings.Contains(out, "password") || !strings.Contains(out, "1 findings") || !strings.Contains(out, "--redact") {
		t.Fatalf("scan: %v\n%s\n%s", err, out, stderr)
	}
	if strings.Contains(out+stderr, secret) {
		t.Fatalf("scan printed the secret:\n%s\n%s", out, stderr)
	}
	out, stderr, err = runCLIIn(t, "", "scan", "--data-dir", dir, "--redact")
	if err != nil || !strings.Contains(out, "redacted 1 turn(s)") {
		t.Fatalf("scan --redact: %v\n%s\n%s", err, out, stderr)
	}
	if files := filesWith(t, dir, secret); len(files) > 0 {
		t.Fatalf("the password is still in %v", files)
	}
	out, _, err = runCLIIn(t, "", "scan", "--data-dir", dir)
	if err != nil || !strings.Contains(out, "no secrets found") {
		t.Fatalf("scan after redact: %v\n%s", err, out)
	}
}

// TestExclusiveCommandsOnAFullDisk: forget, rebuild and scan --redact take
// the data directory for themselves by writing its lock file first; on a
// full disk (here the lock file is a link to /dev/full, whose writes fail
// with ENOSPC) each says so and what to do, changes nothing, and leaves no
// lock file behind that would hold a later run.
func TestExclusiveCommandsOnAFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system: ", err)
	}
	dir := t.TempDir()
	if out, errs, err := runCLIIn(t, `[{"role":"user","content":"The boathouse key hides under the blue heron statue."}]`,
		"compact", "-i", "-", "--data-dir", dir, "--conversation", "home"); err != nil {
		t.Fatalf("compact: %v\n%s%s", err, out, errs)
	}
	hold := filepath.Join(dir, "vc-mcp.hold")
	for _, args := range [][]string{
		{"forget", "--conversation", "home", "--query", "blue heron", "--yes"},
		{"rebuild"},
		{"scan", "--redact"},
	} {
		if err := os.Symlink("/dev/full", hold); err != nil {
			t.Fatal(err)
		}
		_, errs, err := runCLIIn(t, "", append(args, "--data-dir", dir)...)
		if err == nil {
			t.Fatalf("%s on a full disk succeeded", args[0])
		}
		for _, want := range []string{"disk full", "free space on the disk holding " + dir, "run it again", "nothing was changed"} {
			if !strings.Contains(errs, want) {
				t.Errorf("%s on a full disk: %q does not say %q", args[0], strings.TrimSpace(errs), want)
			}
		}
		if _, err := os.Lstat(hold); !os.IsNotExist(err) {
			t.Fatalf("%s left its lock file: %v", args[0], err)
		}
	}
	out, errs, err := runCLIIn(t, "", "forget", "--data-dir", dir, "--conversation", "home", "--query", "blue heron", "--dry-run")
	if err != nil || !strings.Contains(out, "1 turn(s) of \"home\" match") {
		t.Fatalf("after the full disk the turn is still there: %v\n%s%s", err, out, errs)
	}
}
