package memory

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/requestlog"
)

// flushRequests writes every history's queued records.
func (s *Store) flushRequests() error {
	var errs []error
	s.reqs.Range(func(_, v any) bool {
		errs = append(errs, v.(*requestlog.History).Flush())
		return true
	})
	return errors.Join(errs...)
}

func appendN(t *testing.T, s *Store, conv string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		rec := &RequestRecord{ConversationID: conv, Budget: 1000 + i, Memory: RequestMemory{TurnIDs: []string{"t1", "t2"}}}
		if err := s.appendRequest(rec, s.logRewrites.Load()); err != nil {
			t.Fatal(err)
		}
	}
	// The history writer appends in the background: the file is read
	// directly below.
	if err := s.flushRequests(); err != nil {
		t.Fatal(err)
	}
}

// historyMembers counts the gzip members of the history at path, and the
// request records in them; every member must be whole.
func historyMembers(t testing.TB, path string) (members, records int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	br := bytes.NewReader(data)
	var zr gzip.Reader
	for br.Len() > 0 {
		if err := zr.Reset(br); err != nil {
			t.Fatalf("member %d: %v", members+1, err)
		}
		zr.Multistream(false)
		body, err := io.ReadAll(&zr)
		if err != nil {
			t.Fatalf("member %d: %v", members+1, err)
		}
		members++
		for line := range bytes.SplitSeq(body, []byte{'\n'}) {
			var r RequestRecord
			if len(line) > 0 && json.Unmarshal(line, &r) == nil && r.Seq > 0 {
				records++
			}
		}
	}
	return members, records
}

func requestSeqs(t *testing.T, s *Store, conv string) []int {
	t.Helper()
	recs, err := s.Requests(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, r := range recs {
		out = append(out, r.Seq)
	}
	return out
}

// TestRequestHistoryIsGzipJSONLines: the file is read by a plain gzip
// reader (what zcat does) as one JSON object a line.
func TestRequestHistoryIsGzipJSONLines(t *testing.T) {
	s := openTest(t, Options{})
	appendN(t, s, "c", 5)
	f, err := os.Open(s.requestsPath("c"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f) // multistream: every member in turn
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var r RequestRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		n++
		if r.Seq != n || r.Budget != 1000+n-1 {
			t.Fatalf("line %d: %+v", n, r)
		}
	}
	if err := sc.Err(); err != nil || n != 5 {
		t.Fatalf("read %d lines, err %v; want 5", n, err)
	}
}

// TestPlainRequestHistoryMovesIn: a history written as plain JSON lines by
// an earlier version is read, moved into the compressed file, and removed.
func TestPlainRequestHistoryMovesIn(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	legacy := writePlainHistory(t, dir, "c", 3, 0, "not json\n")
	if got := requestSeqs(t, s, "c"); len(got) != 3 || got[0] != 3 {
		t.Fatalf("records %v, want [3 2 1]", got)
	}
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Fatalf("the plain history is still there: %v", err)
	}
	appendN(t, s, "c", 1)
	if got := requestSeqs(t, s, "c"); len(got) != 4 || got[0] != 4 {
		t.Fatalf("after one more: %v, want [4 3 2 1]", got)
	}
}

// TestPlainRequestHistoryMoveCutShort: a move that wrote the compressed
// file but did not remove the plain one is finished without duplicates.
func TestPlainRequestHistoryMoveCutShort(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	appendN(t, s, "c", 3)                                // the compressed file, records 1-3
	legacy := writePlainHistory(t, dir, "c", 3, 999, "") // the same records, left behind in plain form
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	if got := requestSeqs(t, s, "c"); len(got) != 3 || got[0] != 3 || got[2] != 1 {
		t.Fatalf("records %v, want [3 2 1] once each", got)
	}
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Fatalf("the plain history is still there: %v", err)
	}
}

