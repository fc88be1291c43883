package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

// TestCheckCLI stores two turns, checks the directory (clean: exit 0),
// damages the master log and checks again (a problem: exit 1, in text and
// JSON), and shows that check wrote nothing.
func TestCheckCLI(t *testing.T) {
	dir := t.TempDir()
	_, stderr, err := runCLIIn(t, `[{"role":"user","content":"The heron nests by the old mill pond."},{"role":"assistant","content":"Noted: the heron nests by the mill pond."}]`,
		"compact", "-i", "-", "--data-dir", dir)
	if err != nil {
		t.Fatalf("compact: %v\n%s", err, stderr)
	}
	out, stderr, err := runCLIIn(t, "", "check", "--data-dir", dir)
	if err != nil || !strings.Contains(out, "vc.db: ok") || !strings.Contains(out, "conversation default: 2 records") || !strings.Contains(out, "0 problem(s)") {
		t.Fatalf("check of a clean directory: %v\n%s%s", err, out, stderr)
	}
	logPath := filepath.Join(dir, "logs", "default.jsonl")
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{\"not\": \"a record\"}\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err = runCLIIn(t, "", "check", "--data-dir", dir)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "problem: a record at byte") || !strings.Contains(out, "-> the next start copies it to quarantine") ||
		!strings.Contains(stderr, "check: 1 problem(s)") {
		t.Fatalf("check of a damaged log: %v\n%s%s", err, out, stderr)
	}
	out, _, _ = runCLIIn(t, "", "check", "--data-dir", dir, "--json")
	var rep memory.CheckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Problems != 1 || rep.DB != memory.DBOK || len(rep.Conversations) != 1 || rep.Conversations[0].Records != 2 {
		t.Fatalf("check --json: %v %+v\n%s", err, rep, out)
	}
	after, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Fatal("check changed the log")
	}
	if _, err := os.Stat(filepath.Join(dir, "quarantine")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("check made a quarantine directory: %v", err)
	}

	// What it cannot read is not a problem found: exit status 3.
	if err := os.Truncate(logPath, int64(len(before)-len("{\"not\": \"a record\"}\n"))); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "vc.db")
	if err := os.Rename(db, db+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(db, 0o700); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = runCLIIn(t, "", "check", "--data-dir", dir)
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(out, "unchecked: vc.db could not be read") || !strings.Contains(out, "0 problem(s), 0 notice(s), 1 unchecked") {
		t.Fatalf("check with an unreadable vc.db: %v\n%s%s", err, out, stderr)
	}
}
