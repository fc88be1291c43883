package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/files"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

// crash drops a store without Close, as a kill -9 would: nothing it holds
// in memory reaches disk.
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.closed.Store(true)
	if s.stopEmbed != nil {
		s.stopEmbed()
		<-s.embedDone
	}
	_ = s.ix.Close()
	_ = s.db.Close()
}

// readable returns the stored content of every turn that reads back.
func readable(t *testing.T, s *Store, id string) map[int]string {
	t.Helper()
	c, err := s.conversation(context.Background(), id, false)
	if err != nil {
		t.Fatalf("conversation %s: %v", id, err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[int]string{}
	for _, tm := range c.turns {
		if tm.Damaged {
			continue
		}
		rec, err := c.log.Read(tm.Start, tm.End)
		if err != nil {
			t.Fatalf("turn %d is not marked damaged but does not read: %v", tm.Seq, err)
		}
		out[tm.Seq] = rec.Content
	}
	return out
}

func damaged(t *testing.T, s *Store, id string) int {
	t.Helper()
	st, err := s.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st.Totals.DamagedRecords
}

// logLine returns the byte range of the n-th line (1-based) of a log.
func logLine(t *testing.T, data []byte, n int) (int, int) {
	t.Helper()
	start := 0
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data[start:], '\n')
		if j < 0 {
			t.Fatalf("log has fewer than %d lines", n)
		}
		start += j + 1
	}
	return start, start + bytes.IndexByte(data[start:], '\n')
}

// garble writes 8 garbage bytes in the middle of line n (1-based) of the
// log at path, as a damaged disk would, and returns the log as written.
func garble(t *testing.T, path string, n int) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := logLine(t, data, n)
	copy(data[(lo+hi)/2:], "GARBAGE!")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return data
}

