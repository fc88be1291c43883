package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = childEnv(t)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("vc-mcp %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), errb.String()
}

// TestImportCLI imports the ChatGPT and Claude fixtures with the binary
// (format given and detected), re-runs them (nothing stored twice), then
// finds the imported words over MCP.
func TestImportCLI(t *testing.T) {
	dir := t.TempDir()
	fixtures := filepath.Join("..", "..", "memory", "testdata", "import")
	out, stderr := runCLI(t, "import", "--format", "chatgpt", filepath.Join(fixtures, "chatgpt.json"), "--data-dir", dir)
	if !strings.Contains(out, "imported 2 conversation(s)") || !strings.Contains(out, "7 message(s) stored") || !strings.Contains(out, "1 secret(s) redacted") {
		t.Errorf("chatgpt import: got %q", out)
	}
	if !strings.Contains(stderr, "importing chatgpt") {
		t.Errorf("no progress bar on stderr: %q", stderr)
	}
	out, _ = runCLI(t, "import", "--data-dir", dir, filepath.Join(fixtures, "claude.json"))
	if !strings.Contains(out, "imported 2 conversation(s)") || !strings.Contains(out, "6 message(s) stored") {
		t.Errorf("claude import (detected): got %q", out)
	}
	out, _ = runCLI(t, "import", "--format=chatgpt", "--data-dir", dir, filepath.Join(fixtures, "chatgpt.json"))
	if !strings.Contains(out, "0 message(s) stored, 7 already there") {
		t.Errorf("re-import: got %q, want nothing stored", out)
	}
	s := startStdio(t, dir)
	got := text(mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "chatgpt:trip-to-kyoto-6743a1b2", "query": "Kiyomizu temple"}))
	if !strings.Contains(got, "Kiyomizu") || !strings.Contains(got, "2024-05-06") {
		t.Errorf("find_quote on the imported chat: %s", got)
	}
	got = text(mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "claude:garden-planning-b1c2d3e4", "query": "basil sun"}))
	if !strings.Contains(got, "six hours") {
		t.Errorf("find_quote on the imported Claude chat: %s", got)
	}
}

func TestImportCLIErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "--data-dir", t.TempDir()}, "no FILE"},
		{[]string{"import", "--format", "gemini", "--data-dir", t.TempDir(), "x.json"}, "no such file"},
		{[]string{"import", "--format", "chatgpt", "--data-dir", t.TempDir(), filepath.Join("..", "..", "memory", "testdata", "import", "claude.json")}, "has no \"mapping\""},
		{[]string{"import", "--data-dir", t.TempDir(), bad}, "no such file"},
	} {
		cmd := exec.Command(binary, tt.args...)
		cmd.Env = childEnv(t)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("vc-mcp %v: got %v %q, want an error containing %q", tt.args, err, out, tt.want)
		}
	}
}

// TestImportWhileHostsRun imports into a data directory a stdio host is
// using: the shared server pauses for the import, and the same host then
// finds the imported chat and still has what it stored before.
func TestImportWhileHostsRun(t *testing.T) {
	dir := t.TempDir()
	s := startStdio(t, dir)
	mustOK(t, s.c, "compact_context", map[string]any{"messages": []any{msg("user", "Before the import: the walrusword7 note.")}})
	fixtures := filepath.Join("..", "..", "memory", "testdata", "import")
	out, _ := runCLI(t, "import", "--format", "chatgpt", filepath.Join(fixtures, "chatgpt.json"), "--data-dir", dir)
	if !strings.Contains(out, "imported 2 conversation(s)") {
		t.Fatalf("import beside a running host: got %q", out)
	}
	got := text(mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "chatgpt:trip-to-kyoto-6743a1b2", "query": "Kiyomizu temple"}))
	if !strings.Contains(got, "Kiyomizu") {
		t.Errorf("the host does not see the import: %s", got)
	}
	if got := text(mustOK(t, s.c, "find_quote", map[string]any{"query": "walrusword7"})); !strings.Contains(got, "walrusword7") {
		t.Errorf("the host lost what it stored before the import: %s", got)
	}
}
