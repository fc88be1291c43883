package memory

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// dirState fingerprints the tree under dir (files.State).
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	st, err := files.State(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// filledDir is a closed data directory with two conversations, one of
// them compacted, and the recall text a writable store gave for probe.
func filledDir(t *testing.T, probe RecallRequest) (dir, want string) {
	t.Helper()
	dir = t.TempDir()
	s, err := Open(context.Background(), Options{Dir: dir, ContextWindow: 4000, LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ingest(t, s, "trip", chat(80, t0))
	ingest(t, s, "other", []Message{msg("user", "Ana", "The heron nests by the old mill pond.", t0)})
	res, err := s.Recall(context.Background(), probe)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, res.Text
}

// TestReadOnlyServesReadsAndNeverWrites: a read-only store answers reads
// as the writable store did, refuses every call that would write with
// ErrReadOnly and a message naming the directory, and leaves the data
// directory exactly as it was (no file added, changed or touched); its
// snapshot is gone after Close.
func TestReadOnlyServesReadsAndNeverWrites(t *testing.T) {
	ctx := context.Background()
	probe := RecallRequest{ConversationID: "trip", Message: "When is the Kyoto ryokan booked?", MaxTokens: 600}
	dir, want := filledDir(t, probe)
	before := dirState(t, dir)

	s, err := Open(ctx, Options{Dir: dir, ReadOnly: true, ContextWindow: 4000, LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open read-only: %v", err)
	}
	snapshot := s.opts.Dir
	if snapshot == dir || !strings.Contains(filepath.Base(snapshot), snapshotPrefix) {
		t.Fatalf("store opened %s, want a snapshot of %s", snapshot, dir)
	}

	got, err := s.Recall(ctx, probe)
	if err != nil {
		t.Fatalf("Recall: %v", err)
	}
	if got.Text != want {
		t.Errorf("read-only recall differs from the writable store's:\n got %q\nwant %q", got.Text, want)
	}
	q, err := s.FindQuote(ctx, FindQuoteRequest{Query: "heron mill pond", Scope: ScopeAll})
	if err != nil || len(q.Quotes) == 0 || q.Quotes[0].ConversationID != "other" {
		t.Errorf("FindQuote over all: %+v, %v", q.Quotes, err)
	}
	st, err := s.Status(ctx, "trip")
	if err != nil || st.Totals.Turns != 80 || !st.Features.ReadOnly || !strings.Contains(st.Features.ReadOnlyReason, dir) {
		t.Errorf("Status: turns %d, read-only %v %q, %v", st.Totals.Turns, st.Features.ReadOnly, st.Features.ReadOnlyReason, err)
	}
	if len(st.Tags) == 0 {
		t.Fatal("Status: no tags")
	}
	if _, err := s.Expand(ctx, ExpandRequest{ConversationID: "trip", Tag: st.Tags[0].Tag, Depth: DepthFull}); err != nil {
		t.Errorf("Expand pages the snapshot's working set: %v", err)
	}
	if _, err := s.ReadLog(ctx, ReadLogRequest{ConversationID: "trip", Start: 0, End: 200}); err != nil {
		t.Errorf("ReadLog: %v", err)
	}
	if _, err := s.Scan(ctx, ScanRequest{AllConversations: true}); err != nil {
		t.Errorf("Scan without redacting: %v", err)
	}
	if f, err := s.Forget(ctx, ForgetRequest{ConversationID: "trip", Query: "Kyoto", DryRun: true}); err != nil || len(f.TurnIDs) == 0 {
		t.Errorf("Forget's dry run: %+v, %v", f, err)
	}

	writes := []struct {
		name string
		call func() error
	}{
		{"Ingest", func() error {
			_, err := s.Ingest(ctx, IngestRequest{ConversationID: "trip", Messages: []Message{msg("user", "Ana", "a new message", time.Time{})}})
			return err
		}},
		{"Ingest into a new conversation", func() error {
			_, err := s.Ingest(ctx, IngestRequest{ConversationID: "new", Messages: []Message{msg("user", "Ana", "a new message", time.Time{})}})
			return err
		}},
		{"Forget", func() error {
			_, err := s.Forget(ctx, ForgetRequest{ConversationID: "trip", Query: "Kyoto"})
			return err
		}},
		{"AddAlias", func() error { _, err := s.AddAlias(ctx, "trip", "japan", st.Tags[0].Tag); return err }},
		{"AddContextItem", func() error { _, err := s.AddContextItem(ctx, "trip", "style"); return err }},
		{"RemoveContextItem", func() error { _, err := s.RemoveContextItem(ctx, "trip", "style"); return err }},
		{"UpdateSettings", func() error { _, err := s.UpdateSettings(SettingsPatch{}); return err }},
		{"ResetSettings", func() error { _, err := s.ResetSettings(); return err }},
		{"Scan with Redact", func() error { _, err := s.Scan(ctx, ScanRequest{AllConversations: true, Redact: true}); return err }},
		{"RegenerateSummaries", func() error { _, err := s.RegenerateSummaries(ctx, RegenerateRequest{}); return err }},
		{"SummarizeTurns", func() error { _, err := s.SummarizeTurns(ctx, TurnSummaryRequest{}); return err }},
		{"ClearTurnSummaries", func() error { _, err := s.ClearTurnSummaries(ctx, "trip"); return err }},
		{"ImportBundle", func() error { _, err := s.ImportBundle(ctx, &Bundle{}, BundleImportOptions{}, nil); return err }},
		{"CompactMessages", func() error {
			_, err := s.CompactMessages(ctx, ReplaceRequest{ConversationID: "trip", Messages: []Message{msg("user", "Ana", "hello", time.Time{})}})
			return err
		}},
	}
	for _, w := range writes {
		err := w.call()
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s: got %v, want ErrReadOnly", w.name, err)
			continue
		}
		if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "recall_context") {
			t.Errorf("%s: the refusal %q should name %s and say what still works", w.name, err, dir)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(snapshot); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("snapshot %s left after Close: %v", snapshot, err)
	}
	for _, c := range files.Changes(before, dirState(t, dir)) {
		t.Errorf("the read-only data directory was written: %s", c)
	}
}

// TestReadOnlyNextToAWriter: a data directory another store has open for
// writing is reported in use, not copied half-written; one whose vc.db is
// unreadable is served from its master logs; one with no memory in it is
// an error that says so; and rebuild refuses to run read-only.
func TestReadOnlyNextToAWriter(t *testing.T) {
	ctx := context.Background()
	probe := RecallRequest{ConversationID: "trip", Message: "the vet appointment for Rex", MaxTokens: 400}
	dir, _ := filledDir(t, probe)

	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	w := openTest(t, Options{Dir: dir, LockTimeout: 100 * time.Millisecond})
	if _, err := Open(ctx, Options{Dir: dir, ReadOnly: true, LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Errorf("read-only open next to a writer: got %v, want ErrLocked", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("a read-only open that failed left %s behind", left[0].Name())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(dir, dbFile), []byte(strings.Repeat("not a bbolt file ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Options{Dir: dir, ReadOnly: true, LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("read-only open with a damaged vc.db: %v", err)
	}
	if err := s.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := s.Recall(ctx, probe)
	if err != nil || !strings.Contains(res.Text, "vaccination") {
		t.Errorf("recall from the logs alone: %q, %v", res.Text, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if _, err := Open(ctx, Options{Dir: t.TempDir(), ReadOnly: true}); !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "holds no vc-mcp memory") {
		t.Errorf("read-only open of an empty directory: %v", err)
	}
	if err := Rebuild(ctx, Options{Dir: dir, ReadOnly: true}, nil); err == nil {
		t.Error("Rebuild ran read-only")
	}
}

// TestNotWritableLeavesNothing: the write check of a writable directory
// says nil and leaves no file behind (on Windows it creates and removes
// one in each directory, which moves their times: hence only added and
// removed entries count here; TestNotWritableWritesNothing holds Unix to
// no change at all); a missing directory is not refused (Open creates it). Refusals are checked end to end, as a user without
// write permission (TestReadOnlyDataDirectoryOverMCP in cmd/vc-mcp).
func TestNotWritableLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, dir)
	if err := NotWritable(dir); err != nil {
		t.Fatalf("NotWritable(writable dir) = %v", err)
	}
	if err := NotWritable(filepath.Join(dir, "missing")); err != nil {
		t.Fatalf("NotWritable(missing dir) = %v", err)
	}
	for _, c := range files.Changes(before, dirState(t, dir)) {
		if strings.HasPrefix(c, "added ") || strings.HasPrefix(c, "removed ") {
			t.Errorf("the write check left a trace: %s", c)
		}
	}
}

// BenchmarkOpenReadOnly times opening a closed 10,000-turn data directory
// and answering one recall, writable (the baseline) and read-only (the
// snapshot's copy on top).
func BenchmarkOpenReadOnly(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(context.Background(), Options{Dir: dir, ContextWindow: 8000, ProtectedTurns: 4, noSync: true})
	if err != nil {
		b.Fatal(err)
	}
	msgs := chat(10000, t0)
	for i := 0; i < len(msgs); i += 500 {
		ingest(b, s, "c", msgs[i:i+500])
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	for _, ro := range []bool{false, true} {
		name := "writable"
		if ro {
			name = "read-only"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s, err := Open(context.Background(), Options{Dir: dir, ReadOnly: ro, ContextWindow: 8000, ProtectedTurns: 4, noSync: true, Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "the Kyoto ryokan", MaxTokens: 2000}); err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStaleSnapshotsAndOnlyThemAreRemoved: a read-only start removes the
// snapshots of processes that ended (their lock free, or no lock file and
// a minute old) and leaves those of live stores, however old, and a new
// one not locked yet.
func TestStaleSnapshotsAndOnlyThemAreRemoved(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, _ := filledDir(t, RecallRequest{ConversationID: "trip", Message: "Kyoto"})
	old := time.Now().Add(-time.Hour)

	live, err := Open(ctx, Options{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := os.Chtimes(live.opts.Dir, old, old); err != nil {
		t.Fatal(err)
	}
	snap := func(name string, locked bool, mtime time.Time) string {
		d := filepath.Join(tmp, snapshotPrefix+name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if locked {
			db, err := bolt.Open(filepath.Join(d, snapshotLock), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil { // its process ended
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return d
	}
	deadLocked := snap("dead", true, time.Now())
	deadNoLock := snap("killed-before-locking", false, old)
	young := snap("being-made", false, time.Now())

	s, err := Open(ctx, Options{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for d, want := range map[string]bool{live.opts.Dir: true, deadLocked: false, deadNoLock: false, young: true, s.opts.Dir: true} {
		_, err := os.Stat(d)
		if got := err == nil; got != want {
			t.Errorf("%s: there %v, want %v", filepath.Base(d), got, want)
		}
	}
	if _, err := live.Recall(ctx, RecallRequest{ConversationID: "trip", Message: "Kyoto"}); err != nil {
		t.Errorf("the live store after another's start: %v", err)
	}
}
