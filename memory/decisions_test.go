package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/decisionlog"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

// countingSummarizer counts calls; with fail set it refuses every one.
type countingSummarizer struct {
	inner Summarizer
	calls atomic.Int64
	fail  bool
}

func (f *countingSummarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	f.calls.Add(1)
	if f.fail {
		return summarize.Result{}, errors.New("summariser called during rebuild")
	}
	return f.inner.Summarize(ctx, in)
}

// countingTagger counts calls; with fail set it refuses every one.
type countingTagger struct {
	inner Tagger
	calls atomic.Int64
	fail  bool
}

func (f *countingTagger) Tag(ctx context.Context, in tagging.Input) (tagging.Result, error) {
	f.calls.Add(1)
	if f.fail {
		return tagging.Result{}, errors.New("tagger called during rebuild")
	}
	return f.inner.Tag(ctx, in)
}

// refusingSplitter fails the test if it is ever asked.
type refusingSplitter struct{ calls atomic.Int64 }

func (f *refusingSplitter) SplitTag(ctx context.Context, in SplitRequest) (SplitDecision, error) {
	f.calls.Add(1)
	return SplitDecision{}, errors.New("splitter called during rebuild")
}

// snapshot is everything a client can observe of a conversation.
type snapshot struct {
	Status  string
	Domains map[string]string
	Recalls []string
	Quotes  []string
}

var rebuildQueries = []string{
	"the Go scheduler bug with GOMAXPROCS",
	"what did we decide about the Postgres migration?",
	"Rex vaccination appointment",
	"Japan itinerary day in Kyoto",
	"ryokan nights",
	"what did we discuss at the very beginning?",
}

func observe(t *testing.T, s *Store, conv string) snapshot {
	t.Helper()
	ctx := context.Background()
	st, err := s.Status(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	st.Features = Features{}
	js, _ := json.MarshalIndent(st, "", " ")
	snap := snapshot{Status: string(js), Domains: map[string]string{}}
	for _, ts := range st.Tags {
		d, err := s.Domain(ctx, conv, ts.Tag)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(d)
		snap.Domains[ts.Tag] = string(js)
	}
	for _, q := range rebuildQueries {
		r, err := s.Recall(ctx, RecallRequest{ConversationID: conv, Message: q, MaxTokens: 600})
		if err != nil {
			t.Fatal(err)
		}
		r.RequestID = "" // the request history keeps counting
		js, _ := json.Marshal(r)
		snap.Recalls = append(snap.Recalls, r.Text+"\n"+string(js))
		fq, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: conv, Query: q})
		if err != nil {
			t.Fatal(err)
		}
		js, _ = json.Marshal(fq)
		snap.Quotes = append(snap.Quotes, string(js))
	}
	return snap
}

func compareSnapshots(t *testing.T, before, after snapshot) {
	t.Helper()
	if before.Status != after.Status {
		t.Errorf("domain_status differs after rebuild:\nbefore %s\nafter  %s", before.Status, after.Status)
	}
	for tag, d := range before.Domains {
		if after.Domains[tag] != d {
			t.Errorf("domain %s differs after rebuild:\nbefore %s\nafter  %s", tag, d, after.Domains[tag])
		}
	}
	for i := range before.Recalls {
		if before.Recalls[i] != after.Recalls[i] {
			t.Errorf("recall %q differs after rebuild:\nbefore %s\n---\nafter  %s", rebuildQueries[i], before.Recalls[i], after.Recalls[i])
		}
		if before.Quotes[i] != after.Quotes[i] {
			t.Errorf("find_quote %q differs after rebuild:\nbefore %s\n---\nafter  %s", rebuildQueries[i], before.Quotes[i], after.Quotes[i])
		}
	}
}

// buildDerivedState fills conversation "c" with compactions, a tag split
// and working-set changes, and returns what a client sees of it.
func buildDerivedState(t *testing.T, dir string) snapshot {
	t.Helper()
	return buildDerivedStateWith(t, dir, summarize.NewExtractive(nil))
}

