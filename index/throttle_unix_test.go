//go:build unix

package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// failingWritesChild names the data directory of the child process of
// TestFailingWritesNeitherSpinNorHang.
const failingWritesChild = "VC_INDEX_FAILING_WRITES_DIR"

// TestFailingWritesNeitherSpinNorHang: with every write of a segment
// failing (the process's file size limit stands in for a full disk),
// scorch's persister retries at once, forever. The retries must come
// backoff apart instead of taking a core, a purge must return when its
// context ends, and Close must return (reporting the failure) instead of
// waiting for a write that cannot succeed. The limit is set in a child
// process: it would fail the test binary's own writes too.
func TestFailingWritesNeitherSpinNorHang(t *testing.T) {
	if dir := os.Getenv(failingWritesChild); dir != "" {
		failingWritesChildMain(t, dir)
		return
	}
	dir := filepath.Join(t.TempDir(), "idx")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFailingWritesNeitherSpinNorHang$", "-test.v")
	cmd.Env = append(os.Environ(), failingWritesChild+"="+dir)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the child did not finish in 90 s (a purge or Close waits for writes that cannot succeed):\n%s", out)
	}
	if err != nil || !strings.Contains(string(out), "child: closed") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func failingWritesChildMain(t *testing.T, dir string) {
	ix, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	docs := func(from, n int) []Doc {
		out := make([]Doc, n)
		for i := range out {
			out[i] = Doc{ID: fmt.Sprintf("c/t%d", from+i), Conversation: "c", Kind: "turn",
				Text: fmt.Sprintf("turn %d about harbour cranes, invoices %d and the violin lesson on day %d of the plan", from+i, i*7, i%31)}
		}
		return out
	}
	// Two segments on disk, each smaller than the limit below: a merge of
	// them, or a segment of the later documents, is larger.
	for _, from := range []int{0, 400} {
		if err := ix.Add(context.Background(), docs(from, 400)); err != nil {
			t.Fatal(err)
		}
		if err := ix.sync(); err != nil {
			t.Fatal(err)
		}
		b := ix.bi.NewBatch()
		b.SetInternal([]byte("test/persisted"), []byte(fmt.Sprint(from)))
		if err := persist(ix.bi, b, nil); err != nil {
			t.Fatal(err)
		}
	}
	lim := syscall.Rlimit{Cur: 48 << 10, Max: 48 << 10}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	// A purge merges the two: the merged segment cannot be written, and
	// the purge must end with its context.
	pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := ix.Purge(pctx); err == nil {
		t.Error("Purge with every write failing: no error")
	} else {
		fmt.Println("child: purge:", err)
	}
	if err := ix.Add(context.Background(), docs(800, 4000)); err != nil {
		t.Fatal(err)
	}
	if err := ix.sync(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !ix.throttle.failing() {
		if time.Now().After(deadline) {
			t.Fatal("setup: no write failed under the file size limit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The persister and the merger fail again and again meanwhile:
	// backoff apart, they take a small share of a core (a loop of retries
	// takes all of one).
	before := cpuTime(t)
	time.Sleep(2 * time.Second)
	if used := cpuTime(t) - before; used > time.Second {
		t.Errorf("failing writes took %v of CPU in 2 s: the retries spin", used)
	}
	err = ix.Close()
	if !errors.Is(err, errWriteFailing) {
		t.Errorf("Close with every write failing: %v, want it to say the writes fail", err)
	}
	fmt.Println("child: closed:", err)
}

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
