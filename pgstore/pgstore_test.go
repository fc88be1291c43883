package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/pgstore"
)

func text(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

// open opens a Store whose logs are in the database at url, with its own
// cache directory (one "process").
func open(t testing.TB, url, dir string, window int) *memory.Store {
	t.Helper()
	s, _ := openWith(t, url, memory.Options{Dir: dir, ContextWindow: window, ProtectedTurns: 2})
	return s
}

// twoProcesses opens two stores, each with a data directory of its own, on
// one new PostgreSQL database: two processes sharing a memory. They close
// when the test ends.
func twoProcesses(t testing.TB) (a, b *memory.Store) {
	t.Helper()
	url := pgtest.URL(t)
	a = open(t, url, t.TempDir(), 0)
	t.Cleanup(func() { a.Close() })
	b = open(t, url, t.TempDir(), 0)
	t.Cleanup(func() { b.Close() })
	return a, b
}

// openWith opens a store with opts on url's shared logs, and returns them.
func openWith(t testing.TB, url string, opts memory.Options) (*memory.Store, *pgstore.Store) {
	t.Helper()
	ctx := context.Background()
	logs, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	return openOn(t, logs, opts), logs
}

// openOn opens a store with opts on logs (a pgstore.Store or a wrapper).
func openOn(t testing.TB, logs memory.SharedLogs, opts memory.Options) *memory.Store {
	t.Helper()
	opts.Shared = logs
	s, err := memory.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ingest(t testing.TB, s *memory.Store, conv string, msgs ...string) memory.IngestResult {
	t.Helper()
	var ms []memory.Message
	for i, m := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		ms = append(ms, memory.Message{Role: role, Content: text(m)})
	}
	res, err := s.Ingest(context.Background(), memory.IngestRequest{ConversationID: conv, Messages: ms})
	if err != nil {
		t.Fatalf("ingest into %s: %v", conv, err)
	}
	return res
}

func TestTwoProcessesShareOneMemory(t *testing.T) {
	ctx := context.Background()
	a, b := twoProcesses(t)

	ingest(t, a, "team", "We picked PostgreSQL 15 for the shared memory.", "Noted: PostgreSQL 15, advisory locks per conversation.")
	q, err := b.FindQuote(ctx, memory.FindQuoteRequest{ConversationID: "team", Query: "advisory locks"})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Quotes) == 0 || q.Quotes[0].TurnID != "t2" {
		t.Fatalf("process B does not find what A stored: %+v", q)
	}
	ingest(t, b, "team", "The cache lives in each data directory.", "So recall ranking is the same code.")
	ra, err := a.Recall(ctx, memory.RecallRequest{ConversationID: "team", Message: "where does the cache live?"})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Recall(ctx, memory.RecallRequest{ConversationID: "team", Message: "where does the cache live?"})
	if err != nil {
		t.Fatal(err)
	}
	if ra.Text != rb.Text || !strings.Contains(ra.Text, "cache lives") {
		t.Fatalf("the two processes recall differently:\nA: %s\nB: %s", ra.Text, rb.Text)
	}
	sa, _ := a.Status(ctx, "team")
	sb, _ := b.Status(ctx, "team")
	if sa.Totals.Turns != 4 || sb.Totals.Turns != 4 {
		t.Fatalf("turns: A %d, B %d, want 4", sa.Totals.Turns, sb.Totals.Turns)
	}
	// A resend through the other process is recognised as one.
	if r := ingest(t, a, "team", "The cache lives in each data directory.", "So recall ranking is the same code."); r.Stored != 0 || r.Duplicates != 2 {
		t.Fatalf("resend through A stored %d, duplicates %d", r.Stored, r.Duplicates)
	}
	// A new conversation made by B is listed by A.
	ingest(t, b, "other", "A second space.")
	convs, err := a.Conversations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != 2 {
		t.Fatalf("A lists %d conversations, want 2: %+v", len(convs), convs)
	}
}