// buildDerivedStateWith is buildDerivedState with summariser inner; nil
// means the store's own (extractive, counting cl100k tokens).
func buildDerivedStateWith(t *testing.T, dir string, inner Summarizer) snapshot {
	t.Helper()
	sum := &countingSummarizer{inner: inner}
	tag := &countingTagger{inner: tagging.NewKeyword(nil)}
	opts := Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Summarizer: sum, Tagger: tag, Splitter: &citySplitter{}}
	if inner == nil {
		opts.Summarizer = nil
	}
	s := openTest(t, opts)
	msgs := chat(120, t0)
	for i := 0; i < 60; i++ {
		city := []string{"Kyoto", "Osaka", "Nara"}[i%3]
		msgs = append(msgs, msg("user", "Ana", fmt.Sprintf("Japan itinerary: day %d in %s.", i+1, city), t0.Add(time.Duration(200+i)*time.Minute)))
	}
	for i := 0; i < len(msgs); i += 10 {
		ingest(t, s, "c", msgs[i:i+10])
	}
	st, err := s.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Segments < 3 || st.Totals.TagSummaries == 0 || inner != nil && sum.calls.Load() == 0 {
		t.Fatalf("setup: %d segments, %d tag summaries, %d summariser calls; want several compactions", st.Totals.Segments, st.Totals.TagSummaries, sum.calls.Load())
	}
	c, _ := s.conversation(context.Background(), "c", false)
	if len(c.meta.Aliases) == 0 || len(c.meta.SplitChecked) == 0 {
		t.Fatalf("setup: no tag split happened (aliases %v)", c.meta.Aliases)
	}
	if _, err := s.Expand(context.Background(), ExpandRequest{ConversationID: "c", Tag: st.Tags[0].Tag, Depth: DepthFull, MaxTokens: 500}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expand(context.Background(), ExpandRequest{ConversationID: "c", Tag: st.Tags[1].Tag}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Collapse(context.Background(), CollapseRequest{ConversationID: "c", Tag: st.Tags[1].Tag, Depth: DepthSummary}); err != nil {
		t.Fatal(err)
	}
	before := observe(t, s, "c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return before
}

func TestRebuildGivesSameAnswers(t *testing.T) {
	for _, how := range []string{"Rebuild", "Open", "FullHashes", "ObjectTags", "StringTags", "RollupRefs", "RollupRefsChecked", "ExplicitAdds"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			var before snapshot
			switch how {
			case "RollupRefs", "ExplicitAdds": // the store's own summariser: rollups by reference
				before = buildDerivedStateWith(t, dir, nil)
			case "RollupRefsChecked": // another one that agrees with replay's
				before = buildDerivedStateWith(t, dir, summarize.NewExtractive(&summarize.ExtractiveOptions{Count: tokens.Count}))
			default:
				before = buildDerivedState(t, dir)
			}
			if strings.HasPrefix(how, "RollupRefs") {
				full, refs := countRollups(t, dir, "c")
				if refs == 0 || full != 0 {
					t.Fatalf("compaction decisions hold %d rollups in full and %d by reference; want all by reference", full, refs)
				}
				if full, refs := countSegments(t, dir, "c"); refs == 0 || full != 0 {
					t.Fatalf("compaction decisions hold %d segments in full and %d by reference; want all by reference", full, refs)
				}
			}
			if how == "FullHashes" {
				// A decisions log written before tags decisions kept only
				// a hash prefix still replays.
				withFullTagHashes(t, dir, "c")
			}
			if how == "ExplicitAdds" {
				// A decisions log written before rollup references left
				// out the segments they add.
				withExplicitAdds(t, dir, "c")
			}
			if how == "ObjectTags" {
				// A decisions log written before turns' tags were arrays.
				withObjectTags(t, dir, "c")
			}
			if how == "StringTags" {
				// A decisions log written before tags records had a vocab.
				withStringTags(t, dir, "c")
			}
			sum := &countingSummarizer{fail: true}
			tag := &countingTagger{fail: true}
			split := &refusingSplitter{}
			opts := Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Summarizer: sum, Tagger: tag, Splitter: split}
			switch how {
			case "Rebuild", "FullHashes", "ObjectTags", "StringTags", "RollupRefs", "RollupRefsChecked", "ExplicitAdds":
				if err := Rebuild(context.Background(), opts, nil); err != nil {
					t.Fatalf("Rebuild: %v", err)
				}
			case "Open": // vc.db and the index deleted by hand: Open replays
				for _, p := range []string{dbFile, indexDir} {
					if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
						t.Fatal(err)
					}
				}
			}
			s := openTest(t, opts)
			// The index is rebuilt in the background; until it has caught
			// up, answers say so and differ by design.
			waitIndexed(t, s)
			after := observe(t, s, "c")
			if n := sum.calls.Load() + tag.calls.Load() + split.calls.Load(); n != 0 {
				t.Fatalf("rebuild called a model %d times (summariser %d, tagger %d, splitter %d), want 0",
					n, sum.calls.Load(), tag.calls.Load(), split.calls.Load())
			}
			compareSnapshots(t, before, after)
		})
	}
}

