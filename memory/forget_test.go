package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/vcdb"
)

// secretFact is the fact forgotten in these tests: a made-up word found
// nowhere else, so a byte search of the data directory is exact.
const secretFact = "My locker combination is quartzlynx 4417, keep it safe."

const secretWord = "quartzlynx"

// forgetFixture fills conversation "c" with compacted history holding
// secretFact early on, and returns the messages sent.
func forgetFixture(t *testing.T, s *Store) []Message {
	t.Helper()
	msgs := chat(80, t0)
	msgs[4] = msg("user", "Ana", secretFact, t0.Add(4*time.Minute))
	for i := 0; i < len(msgs); i += 10 {
		ingest(t, s, "c", msgs[i:i+10])
	}
	st, err := s.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Segments < 2 {
		t.Fatalf("setup: %d segments, want compacted history", st.Totals.Segments)
	}
	return msgs
}

// visible gathers what a client can see of conversation c: domain_status,
// every domain, recalls and quotes about the fact, every topic expanded in
// full, and the whole view.
func visible(t *testing.T, s *Store, conv string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	st, err := s.Status(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(st)
	b.Write(js)
	for _, ts := range st.Tags {
		d, err := s.Domain(ctx, conv, ts.Tag)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(d)
		b.Write(js)
		ex, err := s.Expand(ctx, ExpandRequest{ConversationID: conv, Tag: ts.Tag, Depth: DepthFull, MaxTokens: 20000})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(ex.Text)
	}
	for _, q := range []string{"locker combination", secretWord, "what is my locker code?", "keep it safe"} {
		r, err := s.Recall(ctx, RecallRequest{ConversationID: conv, Message: q, MaxTokens: 2000})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(r.Text) // (the JSON form echoes the query)
		fq, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: conv, Query: q})
		if err != nil {
			t.Fatal(err)
		}
		js, _ = json.Marshal(fq.Quotes)
		b.Write(js)
	}
	v, err := s.View(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	js, _ = json.Marshal(v)
	b.Write(js)
	return b.String()
}

// filesContaining lists the files under dir whose bytes contain word (in
// any case).
func filesContaining(t *testing.T, dir, word string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(bytes.ToLower(data), []byte(strings.ToLower(word))) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func turnTexts(t *testing.T, s *Store, conv string, n int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for seq := 1; seq <= n; seq++ {
		tr, err := s.Turn(context.Background(), conv, turnID(seq))
		if err != nil {
			out[turnID(seq)] = "error: " + err.Error()
			continue
		}
		out[turnID(seq)] = tr.Text
	}
	return out
}

func dirDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, sub := range []string{logsDir, decisionsDir} {
		entries, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[sub+"/"+e.Name()] = string(data)
		}
	}
	return out
}