// writePlainHistory writes conv's request history as an earlier version
// did (plain JSON lines): records 1..n with budget base+seq, then extra.
// It returns the file's path.
func writePlainHistory(t *testing.T, dir, conv string, n, base int, extra string) string {
	t.Helper()
	path := filepath.Join(dir, requestsDir, fileName(conv)+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	var lines []byte
	for i := 1; i <= n; i++ {
		b, _ := json.Marshal(RequestRecord{ID: "r", Seq: i, ConversationID: conv, Budget: base + i})
		lines = append(append(lines, b...), '\n')
	}
	if err := os.WriteFile(path, append(lines, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestQueuedRequestRecordsAreReadAndKept: a recall's record is queued for
// the history writer, yet a read right after the recall finds it, and
// Close writes whatever is still queued.
func TestQueuedRequestRecordsAreReadAndKept(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: []Message{msg("user", "", "the deploy uses blue-green switching", time.Time{})}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		res, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "how do we deploy?"})
		if err != nil {
			t.Fatal(err)
		}
		if want := "r" + strconv.Itoa(i+1); res.RequestID != want {
			t.Fatalf("recall %d: request id %q, want %q", i+1, res.RequestID, want)
		}
		if i%5 == 0 {
			if got := requestSeqs(t, s, "c"); len(got) != i+1 || got[0] != i+1 {
				t.Fatalf("after recall %d: records %v", i+1, got)
			}
		}
	}
	for i := 0; i < 7; i++ {
		if err := s.appendRequest(&RequestRecord{ConversationID: "c", Budget: i}, s.logRewrites.Load()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	if got := requestSeqs(t, s, "c"); len(got) != 27 || got[0] != 27 || got[26] != 1 {
		t.Fatalf("after reopening: records %v, want 27 down to 1", got)
	}
}

// TestRequestHistoryUnderConcurrentRecalls: recalls number and queue their
// records while the writer encodes and appends earlier ones and readers
// read the history; every record is written once, in numbering order, and
// a reader never sees a gap (run with -race).
func TestRequestHistoryUnderConcurrentRecalls(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: t.TempDir()})
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: []Message{msg("user", "", "the deploy uses blue-green switching", time.Time{})}}); err != nil {
		t.Fatal(err)
	}
	const callers, each = 4, 40
	ids := make(chan string, callers*each)
	errs := make(chan error, callers+1)
	done, stop := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				res, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "how do we deploy?"})
				if err != nil {
					errs <- err
					return
				}
				ids <- res.RequestID
			}
		}()
	}
	go func() {
		defer close(done)
		for {
			last := false
			select {
			case <-stop:
				last = true
			default:
			}
			recs, err := s.Requests(ctx, "c")
			if err != nil {
				errs <- err
				return
			}
			for i := 1; i < len(recs); i++ {
				if recs[i].Seq != recs[i-1].Seq-1 {
					errs <- fmt.Errorf("a reader saw records %d then %d", recs[i-1].Seq, recs[i].Seq)
					return
				}
			}
			if last {
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("request id %s given twice", id)
		}
		seen[id] = true
	}
	got := requestSeqs(t, s, "c")
	if len(got) != callers*each || got[0] != callers*each || got[len(got)-1] != 1 {
		t.Fatalf("history holds %d records (%v ...), want %d down to 1", len(got), got[:min(5, len(got))], callers*each)
	}
}

// TestRecallDoesNotWaitForTheHistoryFile: a history writer stuck on the
// disk (here: in its write, holding the history's file lock) does not
// hold up a recall, which only numbers and queues its record; the record
// is written once the file is free.
func TestRecallDoesNotWaitForTheHistoryFile(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: t.TempDir()})
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: []Message{msg("user", "", "the deploy uses blue-green switching", time.Time{})}}); err != nil {
		t.Fatal(err)
	}
	// The writer sticks in its write of the first recall's record.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	requestlog.SetWriteHook(func(string) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return nil
	})
	t.Cleanup(func() { requestlog.SetWriteHook(nil) })
	if _, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "how do we deploy?"}); err != nil {
		close(release)
		t.Fatal(err)
	}
	<-entered
	done := make(chan error, 1)
	go func() {
		res, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "how do we deploy?"})
		if err == nil && res.RequestID != "r2" {
			err = fmt.Errorf("request id %q, want r2", res.RequestID)
		}
		done <- err
	}()
	select {
	case err := <-done:
		close(release)
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a recall waited for the request history's file")
	}
	if got := requestSeqs(t, s, "c"); len(got) != 2 || got[0] != 2 {
		t.Fatalf("history holds %v, want [2 1]", got)
	}
}

// TestARecallRacingAForgetIsNotRecorded: a recall that answered before a
// forget but queues its request record after the forget has scrubbed the
// history would bring the forgotten turn back into it; the record is
// dropped instead, and the recalls after the forget are recorded again.
func TestARecallRacingAForgetIsNotRecorded(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: t.TempDir()})
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: []Message{
		msg("user", "", "the Zephyr account PIN is 4417", time.Time{}),
		msg("assistant", "", "noted, the Zephyr account PIN", time.Time{}),
		msg("user", "", "the deploy uses blue-green switching", time.Time{}),
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recallRecordHook = nil })
	recallRecordHook = func() {
		recallRecordHook = nil
		if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", TurnIDs: []string{"t1"}}); err != nil {
			t.Error(err)
		}
	}
	res, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "what is the Zephyr account PIN?"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.TurnIDs, "t1") {
		t.Fatalf("the recall did not use t1 (turns %v): the test shows nothing", res.TurnIDs)
	}
	if res.RequestID != "" {
		t.Errorf("the racing recall was recorded as %s", res.RequestID)
	}
	after, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "what is the Zephyr account PIN?"})
	if err != nil {
		t.Fatal(err)
	}
	if after.RequestID == "" {
		t.Error("the recall after the forget was not recorded")
	}
	recs, err := s.Requests(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		ids := slices.Clone(r.Memory.TurnIDs)
		for _, in := range r.Memory.Included {
			ids = append(ids, in.ID)
		}
		if slices.Contains(ids, "t1") {
			t.Fatalf("request record %s names the forgotten turn t1: %+v", r.ID, r.Memory)
		}
	}
}

