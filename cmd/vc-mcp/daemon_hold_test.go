package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/share"
)

// TestOwnerLeavesAHeldDataDir: a daemon that passed the hold check before a
// command took the data directory (rebuild, serve --http) and opened the
// store after the command stopped the previous owner gives the store up
// instead of serving: otherwise the command waits out its lock timeout and
// fails while the late daemon serves on.
func TestOwnerLeavesAHeldDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	// The "command": a live process other than this one.
	holder := exec.Command("sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	ownerListening = func() {
		if err := os.WriteFile(filepath.Join(dir, "vc-mcp.hold"), []byte(strconv.Itoa(holder.Process.Pid)), 0o600); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { ownerListening = func() {} })
	t.Setenv("VC_MODEL_DIR", filepath.Join(dir, "no-model"))
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := runOwner(ctx, []string{"--data-dir", dir}, &stderr); err != nil {
		t.Fatalf("runOwner: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "took the data directory") {
		t.Errorf("no word of leaving it:\n%s", stderr.String())
	}
	// The store and the socket are free for the command.
	if _, err := share.Status(ctx, dir); err == nil {
		t.Error("an owner still answers on the socket")
	}
	s, err := memory.Open(ctx, memory.Options{Dir: dir})
	if err != nil {
		t.Fatalf("the command cannot open the store: %v", err)
	}
	s.Close()
}