// The review's reproduction: 8 garbage bytes inside record 25 of 50.
func TestDamagedRecordKeepsTheOthers(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openTest(t, Options{Dir: dir})
	msgs := chat(50, t0)
	ingest(t, s, "c", msgs)
	path := s.logPath("c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data := garble(t, path, 25)
	want49 := func(s *Store, stage string, extra int) {
		t.Helper()
		got := readable(t, s, "c")
		if len(got) != 49+extra {
			t.Fatalf("%s: %d readable turns, want %d", stage, len(got), 49+extra)
		}
		if _, ok := got[25]; ok {
			t.Fatalf("%s: damaged turn 25 served", stage)
		}
		for seq := 26; seq <= 50; seq++ {
			if !strings.Contains(string(msgs[seq-1].Content), got[seq]) || got[seq] == "" {
				t.Fatalf("%s: turn %d = %q", stage, seq, got[seq])
			}
		}
		if n := damaged(t, s, "c"); n != 1 {
			t.Fatalf("%s: damaged_records %d, want 1", stage, n)
		}
	}

	// serve
	s = openTest(t, Options{Dir: dir})
	want49(s, "serve", 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// rebuild
	if err := Rebuild(ctx, Options{Dir: dir}, nil); err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	s = openTest(t, Options{Dir: dir})
	want49(s, "rebuild", 0)
	// the next write keeps them all
	res := ingest(t, s, "c", []Message{msg("user", "Ana", "a new message after the damage", t0.Add(time.Hour))})
	if len(res.TurnIDs) != 1 || res.TurnIDs[0] != "t51" {
		t.Fatalf("new turn ids %v, want [t51]", res.TurnIDs)
	}
	want49(s, "after a write", 1)
	// kill -9, then open
	crash(t, s)
	s = openTest(t, Options{Dir: dir})
	want49(s, "after a crash", 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Rebuild(ctx, Options{Dir: dir}, nil); err != nil {
		t.Fatalf("second Rebuild: %v", err)
	}
	s = openTest(t, Options{Dir: dir})
	want49(s, "second rebuild", 1)

	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after[:len(data)], data) {
		t.Fatalf("the log's old bytes changed")
	}
	q, err := os.ReadFile(filepath.Join(dir, quarantineDir, "c.jsonl"))
	if err != nil {
		t.Fatalf("no quarantine file: %v", err)
	}
	if got := bytes.Count(q, []byte("\n")); got != 1 || !bytes.Contains(q, []byte("GARBAGE!")) {
		t.Fatalf("quarantine holds %d records, want the damaged one once:\n%s", got, q)
	}
}

// The review's reproduction: the log cut short by 30 bytes.
func TestLogCutShort(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", chat(50, t0))
	path := s.logPath("c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()-30); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	res := ingest(t, s, "c", []Message{msg("user", "Ana", "stored after the cut", t0.Add(time.Hour))})
	if len(res.TurnIDs) != 1 || res.TurnIDs[0] != "t51" {
		t.Fatalf("new turn ids %v, want [t51] (t50 was acknowledged once; its id is not reused)", res.TurnIDs)
	}
	check := func(stage string) {
		t.Helper()
		got := readable(t, s, "c")
		if len(got) != 50 || got[51] != "stored after the cut" {
			t.Fatalf("%s: %d readable turns, t51 = %q; want 50 and the new message", stage, len(got), got[51])
		}
		if n := damaged(t, s, "c"); n != 1 {
			t.Fatalf("%s: damaged_records %d, want 1", stage, n)
		}
	}
	check("serve")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		t.Fatalf("the log has a hole of NUL bytes")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Rebuild(ctx, Options{Dir: dir}, nil); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	check("rebuild")
	q, err := os.ReadFile(filepath.Join(dir, quarantineDir, "c.jsonl"))
	if err != nil || !bytes.Contains(q, []byte("torn tail")) {
		t.Fatalf("the cut record is not in quarantine: %v\n%s", err, q)
	}
}

// Bytes inserted inside a record shift every record after it: the store
// finds them at their new place instead of serving garbage.
func TestInsertedBytesShiftRecords(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", chat(20, t0))
	path := s.logPath("c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	lo, hi := logLine(t, data, 10)
	mid := (lo + hi) / 2
	data = append(data[:mid:mid], append([]byte("INSERTED"), data[mid:]...)...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	if got := readable(t, s, "c"); len(got) != 19 {
		t.Fatalf("%d readable turns, want 19", len(got))
	}
	res := ingest(t, s, "c", []Message{msg("user", "Ana", "after the insert", t0.Add(time.Hour))})
	if res.TurnIDs[0] != "t21" {
		t.Fatalf("turn ids %v", res.TurnIDs)
	}
	if got := readable(t, s, "c"); len(got) != 20 || got[21] != "after the insert" {
		t.Fatalf("after a write: %d readable", len(got))
	}
}

// Logs written before framing (version 1, no checksum) still read, and new
// records are framed after them.
func TestLegacyLogStillReads(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	path := s.logPath("old")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var legacy bytes.Buffer
	for i, m := range chat(6, t0) {
		in := mustNorm(t, m)
		r := recordFrom(i+1, in, t0)
		r.V = masterlog.VersionLegacy
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		legacy.Write(line)
		legacy.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, legacy.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	if got := readable(t, s, "old"); len(got) != 6 {
		t.Fatalf("%d legacy turns readable, want 6", len(got))
	}
	ingest(t, s, "old", []Message{msg("user", "Ana", "framed now", t0.Add(time.Hour))})
	if got := readable(t, s, "old"); len(got) != 7 || got[7] != "framed now" {
		t.Fatalf("after a write: %v", got)
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasPrefix(data, legacy.Bytes()) || !bytes.HasPrefix(data[legacy.Len():], []byte(`[4,7,`)) {
		t.Fatalf("legacy bytes changed or new record unframed")
	}
}

// A full disk: the error says what to do and that nothing was stored;
// reads keep working; once there is space again, writing resumes with the
// right turn ids and nothing half-written in the log.
func TestDiskFullSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", chat(10, t0))
	files.WriteHook = func(string) error { return syscall.ENOSPC }
	t.Cleanup(func() { files.WriteHook = nil })
	_, err := s.Ingest(context.Background(), IngestRequest{ConversationID: "c", Messages: []Message{msg("user", "Ana", "lost to a full disk", t0.Add(time.Hour))}})
	if !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Ingest on a full disk: %v, want ErrStorage wrapping ENOSPC", err)
	}
	for _, want := range []string{"disk full", dir, "nothing was stored"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "the Kyoto ryokan"}); err != nil {
		t.Fatalf("Recall on a full disk: %v", err)
	}
	fq, err := s.FindQuote(context.Background(), FindQuoteRequest{ConversationID: "c", Query: "GOMAXPROCS"})
	if err != nil || len(fq.Quotes) == 0 {
		t.Fatalf("FindQuote on a full disk: %v %v", err, fq.Quotes)
	}
	files.WriteHook = nil
	res := ingest(t, s, "c", []Message{msg("user", "Ana", "space is back", t0.Add(2*time.Hour))})
	if fmt.Sprint(res.TurnIDs) != "[t11]" {
		t.Fatalf("turn ids after the disk full: %v, want [t11]", res.TurnIDs)
	}
	if got := readable(t, s, "c"); len(got) != 11 || got[11] != "space is back" {
		t.Fatalf("after the disk full: %d turns", len(got))
	}
}

// TestDiskFullAfterAFailedCommit: a full disk that fails a commit after
// the master log took the messages (here the decisions log's append) leaves
// the log ahead of the state; the next write repairs that first, and when
// the disk is still full its error must say so too, not be a bare fault
// (found by a hostile review: "internal error" on a full tmpfs, for writes
// and forgets alike).
func TestDiskFullAfterAFailedCommit(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", chat(10, t0))
	files.WriteHook = func(path string) error {
		if strings.Contains(path, decisionsDir) {
			return syscall.ENOSPC
		}
		return nil
	}
	t.Cleanup(func() { files.WriteHook = nil })
	_, err := s.Ingest(context.Background(), IngestRequest{ConversationID: "c", Messages: []Message{msg("user", "Ana", "kept in the log", t0.Add(time.Hour))}})
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "saved in the master log") {
		t.Fatalf("first write: %v, want a StorageError saying the messages are in the master log", err)
	}
	for _, op := range []struct {
		name string
		call func() error
	}{
		{"ingest", func() error {
			_, err := s.Ingest(context.Background(), IngestRequest{ConversationID: "c", Messages: []Message{msg("user", "Ana", "a second try", t0.Add(2*time.Hour))}})
			return err
		}},
		{"forget", func() error {
			_, err := s.Forget(context.Background(), ForgetRequest{ConversationID: "c", TurnIDs: []string{"t2"}})
			return err
		}},
	} {
		if err := op.call(); !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("%s while the log is ahead and the disk full: %v, want the disk-full StorageError", op.name, err)
		}
	}
	files.WriteHook = nil
	ingest(t, s, "c", []Message{msg("user", "Ana", "space is back", t0.Add(3*time.Hour))})
	if got := readable(t, s, "c"); len(got) != 12 || got[11] != "kept in the log" || got[12] != "space is back" {
		t.Fatalf("after the disk full: %d turns (%q, %q)", len(got), got[11], got[12])
	}
}

// TestOpenWithoutTheHolderRecord: a store that cannot write holder.json
// (a full disk; here a directory is in its place) opens and serves all
// the same: the record only names the holding process to another one.
func TestOpenWithoutTheHolderRecord(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", []Message{msg("user", "Ana", "the harbour crane inspection moved to Friday", t0)})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, holderFile, "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	res, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "When is the crane inspection?"})
	if err != nil || !strings.Contains(res.Text, "Friday") {
		t.Fatalf("recall without the holder record: %v, %q", err, res.Text)
	}
}

