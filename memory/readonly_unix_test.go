//go:build unix

package memory

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// TestNotWritableWritesNothing: on Unix the write check asks the kernel and
// touches nothing, not even a directory's modification time.
func TestNotWritableWritesNothing(t *testing.T) {
	dir, _ := filledDir(t, RecallRequest{ConversationID: "trip", Message: "Kyoto"})
	before, err := files.State(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := NotWritable(dir); err != nil {
		t.Fatalf("NotWritable(writable dir) = %v", err)
	}
	after, err := files.State(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range files.Changes(before, after) {
		t.Errorf("the write check wrote: %s", c)
	}
}

// TestReadOnlyFollowsLinks: master logs kept elsewhere behind a symbolic
// link (the logs directory, or one log) are served, not skipped.
func TestReadOnlyFollowsLinks(t *testing.T) {
	ctx := context.Background()
	probe := RecallRequest{ConversationID: "trip", Message: "When is the Kyoto ryokan booked?", MaxTokens: 600}
	for _, linked := range []string{logsDir, filepath.Join(logsDir, fileName("trip")+logExt)} {
		t.Run(filepath.Base(linked), func(t *testing.T) {
			dir, want := filledDir(t, probe)
			elsewhere := filepath.Join(t.TempDir(), "moved")
			if err := os.Rename(filepath.Join(dir, linked), elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, filepath.Join(dir, linked)); err != nil {
				t.Fatal(err)
			}
			s, err := Open(ctx, Options{Dir: dir, ReadOnly: true, ContextWindow: 4000})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st, err := s.Status(ctx, "trip")
			if err != nil || st.Totals.Turns != 80 {
				t.Fatalf("status through the link: %d turns, %v", st.Totals.Turns, err)
			}
			got, err := s.Recall(ctx, probe)
			if err != nil || got.Text != want || !strings.Contains(got.Text, "Kyoto") {
				t.Errorf("recall through the link: %q, %v\nwant %q", got.Text, err, want)
			}
		})
	}
}

// TestReadOnlyRefusesADanglingLog: a log (or logs directory) behind a link
// that leads nowhere is an error naming it, never an empty memory.
func TestReadOnlyRefusesADanglingLog(t *testing.T) {
	for _, linked := range []string{logsDir, filepath.Join(logsDir, fileName("trip")+logExt)} {
		t.Run(filepath.Base(linked), func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			dir, _ := filledDir(t, RecallRequest{ConversationID: "trip", Message: "Kyoto"})
			if err := os.RemoveAll(filepath.Join(dir, linked)); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), filepath.Join(dir, linked)); err != nil {
				t.Fatal(err)
			}
			s, err := Open(context.Background(), Options{Dir: dir, ReadOnly: true})
			if err == nil {
				s.Close()
				t.Fatal("a dangling log was served")
			}
			if !strings.Contains(err.Error(), "gone") && !strings.Contains(err.Error(), filepath.Base(linked)) {
				t.Errorf("the error does not name the link: %v", err)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("left %s behind", left[0].Name())
			}
		})
	}
}
