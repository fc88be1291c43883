package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/share"
)

// The review's reproduction through the binary: 8 garbage bytes inside
// record 25 of 50. serve keeps 49 and says what it skipped; rebuild keeps
// 49; the next write keeps them all.
func TestDamagedLogThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	s := startStdio(t, dir)
	var batch []any
	for i := 1; i <= 50; i++ {
		batch = append(batch, msg("user", fmt.Sprintf("Record number %d carries the code recordword%02dx.", i, i)))
	}
	mustOK(t, s.c, "compact_context", map[string]any{"messages": batch})
	s.c.Close()
	stopShared(t, dir) // the shared server holds the conversation loaded

	path := filepath.Join(dir, "logs", "default.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	off := 0
	for _, l := range lines[:24] {
		off += len(l)
	}
	copy(data[off+len(lines[24])/2:], "GARBAGE!")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	check := func(stage string, s *stdioServer, present ...int) {
		t.Helper()
		var st struct {
			Totals struct {
				Turns          int `json:"turns"`
				DamagedRecords int `json:"damaged_records"`
			} `json:"totals"`
		}
		structured(t, mustOK(t, s.c, "domain_status", map[string]any{}), &st)
		if st.Totals.DamagedRecords != 1 {
			t.Fatalf("%s: domain_status damaged_records %d, want 1", stage, st.Totals.DamagedRecords)
		}
		for _, i := range present {
			w := fmt.Sprintf("recordword%02dx", i)
			if q := quotes(t, s, w); !strings.Contains(q, w) {
				t.Fatalf("%s: %s not found: %s", stage, w, q)
			}
		}
		if q := quotes(t, s, "recordword25x"); strings.Contains(q, "recordword25x") || strings.Contains(q, "t25 ") {
			t.Fatalf("%s: the damaged record was served: %s", stage, q)
		}
	}
	s2 := startStdio(t, dir)
	check("serve", s2, 1, 24, 26, 50)
	daemonLog, _ := os.ReadFile(share.LogFile(dir)) // the shared server that loaded the log
	if said := s2.stderr.String() + string(daemonLog); !strings.Contains(said, "damaged record skipped") {
		t.Fatalf("serve did not say what it skipped:\n%s", said)
	}
	s2.c.Close()

	rebuild := exec.Command(binary, "rebuild", "--data-dir", dir)
	rebuild.Env = childEnv(t)
	if out, err := rebuild.CombinedOutput(); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, out)
	}
	s3 := startStdio(t, dir)
	check("rebuild", s3, 1, 24, 26, 50)
	mustOK(t, s3.c, "compact_context", map[string]any{"messages": []any{msg("user", "After the damage: newword51x.")}})
	check("next write", s3, 1, 26, 50)
	if !strings.Contains(quotes(t, s3, "newword51x"), "newword51x") {
		t.Fatalf("the new message is not found")
	}
}

// quotes returns find_quote's hits as "turn_id excerpt" lines (the tool's
// text also repeats the query, so it cannot be searched as a whole).
func quotes(t *testing.T, s *stdioServer, query string) string {
	t.Helper()
	var fq struct {
		Quotes []struct {
			TurnID  string `json:"turn_id"`
			Excerpt string `json:"excerpt"`
		} `json:"quotes"`
	}
	structured(t, mustOK(t, s.c, "find_quote", map[string]any{"query": query}), &fq)
	var b strings.Builder
	for _, q := range fq.Quotes {
		fmt.Fprintf(&b, "%s %s\n", q.TurnID, q.Excerpt)
	}
	return b.String()
}

// SIGTERM while several clients write: the server finishes what is in
// flight and exits; nothing it acknowledged is lost.
func TestSIGTERMUnderLoad(t *testing.T) {
	dir := t.TempDir()
	s := startStdio(t, dir)
	var mu sync.Mutex
	var acked []string
	var started sync.WaitGroup
	var wg sync.WaitGroup
	var stopping atomic.Bool
	for w := 0; w < 4; w++ {
		started.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for i := 0; ; i++ {
				word := fmt.Sprintf("term%dword%04dq", w, i)
				res, err := callErr(s.c, "compact_context", map[string]any{"messages": []any{msg("user", "Keep "+word+" in mind.")}}, nil)
				if first {
					started.Done()
					first = false
				}
				if err != nil || res.IsError {
					if !stopping.Load() {
						t.Errorf("writer %d before SIGTERM: %v %v", w, err, res)
					}
					return
				}
				mu.Lock()
				acked = append(acked, word)
				mu.Unlock()
			}
		}()
	}
	started.Wait()
	stopping.Store(true)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	exited := make(chan error, 1)
	go func() {
		_, err := s.cmd.Process.Wait()
		exited <- err
	}()
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		t.Fatalf("the server did not exit after SIGTERM under load:\n%s", s.stderr.String())
	}
	s.c.Close()
	wg.Wait()

	mu.Lock()
	words := append([]string(nil), acked...)
	mu.Unlock()
	s2 := startStdio(t, dir)
	for _, w := range words {
		if !strings.Contains(quotes(t, s2, w), w) {
			t.Errorf("acknowledged %s is lost after SIGTERM", w)
		}
	}
}
