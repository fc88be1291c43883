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
	good, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// Two bytes of the first record turned, as a failing disk would.
	bad := append([]byte{}, good...)
	copy(bad[20:], "!!")
	if err := os.WriteFile(logPath, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	before := bad
	out, stderr, err = runCLIIn(t, "", "check", "--data-dir", dir)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "problem: a record at byte 0") || !strings.Contains(out, "-> the next start copies it to quarantine") ||
		!strings.Contains(out, "problem: 1 stored turn(s) have no valid record in the log: t1") || !strings.Contains(stderr, "check: 2 problem(s)") {
		t.Fatalf("check of a damaged log: %v\n%s%s", err, out, stderr)
	}
	out, _, _ = runCLIIn(t, "", "check", "--data-dir", dir, "--json")
	var rep memory.CheckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Problems != 2 || rep.DB != memory.DBOK || len(rep.Conversations) != 1 || rep.Conversations[0].Records != 1 {
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
	if err := os.WriteFile(logPath, good, 0o600); err != nil {
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
	// A check that cannot run is not a problem found either.
	for _, args := range [][]string{{"--data-dir", filepath.Join(dir, "nowhere")}, {"--data-dir", dir, "--conversation", "nosuch"}} {
		_, stderr, err = runCLIIn(t, "", append([]string{"check"}, args...)...)
		if !errors.As(err, &exit) || exit.ExitCode() != 3 || stderr == "" {
			t.Errorf("check %v: %v, want exit status 3 and a message\n%s", args, err, stderr)
		}
	}
}
