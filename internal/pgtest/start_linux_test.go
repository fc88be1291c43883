package pgtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCleanOldKeepsLiveDirectories: test binaries of several packages start
// servers at once, and each start removes the directories of dead ones. A
// directory whose owner holds its lock must survive, whatever its
// postmaster.pid says (initdb's bootstrap backend writes a negated pid,
// which the earlier pid check took for a dead server); one whose lock is
// free goes.
func TestCleanOldKeepsLiveDirectories(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mk := func(name, pid string) string {
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(d, "data", "global"), 0o755); err != nil {
			t.Fatal(err)
		}
		if pid != "" {
			if err := os.WriteFile(filepath.Join(d, "data", "postmaster.pid"), []byte(pid+"\n"+d+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	live := mk("vc-pgtest-live", "-4101") // initdb's bootstrap backend
	held, err := lockOwner(live, true)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	dead := mk("vc-pgtest-dead", "999999999")
	f, err := lockOwner(dead, true)
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // its owner exited
	settingUp := mk("vc-pgtest-new", "")
	stale := mk("vc-pgtest-stale", "")
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}

	cleanOld()

	for d, want := range map[string]bool{live: true, dead: false, settingUp: true, stale: false} {
		_, err := os.Stat(filepath.Join(d, "data"))
		if got := err == nil; got != want {
			t.Errorf("%s: exists = %v, want %v", filepath.Base(d), got, want)
		}
	}
}