// checkText runs Check on dir and returns its findings, one a line, and
// its problem count.
func checkText(t *testing.T, dir string) (string, int) {
	t.Helper()
	rep, err := Check(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "%s: %s\n", f.Level, f.What)
	}
	for _, cc := range rep.Conversations {
		for _, f := range cc.Findings {
			fmt.Fprintf(&b, "%s: %s\n", f.Level, f.What)
		}
	}
	return b.String(), rep.Problems
}

// Two whole records swapped by hand are both their turns' records: a
// rebuild serves both, as a start does, and check finds nothing wrong.
func TestRebuildTakesSwappedRecords(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", chat(20, t0))
	want := readable(t, s, "c")
	path := s.logPath("c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	editFile(t, path, func(data []byte) []byte {
		lo8, hi8 := logLine(t, data, 8)
		lo9, hi9 := logLine(t, data, 9)
		out := append([]byte{}, data[:lo8]...)
		out = append(out, data[lo9:hi9+1]...)
		out = append(out, data[lo8:hi8+1]...)
		return append(out, data[hi9+1:]...)
	})
	for _, stage := range []string{"start", "rebuild"} {
		if stage == "rebuild" {
			if err := Rebuild(ctx, Options{Dir: dir}, nil); err != nil {
				t.Fatal(err)
			}
		}
		s = openTest(t, Options{Dir: dir})
		got := readable(t, s, "c")
		if !maps.Equal(got, want) || damaged(t, s, "c") != 0 {
			t.Fatalf("after a %s: %d readable turns (t8 %q, t9 %q), %d damaged; want the 20 as stored", stage, len(got), got[8], got[9], damaged(t, s, "c"))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if text, problems := checkText(t, dir); problems != 0 || strings.Contains(text, "rebuild") {
			t.Errorf("check after a %s: %d problem(s):\n%s", stage, problems, text)
		}
	}
}

