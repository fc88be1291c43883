package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/files"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// Ingest, recall, expand, collapse, aliases, find_quote, status, the
// request history and forced compaction run together
// while Close is called: Close waits for them and nothing hangs (the test
// binary's -timeout is the hang detector; the deadline below only turns a
// hang into a readable failure). Before the lock order was fixed, four
// ingesting goroutines and Close deadlocked on the first try.
func TestCloseUnderLoad(t *testing.T) {
	for round := 0; round < 2; round++ {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) {
			s, err := Open(context.Background(), Options{Dir: t.TempDir(), ProtectedTurns: 2, ContextWindow: 4000, ContextItems: testItems()})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ingest(t, s, "c", chat(24, t0))
			st, err := s.Status(ctx, "c")
			if err != nil || len(st.Tags) == 0 {
				t.Fatalf("status: %v %+v", err, st)
			}
			tag := st.Tags[0].Tag

			var started sync.WaitGroup
			var wg sync.WaitGroup
			var n atomic.Int64
			errs := make(chan error, 64)
			worker := func(name string, fn func(i int) error) {
				started.Add(1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					first := true
					for i := 0; ; i++ {
						err := fn(i)
						if first {
							started.Done()
							first = false
						}
						if errors.Is(err, ErrClosed) {
							return
						}
						if err != nil {
							errs <- fmt.Errorf("%s: %w", name, err)
							return
						}
						n.Add(1)
					}
				}()
			}
			for w := 0; w < 4; w++ {
				worker(fmt.Sprint("ingest", w), func(i int) error {
					_, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: []Message{
						msg("user", "Ana", fmt.Sprintf("writer %d says the Kyoto ryokan costs %d yen", w, i), time.Time{}),
					}})
					return err
				})
			}
			worker("compact", func(i int) error {
				_, err := s.Ingest(ctx, IngestRequest{ConversationID: fmt.Sprint("c"), Force: true, Messages: []Message{
					msg("assistant", "Bot", fmt.Sprintf("compaction round %d about the Postgres migration", i), time.Time{}),
				}})
				return err
			})
			worker("recall", func(int) error {
				_, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "what does the ryokan cost?", MaxTokens: 300})
				return err
			})
			worker("expand", func(int) error {
				_, err := s.Expand(ctx, ExpandRequest{ConversationID: "c", Tag: tag, Depth: DepthFull})
				return err
			})
			worker("find_quote", func(int) error {
				_, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "c", Query: "Kyoto ryokan"})
				return err
			})
			worker("collapse", func(int) error {
				_, err := s.Collapse(ctx, CollapseRequest{ConversationID: "c", Tag: tag, Depth: DepthSummary})
				return err
			})
			worker("alias", func(i int) error {
				_, err := s.AddAlias(ctx, "c", fmt.Sprintf("other name %d", i), tag)
				return err
			})
			worker("regenerate", func(int) error {
				_, err := s.RegenerateSummaries(ctx, RegenerateRequest{ConversationID: "c", Tag: tag})
				return err
			})
			worker("context items", func(i int) error {
				var err error
				if i%2 == 0 {
					_, err = s.AddContextItem(ctx, "c", "review")
				} else {
					_, err = s.RemoveContextItem(ctx, "c", "review")
				}
				return err
			})
			worker("status and history", func(int) error {
				if _, err := s.Status(ctx, "c"); err != nil {
					return err
				}
				_, err := s.Requests(ctx, "c")
				return err
			})
			worker("recall all", func(int) error {
				_, err := s.Recall(ctx, RecallRequest{Scope: ScopeAll, Message: "Postgres", MaxTokens: 300})
				return err
			})
			started.Wait() // every kind of call has run at least once
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("operations did not end after Close: deadlock")
			}
			if err := <-closed; err != nil {
				t.Fatalf("Close: %v", err)
			}
			close(errs)
			for err := range errs {
				t.Errorf("an operation failed other than with ErrClosed: %v", err)
			}
			if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: chat(1, t0)}); !errors.Is(err, ErrClosed) {
				t.Fatalf("Ingest after Close: %v, want ErrClosed", err)
			}
			// Everything acknowledged is there after a reopen.
			s2 := openTest(t, Options{Dir: s.opts.Dir})
			if got := readable(t, s2, "c"); len(got) < 24 {
				t.Fatalf("%d turns after reopen", len(got))
			}
		})
	}
}