// TestForgetScrubsRecallsOverEveryConversation: recalls over every
// conversation (scope all) name turns as "<conversation>/t12", in the
// history of the conversation they were made from; a forget takes its
// turns out of every history, its own and the others', and leaves the
// other conversations' turns alone.
func TestForgetScrubsRecallsOverEveryConversation(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: t.TempDir()})
	for _, in := range []struct{ conv, text string }{
		{"a", "the deploy uses blue-green switching for the Zephyr service"},
		{"b", "the Zephyr account PIN is 4417"},
		{"c", "lunch on friday at the noodle bar"},
	} {
		if _, err := s.Ingest(ctx, IngestRequest{ConversationID: in.conv, Messages: []Message{msg("user", "", in.text, time.Time{})}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, from := range []string{"a", "b", "c"} {
		res, err := s.Recall(ctx, RecallRequest{ConversationID: from, Message: "what about Zephyr?", Scope: ScopeAll})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(res.TurnIDs, "b/t1") || !slices.Contains(res.TurnIDs, "a/t1") {
			t.Fatalf("a recall over every conversation from %s used %v: the test shows nothing", from, res.TurnIDs)
		}
	}
	// c's own recall names c's turn t1 unqualified: not b's.
	if _, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "where is lunch?"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "b", TurnIDs: []string{"t1"}}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"a", "b", "c"} {
		recs, err := s.Requests(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		var named []string
		for _, r := range recs {
			named = append(named, r.Memory.TurnIDs...)
			for _, in := range r.Memory.Included {
				named = append(named, in.ID)
			}
		}
		if slices.Contains(named, "b/t1") {
			t.Errorf("%s's request history still names b/t1: %v", h, named)
		}
		if !slices.Contains(named, "a/t1") {
			t.Errorf("%s's request history lost a/t1, which was not forgotten: %v", h, named)
		}
		if h == "c" && !slices.Contains(named, "t1") {
			t.Errorf("c's request history lost its own t1: %v", named)
		}
	}
}

// TestForgetFindsScopeAllRecordsOfAnEarlierVersion: histories written
// before the scope-all markers were are looked through once, by the first
// forget, and those holding such records are marked and scrubbed.
func TestForgetFindsScopeAllRecordsOfAnEarlierVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	for _, in := range []struct{ conv, text string }{
		{"a", "the deploy uses blue-green switching for the Zephyr service"},
		{"b", "the Zephyr account PIN is 4417"},
	} {
		if _, err := s.Ingest(ctx, IngestRequest{ConversationID: in.conv, Messages: []Message{msg("user", "", in.text, time.Time{})}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Recall(ctx, RecallRequest{ConversationID: "a", Message: "what about Zephyr?", Scope: ScopeAll}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What an earlier version left: the history, no marker, no flag.
	reqs := filepath.Join(dir, requestsDir)
	for _, name := range []string{fileName("a") + requestlog.MarkerExt, requestlog.MarkersMade} {
		if err := os.Remove(filepath.Join(reqs, name)); err != nil {
			t.Fatal(err)
		}
	}
	s = openTest(t, Options{Dir: dir})
	if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "b", TurnIDs: []string{"t1"}}); err != nil {
		t.Fatal(err)
	}
	recs, err := s.Requests(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || slices.Contains(recs[0].Memory.TurnIDs, "b/t1") || !slices.Contains(recs[0].Memory.TurnIDs, "a/t1") {
		t.Fatalf("a's history after the forget: %+v", recs)
	}
	for _, name := range []string{fileName("a") + requestlog.MarkerExt, requestlog.MarkersMade} {
		if _, err := os.Stat(filepath.Join(reqs, name)); err != nil {
			t.Errorf("after the first forget: %v", err)
		}
	}
}

// TestRequestRecordSurvivesAFailedWrite: a recall's record whose write
// fails (a full disk) keeps its id, is read meanwhile, and reaches the
// history once the disk takes it again (here at Close, its last try),
// before the next recall's and once; the recalls are unaffected.
func TestRequestRecordSurvivesAFailedWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: []Message{msg("user", "", "the deploy uses blue-green switching", time.Time{})}}); err != nil {
		t.Fatal(err)
	}
	recall := func(want string) {
		t.Helper()
		res, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "how do we deploy?"})
		if err != nil || res.RequestID != want {
			t.Fatalf("recall: request id %q, %v; want %q", res.RequestID, err, want)
		}
	}
	recall("r1")
	if err := s.flushRequests(); err != nil {
		t.Fatal(err)
	}
	var full atomic.Bool
	requestlog.SetWriteHook(func(string) error {
		if full.Load() {
			return syscall.ENOSPC
		}
		return nil
	})
	t.Cleanup(func() { requestlog.SetWriteHook(nil) })
	full.Store(true)
	recall("r2")
	if err := s.flushRequests(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing the history on a full disk: %v, want ENOSPC", err)
	}
	if got := requestSeqs(t, s, "c"); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("read on a full disk: %v, want [2 1]", got)
	}
	if members, _ := historyMembers(t, s.requestsPath("c")); members != 1 {
		t.Fatalf("the file holds %d records on a full disk, want 1", members)
	}
	full.Store(false)
	if err := s.Close(); err != nil { // the last try: it writes r2
		t.Fatal(err)
	}
	if members, records := historyMembers(t, s.requestsPath("c")); members != 2 || records != 2 {
		t.Fatalf("the file holds %d records in %d members after Close, want 2", records, members)
	}
	s = openTest(t, Options{Dir: dir})
	recall("r3")
	if got := requestSeqs(t, s, "c"); !slices.Equal(got, []int{3, 2, 1}) {
		t.Fatalf("after the fault: %v, want [3 2 1]", got)
	}
	if err := s.flushRequests(); err != nil {
		t.Fatal(err)
	}
	if members, records := historyMembers(t, s.requestsPath("c")); members != 3 || records != 3 {
		t.Fatalf("the file holds %d records in %d members, want 3", records, members)
	}
}