// TestConcurrentIngestAndRecall: two processes ingest and recall the same
// conversations at once, with a window small enough to compact often. Every
// message must be stored exactly once, and no turn compacted twice.
// VC_PG_STRESS_SECONDS sets the duration (default 3; the run is 60).
func TestConcurrentIngestAndRecall(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	secs := 3
	if v := os.Getenv("VC_PG_STRESS_SECONDS"); v != "" {
		secs, _ = strconv.Atoi(v)
	}
	procs := []*memory.Store{open(t, url, t.TempDir(), 400), open(t, url, t.TempDir(), 400)}
	convs := []string{"c1", "c2"}
	// Run for secs, and on a slow machine (the race detector, a loaded CI
	// runner) on until enough was ingested to compact both conversations
	// several times, within a bound.
	begin := time.Now()
	var wg sync.WaitGroup
	var sent sync.Map // message -> true
	var ingests, recalls, forgets, errs atomic.Int64
	running := func() bool {
		el := time.Since(begin)
		return el < time.Duration(secs)*time.Second || (ingests.Load() < 20 && el < 30*time.Second)
	}
	for p, s := range procs {
		for w := 0; w < 2; w++ {
			wg.Add(2)
			go func() { // writer
				defer wg.Done()
				for i := 0; running(); i++ {
					conv := convs[(i+w)%len(convs)]
					m := fmt.Sprintf("process %d writer %d message %d: the deployment of service %d failed at the database migration step, so we rolled back, paged the on-call engineer, wrote a postmortem about connection pool limits, and agreed to add a canary stage with automatic rollback before the next release of the billing and invoicing components", p, w, i, i%7)
					_, err := s.Ingest(ctx, memory.IngestRequest{ConversationID: conv, Messages: []memory.Message{{Role: "user", Content: text(m), ID: fmt.Sprintf("p%dw%di%d", p, w, i)}}})
					if err != nil {
						errs.Add(1)
						t.Errorf("ingest: %v", err)
						return
					}
					sent.Store(conv+"\x00"+m, true)
					ingests.Add(1)
				}
			}()
			go func() { // reader
				defer wg.Done()
				for i := 0; running(); i++ {
					if _, err := s.Recall(ctx, memory.RecallRequest{ConversationID: convs[i%len(convs)], Message: "deployment of service 3"}); err != nil && !strings.Contains(err.Error(), "no stored messages") {
						errs.Add(1)
						t.Errorf("recall: %v", err)
						return
					}
					recalls.Add(1)
					time.Sleep(20 * time.Millisecond) // leave the 2 CI cores to the writers too
				}
			}()
		}
	}
	// One forgetter per process: a note stored, then forgotten (a rewrite
	// of the whole conversation in PostgreSQL) while the others write and
	// read it. Notes are not acknowledged messages: they must be gone.
	for p, s := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; running(); i++ {
				conv := convs[i%len(convs)]
				word := fmt.Sprintf("zebranote%dx%d", p, i)
				if _, err := s.Ingest(ctx, memory.IngestRequest{ConversationID: conv, Messages: []memory.Message{{Role: "user", Content: text("ephemeral note " + word + ": delete me"), ID: "f" + word}}}); err != nil {
					errs.Add(1)
					t.Errorf("ingest a note: %v", err)
					return
				}
				res, err := s.Forget(ctx, memory.ForgetRequest{ConversationID: conv, Query: word})
				if err != nil || res.Forgotten != 1 {
					errs.Add(1)
					t.Errorf("forget a note: %+v, %v", res, err)
					return
				}
				forgets.Add(1)
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	for _, s := range procs {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%v: %d ingests, %d recalls, %d forgets, %d errors", time.Since(begin).Round(time.Millisecond), ingests.Load(), recalls.Load(), forgets.Load(), errs.Load())
	if forgets.Load() == 0 {
		t.Fatal("no forget ran: the test does not exercise rewrites under load")
	}

	// What the database holds: every acknowledged message once, no other.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	stored := map[string]int{}
	forgotten := 0
	rows, err := conn.Query(ctx, `SELECT conversation, line FROM vc_master_log ORDER BY conversation, seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var conv string
		var line []byte
		if err := rows.Scan(&conv, &line); err != nil {
			t.Fatal(err)
		}
		r, err := masterRecord(line)
		if err != nil {
			t.Fatalf("row of %s is not a master log record: %v", conv, err)
		}
		if r.Forgotten {
			forgotten++
			continue
		}
		stored[conv+"\x00"+r.Content]++
		if strings.Contains(r.Content, "ephemeral note") {
			t.Errorf("%s: a forgotten note is still in the master log: %q", conv, r.Content)
		}
	}
	rows.Close()
	lost, dup, acked := 0, 0, 0
	sent.Range(func(k, _ any) bool {
		acked++
		if stored[k.(string)] == 0 {
			lost++
			t.Errorf("acknowledged but not in the shared log: %.80q", strings.ReplaceAll(k.(string), "\x00", " / "))
		}
		return true
	})
	for k, n := range stored {
		if n > 1 {
			dup++
			t.Errorf("stored %d times: %q", n, k)
		}
	}
	if forgotten != int(forgets.Load()) {
		t.Errorf("%d placeholders of forgotten notes in the master logs, want %d (one per forget)", forgotten, forgets.Load())
	}
	if lost > 0 || dup > 0 || acked == 0 {
		t.Fatalf("%d acknowledged, %d lost, %d duplicated", acked, lost, dup)
	}

	// Compactions: each turn in at most one segment, segments contiguous.
	compactions := 0
	for _, conv := range convs {
		rows, err := conn.Query(ctx, `SELECT line FROM vc_decisions WHERE conversation = $1 ORDER BY seq`, conv)
		if err != nil {
			t.Fatal(err)
		}
		next := 1
		for rows.Next() {
			var line []byte
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			_, body, _ := strings.Cut(string(line), " ")
			var d struct {
				Kind     string `json:"kind"`
				Segments []struct {
					First, Last int
				} `json:"segments"`
			}
			if err := json.Unmarshal([]byte(body), &d); err != nil {
				t.Fatalf("decision of %s: %v", conv, err)
			}
			if d.Kind != "compact" {
				continue
			}
			compactions++
			for _, sg := range d.Segments {
				if sg.First != next {
					t.Errorf("%s: segment %d-%d, want it to start at %d (compacted twice or skipped)", conv, sg.First, sg.Last, next)
				}
				next = sg.Last + 1
			}
		}
		rows.Close()
	}
	t.Logf("%d acknowledged messages, %d compactions, 0 lost, 0 duplicated", acked, compactions)
	if compactions == 0 {
		t.Fatal("no compaction happened: the test does not exercise concurrent compaction")
	}

	// A third process, from an empty cache, agrees with the database.
	c := open(t, url, t.TempDir(), 400)
	defer c.Close()
	total := 0
	for _, conv := range convs {
		st, err := c.Status(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		total += st.Totals.Turns
	}
	if total != len(stored)+forgotten { // forgotten turns keep their numbers
		t.Fatalf("a new process sees %d turns, the database holds %d and %d placeholders", total, len(stored), forgotten)
	}
}

// TestMigrateRoundTrip: a local memory copied to PostgreSQL answers the same.
func TestMigrateRoundTrip(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	dir := t.TempDir()
	local, err := memory.Open(ctx, memory.Options{Dir: dir, ContextWindow: 1000, ProtectedTurns: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		ingest(t, local, "proj", fmt.Sprintf("Message %d: the invoice service %d needs a retry policy and a dead letter queue.", i, i%5),
			fmt.Sprintf("Answer %d: use exponential backoff for service %d.", i, i%5))
	}
	ingest(t, local, "notes", "Grocery list: eggs, flour.")
	want, err := local.Recall(ctx, memory.RecallRequest{ConversationID: "proj", Message: "retry policy for invoice service 3"})
	if err != nil {
		t.Fatal(err)
	}
	wantSt, _ := local.Status(ctx, "proj")
	if err := local.Close(); err != nil {
		t.Fatal(err)
	}
	if wantSt.Totals.Segments == 0 {
		t.Fatal("no compaction in the local memory: the round trip would not carry decisions")
	}
	logs, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	res, err := memory.MigrateToShared(ctx, dir, logs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Conversations != 2 {
		t.Fatalf("migrated %+v", res)
	}
	again, err := memory.MigrateToShared(ctx, dir, logs, nil)
	if err != nil || again.Skipped != 2 || again.Conversations != 0 {
		t.Fatalf("migrating again: %+v, %v (want both skipped)", again, err)
	}
	logs.Close()

	s := open(t, url, t.TempDir(), 1000)
	defer s.Close()
	got, err := s.Recall(ctx, memory.RecallRequest{ConversationID: "proj", Message: "retry policy for invoice service 3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	got, err = s.Recall(ctx, memory.RecallRequest{ConversationID: "proj", Message: "retry policy for invoice service 3"})
	if err != nil {
		t.Fatal(err)
	}
	gotSt, _ := s.Status(ctx, "proj")
	if got.Text != want.Text {
		t.Fatalf("recall differs after migration:\nlocal: %s\nshared: %s", want.Text, got.Text)
	}
	if gotSt.Totals.Turns != wantSt.Totals.Turns || gotSt.Totals.Segments != wantSt.Totals.Segments || gotSt.Totals.TagSummaries != wantSt.Totals.TagSummaries {
		t.Fatalf("status differs: local %+v, shared %+v", wantSt.Totals, gotSt.Totals)
	}
}

// TestLockWaitIsBounded: a conversation held by another writer gives a clear
// error after LockWait, and the holder's commit is what others then see.
func TestLockWaitIsBounded(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	a, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	held, err := a.Lock(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	old := pgstore.LockWait
	pgstore.LockWait = 300 * time.Millisecond
	defer func() { pgstore.LockWait = old }()
	if _, err := b.Lock(ctx, "busy"); err == nil || !strings.Contains(err.Error(), "being written by another vc-mcp process") {
		t.Fatalf("second writer: %v", err)
	}
	if err := held.Append(ctx, memory.LogLines{Master: [][]byte{[]byte("x\n")}}); err != nil {
		t.Fatal(err)
	}
	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.Lock(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Rollback(ctx)
	if h := s.Heads(); h.Master != 2 {
		t.Fatalf("heads after the holder's commit: %+v", h)
	}
	if _, err := b.Read(ctx, "busy", memory.LogHeads{Master: 1}); !errors.Is(err, memory.ErrLogMismatch) {
		t.Fatalf("reading from inside a line: %v, want ErrLogMismatch", err)
	}
}

// TestCacheNotMatchingIsRebuilt: a cache directory whose files are not a
// prefix of the database's logs (here: filled from another database) is
// emptied and rebuilt from the database when the store opens.
func TestCacheNotMatchingIsRebuilt(t *testing.T) {
	db1, db2 := pgtest.URL(t), pgtest.URL(t)
	ctx := context.Background()
	cache := t.TempDir()
	s1 := open(t, db1, cache, 0)
	ingest(t, s1, "c", "alpha: the first database's words.", "alpha again, and more alpha.")
	s1.Close()
	s2 := open(t, db2, t.TempDir(), 0)
	ingest(t, s2, "c", "beta: the second database's words.")
	s2.Close()

	s := open(t, db2, cache, 0)
	defer s.Close()
	st, err := s.Status(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.FindQuote(ctx, memory.FindQuoteRequest{ConversationID: "c", Query: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Turns != 1 || len(q.Quotes) != 0 {
		t.Fatalf("cache of db1 opened on db2: %d turns, %d alpha quotes; want db2's 1 turn and none", st.Totals.Turns, len(q.Quotes))
	}
	if r := ingest(t, s, "c", "gamma."); r.TurnIDs[0] != "t2" {
		t.Fatalf("next turn %v, want t2", r.TurnIDs)
	}
}

// TestRewriteIsAtomic: a rewrite (forget's) replaces both logs in one
// transaction; a reader sees the old lines or the new ones.
func TestRewriteIsAtomic(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, err := s.Lock(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	old := memory.LogLines{Master: [][]byte{[]byte("one\n"), []byte("two\n")}, Decisions: [][]byte{[]byte("d1\n")}}
	if err := sess.Append(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := sess.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err = s.Lock(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Rewrite(ctx, memory.LogLines{Master: [][]byte{[]byte("two\n")}, Decisions: [][]byte{[]byte("d1\n"), []byte("tombstone\n")}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(ctx, "r", memory.LogHeads{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Master) != 2 || len(got.Decisions) != 1 {
		t.Fatalf("before commit a reader sees %d/%d lines, want the old 2/1", len(got.Master), len(got.Decisions))
	}
	if err := sess.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Read(ctx, "r", memory.LogHeads{})
	h, _ := s.Heads(ctx, "r")
	if len(got.Master) != 1 || string(got.Master[0]) != "two\n" || len(got.Decisions) != 2 || h != (memory.LogHeads{Master: 4, Decisions: 13, Gen: 1}) {
		t.Fatalf("after the rewrite: %q %q, heads %+v", got.Master, got.Decisions, h)
	}
}

// logRecord is what TestConcurrentIngestAndRecall reads of a master log
// line.
type logRecord struct {
	Content   string `json:"content"`
	Forgotten bool   `json:"forgotten"`
}

// masterRecord reads a master log line: since format 4 a JSON array
// [4, seq, role, name, content, ts, at, {rare members}?, crc], before an
// object (memory/masterlog/doc.go).
func masterRecord(line []byte) (logRecord, error) {
	var r logRecord
	if len(line) == 0 || line[0] != '[' {
		return r, json.Unmarshal(line, &r)
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(line, &parts); err != nil {
		return r, err
	}
	if len(parts) != 8 && len(parts) != 9 {
		return r, fmt.Errorf("%d elements", len(parts))
	}
	if err := json.Unmarshal(parts[4], &r.Content); err != nil {
		return r, err
	}
	if len(parts) == 9 {
		var rare struct {
			Forgotten bool `json:"forgotten"`
		}
		if err := json.Unmarshal(parts[7], &rare); err != nil {
			return r, err
		}
		r.Forgotten = rare.Forgotten
	}
	return r, nil
}

// TestStartWhileAnotherWrites: processes start (and check the schema) on a
// database another process is writing to, compacting often, and
// processes start together on an empty one. Creating the tables inside the
// start-up check locked tables in use and could deadlock with the writer
// ("deadlock detected" ended a daemon's start in CI); none may fail.
func TestStartWhileAnotherWrites(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	starts := func(n int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				logs, err := pgstore.Open(ctx, url)
				if err != nil {
					errs <- err
					return
				}
				defer logs.Close()
				if _, err := logs.List(ctx); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	starts(4) // together, on an empty database

	w := open(t, url, t.TempDir(), 2000)
	defer w.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ingest(t, w, "busy", fmt.Sprintf("Message %d about the quarterly budget review and the deploy window.", i),
				fmt.Sprintf("Reply %d: the review moved to Friday.", i))
		}
	}()
	for range 5 {
		starts(3)
	}
	close(stop)
	<-done
}

// TestDamagedCacheRecordComesBackFromTheSharedStore: a record damaged in a
// process's copy of a shared master log is served as a placeholder, as
// in a local memory, but the shared store holds it whole: the cache is
// marked, and the next start fetches it again, turn and all.
func TestDamagedCacheRecordComesBackFromTheSharedStore(t *testing.T) {
	ctx := context.Background()
	url, dir := pgtest.URL(t), t.TempDir()
	s := open(t, url, dir, 0)
	ingest(t, s, "c", "The heron nests by the old mill pond.", "Noted: the heron and the mill pond.", "The kestrel hunts over the east field.", "Noted: the kestrel and the east field.")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "logs", "c.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	second := bytes.IndexByte(data, '\n') + 1
	copy(data[second+20:], "GARBAGE!")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	status := func(s *memory.Store) memory.Totals {
		t.Helper()
		st, err := s.Status(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		return st.Totals
	}
	s = open(t, url, dir, 0)
	if got := status(s); got.Turns != 4 || got.DamagedRecords != 1 {
		t.Fatalf("with the damaged copy: %+v; want 4 turns, one a placeholder", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, url, dir, 0)
	defer s.Close()
	if got := status(s); got.Turns != 4 || got.DamagedRecords != 0 {
		t.Fatalf("after the next start: %+v; want the 4 turns whole", got)
	}
	q, err := s.FindQuote(ctx, memory.FindQuoteRequest{ConversationID: "c", Query: "mill pond"})
	if err != nil || len(q.Quotes) < 2 {
		t.Fatalf("find_quote after the next start: %d quotes, %v; want the two turns that say it", len(q.Quotes), err)
	}
}