func TestForgetCascades(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	opts := Options{Dir: dir, ContextWindow: 1200, ProtectedTurns: 2}
	s := openTest(t, opts)
	msgs := forgetFixture(t, s)
	if !strings.Contains(strings.ToLower(visible(t, s, "c")), secretWord) {
		t.Fatal("setup: the fact is not visible before forget")
	}
	before := turnTexts(t, s, "c", len(msgs))

	// Selectors are required and checked.
	if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "c"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("forget without a selector: %v, want ErrInvalid", err)
	}
	if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", TurnIDs: []string{"t999"}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("forget of a missing turn: %v, want ErrNotFound", err)
	}
	if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", Tag: "no-such-topic"}); err == nil {
		t.Fatal("forget of an unknown tag: no error")
	}

	// A dry run reports and changes nothing.
	digest := dirDigest(t, dir)
	dry, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", Query: "QUARTZLYNX 4417", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Forgotten != 1 || len(dry.TurnIDs) != 1 || dry.TurnIDs[0] != "t5" {
		t.Fatalf("dry run: %+v, want t5", dry)
	}
	if after := dirDigest(t, dir); len(after) != len(digest) {
		t.Fatal("dry run changed the logs")
	} else {
		for k, v := range digest {
			if after[k] != v {
				t.Fatalf("dry run changed %s", k)
			}
		}
	}
	if !strings.Contains(strings.ToLower(visible(t, s, "c")), secretWord) {
		t.Fatal("dry run forgot the fact")
	}

	dbInfo, err := os.Stat(filepath.Join(dir, dbFile))
	if err != nil {
		t.Fatal(err)
	}
	watch := s.Watch(ctx)
	res, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", Query: "quartzlynx"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Forgotten != 1 || res.TurnIDs[0] != "t5" || res.SummariesRemade == 0 {
		t.Fatalf("forget: %+v, want t5 with its summaries remade", res)
	}
	select {
	case ch := <-watch:
		if ch.Kind != ChangeForgotten || ch.ConversationID != "c" || len(ch.TurnIDs) != 1 || ch.TurnIDs[0] != "t5" {
			t.Fatalf("change published: %+v", ch)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no change published")
	}
	check := func(when string, s *Store) {
		t.Helper()
		if v := visible(t, s, "c"); strings.Contains(strings.ToLower(v), secretWord) {
			i := strings.Index(strings.ToLower(v), secretWord)
			t.Fatalf("%s: the forgotten fact is still visible: ...%s...", when, v[max(0, i-200):min(len(v), i+100)])
		}
		after := turnTexts(t, s, "c", len(msgs))
		for id, text := range before {
			if id == "t5" {
				if !strings.HasPrefix(after[id], "error: ") || !strings.Contains(after[id], "forgotten") {
					t.Fatalf("%s: turn t5 reads %q, want a 'forgotten' error", when, after[id])
				}
				continue
			}
			if after[id] != text {
				t.Fatalf("%s: turn %s changed: %q, want %q", when, id, after[id], text)
			}
		}
	}
	check("after forget", s)

	// Resending the whole history, or the fact alone, does not bring it back.
	for i := 0; i < len(msgs); i += 10 {
		r := ingest(t, s, "c", msgs[i:i+10])
		if r.Stored != 0 {
			t.Fatalf("resend stored %d turns", r.Stored)
		}
	}
	if r := ingest(t, s, "c", []Message{msgs[4]}); r.Stored != 0 {
		t.Fatalf("resending the forgotten message stored it again: %+v", r)
	}
	if r, err := s.Import(ctx, []ImportedConversation{{ID: "c", Messages: msgs}}, nil); err != nil || r.Stored != 0 {
		t.Fatalf("re-import after forget: %+v, %v; want nothing stored", r, err)
	}
	check("after resend", s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// vc.db was scrubbed in place, under its lock: a process waiting for
	// the lock gets this file, not an unlinked copy with the old bytes.
	if fi, err := os.Stat(filepath.Join(dir, dbFile)); err != nil || (vcdb.CompactsInPlace && !os.SameFile(dbInfo, fi)) {
		t.Errorf("vc.db after the forget's close: %v; it must keep its inode (its lock)", err)
	}
	if files := filesContaining(t, dir, secretWord); len(files) > 0 {
		for _, f := range files {
			data, _ := os.ReadFile(f)
			for _, line := range bytes.Split(data, []byte("\n")) {
				if i := bytes.Index(bytes.ToLower(line), []byte(secretWord)); i >= 0 {
					t.Logf("%s: ...%q...", filepath.Base(f), line[max(0, i-300):min(len(line), i+100)])
				}
			}
		}
		t.Fatalf("the forgotten fact is still on disk in %v", files)
	}

	// Reopened, then rebuilt from the logs alone.
	s2 := openTest(t, opts)
	if err := s2.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	check("after reopen", s2)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dbFile, indexDir} {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	s3 := openTest(t, opts)
	if err := s3.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	check("after rebuild", s3)
	if r := ingest(t, s3, "c", []Message{msgs[4]}); r.Stored != 0 {
		t.Fatalf("after rebuild, resending the forgotten message stored it again: %+v", r)
	}
}

// TestForgetUnderLoad: forget runs while other goroutines ingest, recall,
// search and compact the same conversation (-race); every acknowledged
// message is kept, the forgotten ones are gone.
func TestForgetUnderLoad(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{ContextWindow: 1500, ProtectedTurns: 2})
	msgs := chat(40, t0)
	for i := 0; i < len(msgs); i += 10 {
		ingest(t, s, "c", msgs[i:i+10])
	}
	done := make(chan struct{})
	errs := make(chan error, 8)
	var stored []string
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for i := 0; i < 30; i++ {
			m := msg("user", "Ana", fmt.Sprintf("Load note %d: the harbor crane inspection moved to slot %d.", i, i), t0.Add(time.Duration(100+i)*time.Minute))
			r, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: []Message{m}})
			if err != nil {
				errs <- err
				return
			}
			stored = append(stored, r.TurnIDs...)
		}
	}()
	for range 2 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "Rex vaccination", MaxTokens: 500}); err != nil {
					errs <- err
					return
				}
				if _, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "c", Query: "Kyoto ryokan"}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var forgot []string
	for _, q := range []string{"vaccination at the vet clinic, appointment number 5.", "GOMAXPROCS is 10.", "appointment number 22."} {
		r, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", Query: q})
		if err != nil {
			t.Fatal(err)
		}
		forgot = append(forgot, r.TurnIDs...)
	}
	<-writer
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if len(forgot) != 3 || len(stored) != 30 {
		t.Fatalf("forgot %v, stored %d", forgot, len(stored))
	}
	for _, id := range forgot {
		if _, err := s.Turn(ctx, "c", id); err == nil {
			t.Fatalf("forgotten turn %s still readable", id)
		}
	}
	for i, id := range stored {
		tr, err := s.Turn(ctx, "c", id)
		if err != nil || !strings.Contains(tr.Text, fmt.Sprintf("Load note %d:", i)) {
			t.Fatalf("stored turn %s: %q, %v", id, tr.Text, err)
		}
	}
	fq, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "c", Query: "harbor crane inspection", MaxResults: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(fq.Quotes) < 30 && !fq.CatchingUp {
		t.Fatalf("find_quote finds %d of the 30 notes", len(fq.Quotes))
	}
}