// scope "all" over 1,000 conversations (250 under the race detector, still
// far above the cap) with a cap of 16 loaded: the table never holds more
// than the cap once the call is over, no more log files stay open, and the
// answer still comes from the right conversation.
func TestScopeAllBoundedOpenConversations(t *testing.T) {
	convs, limit := 1000, 16
	if raceEnabled {
		convs = 250
	}
	dir := t.TempDir()
	// Write the logs directly (a thousand Ingest calls cost a fsync'd
	// commit each); the store replays them as logs written before a crash.
	if err := os.MkdirAll(filepath.Join(dir, logsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < convs; i++ {
		word := fmt.Sprintf("zebra%04d", i)
		rec := recordFrom(1, mustNorm(t, msg("user", "Ana", "the password for the "+word+" vault is stored offline", t0)), t0)
		line, err := masterlog.Encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, logsDir, fileName(fmt.Sprintf("Conv-%04d", i))+logExt), append(line, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := openTest(t, Options{Dir: dir, MaxOpenConversations: limit, noSync: true})
	if n := loadedCount(s); n > limit {
		t.Fatalf("%d conversations loaded after open, cap %d", n, limit)
	}
	res, err := s.Recall(context.Background(), RecallRequest{Scope: ScopeAll, Message: "where is the zebra0177 vault password?", MaxTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "zebra0177") {
		t.Fatalf("scope all did not find the conversation's turn:\n%s", res.Text)
	}
	fq, err := s.FindQuote(context.Background(), FindQuoteRequest{Scope: ScopeAll, Query: "zebra0123"})
	if err != nil || len(fq.Quotes) == 0 || fq.Quotes[0].ConversationID != "Conv-0123" {
		t.Fatalf("find_quote scope all: %v %+v", err, fq.Quotes)
	}
	if n := loadedCount(s); n > limit {
		t.Fatalf("%d conversations loaded after scope all, cap %d", n, limit)
	}
	if fds, ok := openLogFiles(dir); ok && fds > limit {
		t.Fatalf("%d master logs open, cap %d", fds, limit)
	}
	list, err := s.Conversations(context.Background())
	if err != nil || len(list) != convs {
		t.Fatalf("Conversations: %v, %d listed", err, len(list))
	}
}

func loadedCount(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.convs)
}

// openLogFiles counts this process's open files under dir/logs, where the
// system says (Linux /proc).
func openLogFiles(dir string) (int, bool) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	n := 0
	prefix := filepath.Join(dir, logsDir)
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n, true
}

// blockingTagger holds up tagging for one conversation until released.
type blockingTagger struct {
	Tagger
	conv    string
	entered chan struct{}
	release chan struct{}
}

func (b *blockingTagger) Tag(ctx context.Context, in tagging.Input) (tagging.Result, error) {
	if in.ConversationID == b.conv {
		select {
		case b.entered <- struct{}{}:
		default:
		}
		<-b.release
	}
	return b.Tagger.Tag(ctx, in)
}

// One slow conversation load (here: replaying a log whose tagging waits)
// does not hold up loading any other conversation.
func TestSlowLoadBlocksNoOther(t *testing.T) {
	dir := t.TempDir()
	bt := &blockingTagger{Tagger: tagging.NewKeyword(nil), conv: "slow", entered: make(chan struct{}, 1), release: make(chan struct{})}
	s := openTest(t, Options{Dir: dir, Tagger: bt})
	// Logs the store has not seen yet: loading them replays (and tags) them.
	for _, id := range []string{"slow", "fast"} {
		line, err := masterlog.Encode(recordFrom(1, mustNorm(t, msg("user", "Ana", "hello from "+id, t0)), t0))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.logPath(id), append(line, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	slowDone := make(chan error, 1)
	go func() {
		_, err := s.Status(context.Background(), "slow")
		slowDone <- err
	}()
	<-bt.entered // "slow" is loading, and stuck
	fastDone := make(chan error, 1)
	go func() {
		_, err := s.FindQuote(context.Background(), FindQuoteRequest{ConversationID: "fast", Query: "hello"})
		fastDone <- err
	}()
	select {
	case err := <-fastDone:
		if err != nil {
			t.Fatalf("fast: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("loading one conversation waited for another's load")
	}
	close(bt.release)
	if err := <-slowDone; err != nil {
		t.Fatalf("slow: %v", err)
	}
}

// TestReadsDoNotWaitForAWritersDisk: while an ingest is inside its master
// log write (held there, as a slow disk would hold it), recall, find_quote
// and status answer; the new turn is searchable and recalled once the
// write is done.
func TestReadsDoNotWaitForAWritersDisk(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	ingest(t, s, "c", chat(20, t0))
	entered, release := holdLogWrite(t, func(string) bool { return true })
	wrote := make(chan error, 1)
	go func() {
		_, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: []Message{msg("user", "", "The canary release goes out on Thursday.", t0.Add(time.Hour))}})
		wrote <- err
	}()
	<-entered
	whileHeld(t, release, wrote, "a writer held in its log write", func() error {
		return readsAnswer(s, "c", "when does the canary release go out?", "canary release", nil)
	})
	q, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "c", Query: "canary release"})
	if err != nil || len(q.Quotes) == 0 {
		t.Fatalf("after the write: find_quote %+v, %v", q, err)
	}
	res, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "when does the canary release go out?"})
	if err != nil || !strings.Contains(res.Text, "canary release goes out on Thursday") || res.CatchingUp {
		t.Fatalf("after the write: recall catching up %v, %v:\n%s", res.CatchingUp, err, res.Text)
	}
}