// compactDecisions returns a conversation's compaction decisions, as its
// decisions log holds them.
func compactDecisions(t *testing.T, dir, conv string) []decision {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, decisionsDir, conv+".log"))
	if err != nil {
		t.Fatal(err)
	}
	var out []decision
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		d, ok := decodeDecision(line)
		if !ok {
			t.Fatalf("undecodable decision %.100s", line)
		}
		if d.Kind == decCompact {
			out = append(out, d)
		}
	}
	return out
}

// countRollups counts the rollups compaction decisions hold in full and by
// reference.
func countRollups(t *testing.T, dir, conv string) (full, refs int) {
	t.Helper()
	for _, d := range compactDecisions(t, dir, conv) {
		full += len(d.TagSums)
		refs += len(d.TagRefs)
	}
	return full, refs
}

// rewriteDecisions rewrites conversation conv's decisions log line by
// line: edit returns what replaces a decoded decision's line (the line
// itself to keep it) and how many things it changed; none at all fails the
// test ("no <what> to rewrite").
func rewriteDecisions(t *testing.T, dir, conv, what string, edit func(d decision, line []byte) ([]byte, int)) {
	t.Helper()
	path := filepath.Join(dir, decisionsDir, conv+".log")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	n := 0
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		d, ok := decodeDecision(bytes.TrimSuffix(line, []byte("\n")))
		if !ok {
			t.Fatalf("undecodable decision %.100s", line)
		}
		b, k := edit(d, line)
		out, n = append(out, b...), n+k
	}
	if n == 0 {
		t.Fatalf("no %s to rewrite", what)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// decisionBodyT returns the body of a decisions log line (with its newline
// or without) or fails the test.
func decisionBodyT(t *testing.T, line []byte) []byte {
	t.Helper()
	body, ok := decisionlog.Body(bytes.TrimSuffix(line, []byte("\n")))
	if !ok {
		t.Fatalf("decisions log line does not verify: %.100s", line)
	}
	return body
}

// encodeDecisionT encodes d or fails the test.
func encodeDecisionT(t *testing.T, d decision) []byte {
	t.Helper()
	enc, err := encodeDecision(d)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// withFullTagHashes rewrites conversation conv's decisions log with every
// tags decision holding the turn's whole hash, as logs did before
// tagHashLen.
func withFullTagHashes(t *testing.T, dir, conv string) {
	t.Helper()
	logData, err := os.ReadFile(filepath.Join(dir, "logs", conv+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	full := map[int]string{}
	for _, line := range bytes.Split(bytes.TrimSpace(logData), []byte("\n")) {
		rec, err := masterlog.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		full[rec.Seq] = rec.Hash
	}
	rewriteDecisions(t, dir, conv, "tags decision", func(d decision, _ []byte) ([]byte, int) {
		for i := range d.Turns {
			if len(d.Turns[i].Hash) != tagHashLen || !strings.HasPrefix(full[d.Turns[i].Seq], d.Turns[i].Hash) {
				t.Fatalf("tags decision of turn %d holds hash %q, want the %d-digit prefix of %q", d.Turns[i].Seq, d.Turns[i].Hash, tagHashLen, full[d.Turns[i].Seq])
			}
			d.Turns[i].Hash = full[d.Turns[i].Seq]
		}
		return encodeDecisionT(t, d), len(d.Turns)
	})
}

func TestDecisionLogSkipsDamagedRecords(t *testing.T) {
	dir := t.TempDir()
	before := buildDerivedState(t, dir)
	path := filepath.Join(dir, decisionsDir, "c.log")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Damage the first tags record (keeping its length and newline) and
	// tear a record onto the end.
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) < 5 || !bytes.Contains(lines[0], []byte(`"kind":"tags"`)) {
		t.Fatalf("unexpected decisions log head: %.200s", data)
	}
	copy(lines[0][20:], "GARBAGE!")
	damaged := append(bytes.Join(lines, nil), []byte(`0badc0de {"kind":"working","wor`)...)
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	opts := Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Logger: slogTo(&logs)}
	if err := Rebuild(context.Background(), opts, nil); err != nil {
		t.Fatalf("Rebuild with a damaged decisions log: %v", err)
	}
	s := openTest(t, opts)
	after := observe(t, s, "c")
	if !strings.Contains(logs.String(), "damaged record in the decisions log skipped") {
		t.Errorf("damage not reported; logs:\n%s", logs.String())
	}
	// Only the first batch's tags were lost; the keyword tagger remakes
	// them, and every later decision (segments, split, working set) holds.
	var sb, sa Status
	_ = json.Unmarshal([]byte(before.Status), &sb)
	_ = json.Unmarshal([]byte(after.Status), &sa)
	if sa.Totals.Turns != sb.Totals.Turns || sa.Totals.Segments != sb.Totals.Segments || sa.Totals.TagSummaries != sb.Totals.TagSummaries {
		t.Fatalf("after damage: totals %+v, want %+v", sa.Totals, sb.Totals)
	}
	// The torn tail is cut before the next append, the damaged line kept.
	if _, err := s.Expand(context.Background(), ExpandRequest{ConversationID: "c", Tag: sb.Tags[0].Tag}); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(path)
	if bytes.Contains(data, []byte(`"wor`+"\n")) || bytes.Contains(data, []byte(`0badc0de`)) {
		t.Errorf("torn record still in the decisions log")
	}
	if !bytes.Contains(data, []byte("GARBAGE!")) {
		t.Errorf("damaged record was deleted; it must stay in place")
	}
}

func TestExpandPersistsBeforeChangingWorkingSet(t *testing.T) {
	s := openTest(t, Options{})
	ingest(t, s, "c", chat(20, t0))
	st, err := s.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.conversation(context.Background(), "c", false)
	// Make every write fail: the working set must stay as it was.
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Expand(context.Background(), ExpandRequest{ConversationID: "c", Tag: st.Tags[0].Tag})
	if err == nil {
		t.Fatal("Expand succeeded with the store closed")
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.working) != 0 {
		t.Fatalf("working set changed although saving it failed: %v", c.working)
	}
}

func slogTo(w *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(&lockedWriter{w: w}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// lockedWriter serialises writes from the store's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A decision made durable just before a crash (its bbolt commit never
// happened) is applied when the store opens again.
func TestOpenAppliesDecisionsNotCommitted(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", chat(20, t0))
	st, err := s.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	tag := st.Tags[0].Tag
	c, _ := s.conversation(context.Background(), "c", false)
	c.lock()
	_, err = s.recordDecision(c, decision{Kind: decWorking, Working: []WorkingEntry{{Tag: tag, Depth: DepthFull, Tokens: 42, LastAccess: t0}}})
	c.unlock()
	if err != nil {
		t.Fatal(err)
	}
	// Crash: nothing else reaches vc.db.
	s.closed.Store(true)
	s.stopReconciler()
	_ = s.ix.Close()
	_ = c.dlog.Close()
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t, Options{Dir: dir})
	st2, err := s2.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range st2.Tags {
		if ts.Tag == tag {
			if ts.Depth != DepthFull {
				t.Fatalf("tag %s depth %s after reopening, want %s (the recorded decision)", tag, ts.Depth, DepthFull)
			}
			return
		}
	}
	t.Fatalf("tag %s gone after reopening", tag)
}