// forgettingEmbedder is conceptEmbedder plus VectorForgetter: it records
// the texts whose vectors a forget asks it to drop.
type forgettingEmbedder struct {
	conceptEmbedder
	mu     sync.Mutex
	forgot []string
}

func (e *forgettingEmbedder) ForgetVectors(_ context.Context, texts []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forgot = append(e.forgot, texts...)
	return nil
}

// TestForgetDropsNamedTurnVectors: a named turn's vector was computed from
// "Name: text"; forget asks a vector-keeping embedder to drop that text
// (and the text alone, as older vectors were made).
func TestForgetDropsNamedTurnVectors(t *testing.T) {
	emb := &forgettingEmbedder{}
	s := openTest(t, Options{Embedder: emb})
	ingest(t, s, "c", semanticChat())
	waitVectors(t, s, "c")
	if _, err := s.Forget(context.Background(), ForgetRequest{ConversationID: "c", TurnIDs: []string{"t8"}}); err != nil {
		t.Fatal(err)
	}
	line := semanticChat()[7]
	content := "My sister adopted a grey cat called Pixel."
	if line.Name != "Ana" {
		t.Fatalf("setup: turn 8 is by %q", line.Name)
	}
	emb.mu.Lock()
	defer emb.mu.Unlock()
	for _, want := range []string{embedText("Ana", content), content} {
		if !slices.Contains(emb.forgot, want) {
			t.Errorf("forget did not ask to drop the vector of %q (asked: %q)", want, emb.forgot)
		}
	}
}

// TestReadsGoOnDuringAForget: while a forget has its new logs in place and
// its state rebuilt, but not yet put in place, recall, find_quote and
// status answer from the state as it was, reading every turn they quote
// whole from the old log (where the new log's offsets would not verify);
// once the forget returns, the fact is gone from what they answer.
func TestReadsGoOnDuringAForget(t *testing.T) {
	if !replaceOpenFiles {
		t.Skip("an open file cannot be replaced here: readers wait for a forget (rewriteLock)")
	}
	ctx := context.Background()
	s := openTest(t, Options{ContextWindow: 1200, ProtectedTurns: 2})
	forgetFixture(t, s)
	// Turns after the forgotten one sit at other offsets in the new log.
	const later = "The ryokan in Kyoto confirmed the late check-in for the whole group."
	ingest(t, s, "c", []Message{msg("user", "Ana", later, t0.Add(2*time.Hour))})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rewriteHook = func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	t.Cleanup(func() { rewriteHook = nil })
	forgot := make(chan error, 1)
	go func() {
		_, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", Query: secretWord})
		forgot <- err
	}()
	<-entered
	whileHeld(t, release, forgot, "a forget", func() error {
		return readsAnswer(s, "c", "did the ryokan confirm the late check-in?", "late check-in", func(r RecallResult, q FindQuoteResult) error {
			if !strings.Contains(r.Text, later) {
				return fmt.Errorf("a recall during the forget lacks the turn it should quote whole: %q", r.Text)
			}
			if len(q.Quotes) == 0 || !strings.Contains(q.Quotes[0].Excerpt, "The ryokan in Kyoto confirmed") {
				return fmt.Errorf("find_quote during the forget: %+v", q.Quotes)
			}
			return nil
		})
	})
	if v := strings.ToLower(visible(t, s, "c")); strings.Contains(v, secretWord) {
		t.Fatal("the forgotten fact is still visible after the forget")
	}
	r, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "did the ryokan confirm the late check-in?"})
	if err != nil || !strings.Contains(r.Text, later) {
		t.Fatalf("after the forget: %v %q", err, r.Text)
	}
}