// Whole records in a log edited outside vc-mcp are each their turn's
// record, for a start and a rebuild alike, and the next message gets the
// next id: a last record that lost only its newline (an editor that saves
// without one, a copy cut by a byte; the newline is put back and check
// says so), CRLF line ends (git's autocrlf, a Windows editor), spaces
// after a record, two records that lost the newline between them.
func TestRecordsWithOtherLineEnds(t *testing.T) {
	edits := map[string]func(t *testing.T, data []byte) []byte{
		"final newline lost": func(_ *testing.T, data []byte) []byte { return data[:len(data)-1] },
		"crlf":               func(_ *testing.T, data []byte) []byte { return bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n")) },
		"trailing spaces": func(_ *testing.T, data []byte) []byte {
			return bytes.ReplaceAll(data, []byte("]\n"), []byte("]  \t\n"))
		},
		"two records joined": func(t *testing.T, data []byte) []byte {
			_, hi := logLine(t, data, 3)
			return append(data[:hi:hi], data[hi+1:]...)
		},
		"last two joined": func(t *testing.T, data []byte) []byte {
			_, hi := logLine(t, data, 5)
			return append(data[:hi:hi], data[hi+1:]...)
		},
	}
	for name, edit := range edits {
		for _, via := range []string{"start", "rebuild"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				dir := t.TempDir()
				s := openTest(t, Options{Dir: dir})
				ingest(t, s, "c", chat(6, t0))
				want := readable(t, s, "c")
				path := s.logPath("c")
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				editFile(t, path, func(data []byte) []byte { return edit(t, data) })
				edited, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				text, problems := checkText(t, dir)
				if problems != 0 {
					t.Errorf("check: %d problem(s):\n%s", problems, text)
				}
				unterminated := edited[len(edited)-1] != '\n'
				if unterminated && !strings.Contains(text, "lost its newline") {
					t.Errorf("check does not say the last record lost its newline:\n%s", text)
				}
				if via == "rebuild" {
					if err := Rebuild(context.Background(), Options{Dir: dir}, nil); err != nil {
						t.Fatal(err)
					}
				}
				s = openTest(t, Options{Dir: dir})
				if got := readable(t, s, "c"); !maps.Equal(got, want) || damaged(t, s, "c") != 0 {
					t.Fatalf("%d readable turns, %d damaged; want the 6 as stored", len(got), damaged(t, s, "c"))
				}
				if now, err := os.ReadFile(path); unterminated && (err != nil || !bytes.Equal(now, append(edited, '\n'))) {
					t.Fatalf("the log is %d bytes (%d edited) and ends in %q; want its newline back and nothing else changed: %v", len(now), len(edited), now[len(now)-1:], err)
				}
				res := ingest(t, s, "c", []Message{msg("user", "Ana", "after the edit", t0.Add(time.Hour))})
				if len(res.TurnIDs) != 1 || res.TurnIDs[0] != "t7" {
					t.Fatalf("new turn ids %v, want [t7]", res.TurnIDs)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = openTest(t, Options{Dir: dir})
				if got := readable(t, s, "c"); len(got) != 7 {
					t.Fatalf("after a restart %d readable turns, want 7", len(got))
				}
			})
		}
	}
}

// A log cut short before any start dealt with it keeps the turns it lost
// as damaged placeholders, after a rebuild as after a start: their ids are
// never given again, and check keeps saying they are lost. The rebuild
// reads how many turns the old vc.db committed; with vc.db gone too, the
// decisions log still names the turns that were stored.
func TestCutLogKeepsTurnIDs(t *testing.T) {
	tests := []struct {
		name    string
		keep    int  // the records left of 20
		dropDB  bool // vc.db deleted too
		rebuild bool
	}{
		{"rebuild", 4, false, true},
		{"vc.db gone, start", 12, true, false},
		{"vc.db gone, rebuild", 12, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			s := openTest(t, Options{Dir: dir})
			ingest(t, s, "c", chat(20, t0))
			path := s.logPath("c")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			editFile(t, path, func(data []byte) []byte {
				lo, _ := logLine(t, data, tt.keep+1)
				return data[:lo]
			})
			if tt.dropDB {
				if err := os.Remove(filepath.Join(dir, dbFile)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.rebuild {
				if err := Rebuild(ctx, Options{Dir: dir}, nil); err != nil {
					t.Fatal(err)
				}
			}
			s = openTest(t, Options{Dir: dir})
			lost := 20 - tt.keep
			if got := readable(t, s, "c"); len(got) != tt.keep || damaged(t, s, "c") != lost {
				t.Fatalf("%d readable turns, %d damaged; want %d and %d placeholders", len(got), damaged(t, s, "c"), tt.keep, lost)
			}
			res := ingest(t, s, "c", []Message{msg("user", "Ana", "after the cut", t0.Add(time.Hour))})
			if len(res.TurnIDs) != 1 || res.TurnIDs[0] != "t21" {
				t.Fatalf("new turn ids %v, want [t21] (t%d-t20 were acknowledged; their ids are not reused)", res.TurnIDs, tt.keep+1)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if text, _ := checkText(t, dir); !strings.Contains(text, fmt.Sprintf("%d turn(s) are damaged placeholders", lost)) {
				t.Errorf("check afterwards does not list the lost turns:\n%s", text)
			}
		})
	}
}
