package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/vc-mcp/vc-mcp/share"
)

// TestRequestIDsAfterACrash: a recall's request_id names its record in
// the request history, which is written after the answer and not
// fsync'd. When the shared server dies by kill -9 before its records are
// written (here: the history is gone, as if none had been), the ids it
// gave must not be given again to other recalls: the next server numbers
// past them, and after a second crash in a row, past the numbers the
// server in between gave. After a clean stop numbering goes on where it
// was.
func TestRequestIDsAfterACrash(t *testing.T) {
	dir := t.TempDir()
	s := startStdio(t, dir)
	mustOK(t, s.c, "compact_context", map[string]any{"messages": []any{
		msg("user", "The boathouse key hides under the blue heron statue."),
		msg("assistant", "Noted where the boathouse key is."),
	}})
	recallID := func(s *stdioServer) string {
		t.Helper()
		var r struct {
			RequestID string `json:"request_id"`
		}
		structured(t, mustOK(t, s.c, "recall_context", map[string]any{"message": "where is the boathouse key?"}), &r)
		if r.RequestID == "" {
			t.Fatal("recall_context gave no request_id")
		}
		return r.RequestID
	}
	given := map[string]bool{}
	for range 3 {
		given[recallID(s)] = true
	}
	// crash kills the server holding the store and its host, and removes
	// the history: as if the records had never been written.
	crash := func(s *stdioServer) {
		t.Helper()
		st, err := share.Status(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := os.FindProcess(st.PID); err != nil {
			t.Fatalf("find the shared server: %v", err)
		} else if err := p.Kill(); err != nil { // SIGKILL on unix
			t.Fatalf("kill the shared server: %v", err)
		}
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		waitFor(t, "the killed server to be gone", func() bool { return !holderAlive(dir) })
		// Written or not before the kill (the writer works after the
		// answer), the records are not on disk now.
		if err := os.Remove(filepath.Join(dir, "requests", "default.jsonl.gz")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	crash(s)
	s1 := startStdio(t, dir)
	after := recallID(s1)
	if given[after] {
		t.Fatalf("after a crash, request id %s was given again (given before: %v)", after, given)
	}
	if after != "r201" {
		t.Errorf("after a crash the first request id is %s, want r201 (Retention past the newest written record)", after)
	}
	given[after] = true
	// Killed again before it wrote a record: the next server must not
	// start at r201 again (found by a hostile review).
	crash(s1)
	s2 := startStdio(t, dir)
	if after = recallID(s2); given[after] || after != "r401" {
		t.Fatalf("after two crashes in a row the first request id is %s, want r401 (given before: %v)", after, given)
	}
	next := recallID(s2)
	s2.c.Close()
	quiesceNow(t, dir)
	s3 := startStdio(t, dir)
	if got := recallID(s3); got != "r403" {
		t.Errorf("after %s and a clean stop the next request id is %s, want r403", next, got)
	}
}