// TestReadsDoNotWaitForADecisionWrite: while a summary regeneration and a
// context-item change are each held inside their decisions-log write,
// recall, find_quote and status answer, and the change is in place once
// the write is done.
func TestReadsDoNotWaitForADecisionWrite(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{ContextWindow: 1200, ProtectedTurns: 2, ContextItems: testItems()})
	ingest(t, s, "c", chat(60, t0))
	ingest(t, s, "c", longChat(8))
	if res, err := s.SummarizeTurns(ctx, TurnSummaryRequest{ConversationID: "c"}); err != nil || res.Summarised == 0 {
		t.Fatalf("summarise turns: %+v, %v", res, err)
	}
	for _, tc := range []struct {
		name  string
		write func() error
		check func() error
	}{
		{"summary regeneration", func() error {
			res, err := s.RegenerateSummaries(ctx, RegenerateRequest{ConversationID: "c"})
			if err == nil && res.Segments == 0 {
				err = errors.New("no segments regenerated")
			}
			return err
		}, func() error {
			st, err := s.Status(ctx, "c")
			if err == nil && st.Totals.Segments == 0 {
				err = errors.New("no segments after the regeneration")
			}
			return err
		}},
		{"context item", func() error {
			_, err := s.AddContextItem(ctx, "c", "review")
			return err
		}, func() error {
			r, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "who reviews the migration?"})
			if err == nil && !strings.Contains(r.Text, "second reviewer") {
				err = errors.New("the added item is not recalled")
			}
			return err
		}},
		{"clearing per-message summaries", func() error {
			n, err := s.ClearTurnSummaries(ctx, "c")
			if err == nil && n == 0 {
				err = errors.New("no per-message summaries cleared")
			}
			return err
		}, func() error {
			st, err := s.ContextStats(ctx, "c")
			if err == nil && st.Summarised != 0 {
				err = fmt.Errorf("%d per-message summaries left after the clear", st.Summarised)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered, release := holdLogWrite(t, func(path string) bool { return strings.Contains(filepath.ToSlash(path), "/decisions/") })
			wrote := make(chan error, 1)
			go func() { wrote <- tc.write() }()
			<-entered
			whileHeld(t, release, wrote, "a "+tc.name+" held in its decisions write", func() error {
				return readsAnswer(s, "c", "the Kyoto ryokan", "ryokan", nil)
			})
			files.WriteHook = nil
			if err := tc.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// readsAnswer runs recall, find_quote and status on conversation conv and
// returns the first error, or check's verdict on the recall and the quotes
// (check may be nil).
func readsAnswer(s *Store, conv, message, quote string, check func(RecallResult, FindQuoteResult) error) error {
	ctx := context.Background()
	r, err := s.Recall(ctx, RecallRequest{ConversationID: conv, Message: message})
	if err != nil {
		return err
	}
	q, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: conv, Query: quote})
	if err != nil {
		return err
	}
	if _, err := s.Status(ctx, conv); err != nil {
		return err
	}
	if check != nil {
		return check(r, q)
	}
	return nil
}

// whileHeld runs reads while a writer is held (until release is closed;
// wrote gets the writer's result), fails the test when they take over 10 s
// (they waited for it, what) or fail, and lets the writer finish either way.
func whileHeld(t *testing.T, release chan struct{}, wrote <-chan error, what string, reads func() error) {
	t.Helper()
	read := make(chan error, 1)
	go func() { read <- reads() }()
	var readErr error
	select {
	case readErr = <-read:
	case <-time.After(10 * time.Second):
		readErr = fmt.Errorf("recall, find_quote and status waited for %s", what)
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
}

// holdLogWrite holds the first log write whose path match accepts: entered
// is closed when it starts, and it goes on once release is closed.
func holdLogWrite(t *testing.T, match func(path string) bool) (entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	files.WriteHook = func(path string) error {
		if match(path) {
			once.Do(func() {
				close(entered)
				<-release
			})
		}
		return nil
	}
	t.Cleanup(func() { files.WriteHook = nil })
	return entered, release
}