// TestScopeAllMarkerGoesWithItsLastRecord: once the trim of a history
// drops its last record of a recall over every conversation, its marker
// goes too, and a forget no longer looks through it; a new such record
// marks it again.
func TestScopeAllMarkerGoesWithItsLastRecord(t *testing.T) {
	s := openTest(t, Options{Dir: t.TempDir()})
	all := func() {
		t.Helper()
		if err := s.appendRequest(&RequestRecord{ConversationID: "a", Scope: ScopeAll, Memory: RequestMemory{TurnIDs: []string{"b/t1"}}}, s.logRewrites.Load()); err != nil {
			t.Fatal(err)
		}
	}
	marked := func() []string {
		t.Helper()
		ids, err := s.scopeAllHistories()
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	all()
	if got := marked(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("histories with scope-all records: %v, want [a]", got)
	}
	appendN(t, s, "a", RequestRetention+RequestRetention/2) // trimmed: the scope-all record goes
	if got := marked(); len(got) != 0 {
		t.Fatalf("histories with scope-all records after the trim: %v, want none", got)
	}
	all()
	if got := marked(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("histories with scope-all records after a new one: %v, want [a]", got)
	}
}

// TestForgetScrubsAHistoryItCannotAppendTo: a forget scrubs the request
// history of the turns it forgets even while appending to that history
// fails (a full disk): the records waiting for the disk are dropped, and
// the scrub, which writes a new file and renames it over the old, is not
// skipped. Before, the failed append made the forget leave the forgotten
// turn's id in the history.
func TestForgetScrubsAHistoryItCannotAppendTo(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: t.TempDir()})
	ingest(t, s, "b", []Message{
		msg("user", "", "the vault passphrase hint is the heron by the mill pond", time.Time{}),
		msg("assistant", "", "noted: a heron by the mill pond", time.Time{}),
	})
	if _, err := s.Recall(ctx, RecallRequest{ConversationID: "b", Message: "what is the vault hint?"}); err != nil {
		t.Fatal(err)
	}
	if err := s.flushRequests(); err != nil {
		t.Fatal(err)
	}
	requestlog.SetWriteHook(func(string) error { return syscall.ENOSPC })
	t.Cleanup(func() { requestlog.SetWriteHook(nil) })
	if _, err := s.Recall(ctx, RecallRequest{ConversationID: "b", Message: "the heron?"}); err != nil {
		t.Fatal(err)
	}
	naming := func() []string {
		t.Helper()
		recs, err := s.readRequestHistory("b")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range recs {
			if slices.Contains(r.Memory.TurnIDs, "t1") {
				ids = append(ids, r.ID)
			}
		}
		return ids
	}
	if got := naming(); len(got) != 2 {
		t.Fatalf("before the forget, requests %v name t1; want both", got)
	}
	if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "b", TurnIDs: []string{"t1"}}); err != nil {
		t.Fatal(err)
	}
	if got := naming(); len(got) > 0 {
		t.Fatalf("requests %v still name the forgotten t1", got)
	}
}
