package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

// neighbourSummarizer records what each per-message summary was asked
// with and answers "summary of <turn>", plus an optional extra string (a
// leaked secret).
type neighbourSummarizer struct {
	mu    sync.Mutex
	seen  map[string]summarize.Input
	extra string
	fail  bool
}

func (n *neighbourSummarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	if n.fail {
		return summarize.Result{}, fmt.Errorf("summariser called")
	}
	if in.Kind != summarize.Single {
		return summarize.NewExtractive(nil).Summarize(ctx, in)
	}
	n.mu.Lock()
	if n.seen == nil {
		n.seen = map[string]summarize.Input{}
	}
	n.seen[in.Turns[0].ID] = in
	n.mu.Unlock()
	return summarize.Result{Summary: "summary of " + in.Turns[0].ID + n.extra, Method: "llm:fake/m1", Version: "turn/v1+detailed"}, nil
}

// longChat is n alternating messages, every one long enough to summarise.
func longChat(n int) []Message {
	out := make([]Message, n)
	for i := range out {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		body := fmt.Sprintf("Message %d is about the Kyoto ryokan booking number %d. ", i+1, 1000+i)
		out[i] = msg(role, "", strings.Repeat(body, 8), t0.Add(time.Duration(i)*time.Minute))
	}
	return out
}

func TestTurnSummariesRecordedReplayedCleared(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fake := &neighbourSummarizer{extra: " key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"}
	s := openTest(t, Options{Dir: dir, Summarizer: fake})
	ingest(t, s, "c", longChat(8))
	ingest(t, s, "c", []Message{msg("user", "", "ok", t0.Add(9*time.Minute))}) // too short to summarise

	res, err := s.SummarizeTurns(ctx, TurnSummaryRequest{ConversationID: "c", From: "t3"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summarised != 6 || res.Short != 1 {
		t.Fatalf("summarised %+v, want 6 (t3-t8) and 1 short", res)
	}
	in := fake.seen["t4"]
	if !strings.Contains(in.Previous, "Message 3 ") || !strings.Contains(in.Next, "Message 5 ") {
		t.Fatalf("t4 was summarised without its neighbours in view: prev %.40q next %.40q", in.Previous, in.Next)
	}
	if _, ok := fake.seen["t2"]; ok {
		t.Fatal("t2 is before --from but was summarised")
	}
	c := s.convs["c"].c
	r := c.turnSums[5]
	if r == nil || !strings.HasPrefix(r.Summary, "summary of t5") || r.Model != "llm:fake/m1" || r.Version != "turn/v1+detailed" || r.At.IsZero() {
		t.Fatalf("t5 summary %+v", r)
	}
	if strings.Contains(r.Summary, "sk-proj") || !strings.Contains(r.Summary, "[secret:") {
		t.Fatalf("secret in a summary not scrubbed: %q", r.Summary)
	}
	st, err := s.ContextStats(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Turns != 9 || st.Summarisable != 8 || st.Summarised != 6 || st.TokensSaved <= 0 ||
		len(st.ByModel) != 1 || st.ByModel[0].Count != 6 || st.ByModel[0].Model != "llm:fake/m1" {
		t.Fatalf("stats %+v", st)
	}
	s.Close()

	// A rebuild brings them back without calling the summariser.
	refuse := &neighbourSummarizer{fail: true}
	if err := Rebuild(ctx, Options{Dir: dir, Summarizer: refuse}, nil); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t, Options{Dir: dir, Summarizer: refuse})
	st2, err := s2.ContextStats(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if st2.Summarised != 6 || st2.SummaryTokens != st.SummaryTokens {
		t.Fatalf("after rebuild %+v, want %+v", st2, st)
	}
	n, err := s2.ClearTurnSummaries(ctx, "c")
	if err != nil || n != 6 {
		t.Fatalf("clear: %d, %v", n, err)
	}
	s2.Close()
	if err := Rebuild(ctx, Options{Dir: dir, Summarizer: refuse}, nil); err != nil {
		t.Fatal(err)
	}
	s3 := openTest(t, Options{Dir: dir, Summarizer: refuse})
	if st3, err := s3.ContextStats(ctx, "c"); err != nil || st3.Summarised != 0 {
		t.Fatalf("cleared summaries came back after rebuild: %+v %v", st3, err)
	}
	if _, err := s3.SummarizeTurns(ctx, TurnSummaryRequest{ConversationID: "c", From: "x9"}); err == nil {
		t.Fatal("a bad --from was accepted")
	}
}

func TestTruncationReferencesReadBack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	long := strings.Repeat("The zeppelin hangar inspection found corrosion on girder seven and rivets loose along the keel. ", 60)
	ingest(t, s, "c", []Message{
		msg("user", "", "Tell me about the zeppelin hangar inspection.", t0),
		msg("assistant", "", long, t0.Add(time.Minute)),
		msg("user", "", "Thanks, and the weather for Sunday?", t0.Add(2*time.Minute)),
	})
	res, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "zeppelin hangar inspection corrosion girder", MaxTokens: 300})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens > 300 || len(res.TruncationRefs) != 1 {
		t.Fatalf("recall at 300 tokens: %d tokens, refs %+v\n%s", res.Tokens, res.TruncationRefs, res.Text)
	}
	t.Logf("recall:\n%s", res.Text)
	ref := res.TruncationRefs[0]
	tm := s.convs["c"].c.turn(2)
	if ref.Turn != "t2" || ref.Start != tm.Start || ref.End != tm.End || ref.Log != "logs/c.jsonl" || ref.Tokens <= 0 || ref.Tokens >= tm.Tokens {
		t.Fatalf("ref %+v, turn t2 is bytes %d-%d of %d tokens", ref, tm.Start, tm.End, tm.Tokens)
	}
	want := fmt.Sprintf("tokens of t2; log logs/c.jsonl bytes %d-%d; read_log reads it back]", ref.Start, ref.End)
	if !strings.Contains(res.Text, want) || !strings.Contains(res.Text, "[truncated: "+thousands(ref.Tokens)) {
		t.Fatalf("recall text lacks the reference %q:\n%s", want, res.Text)
	}
	got, err := s.ReadLog(ctx, ReadLogRequest{ConversationID: "c", Start: ref.Start, End: ref.End})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "logs", "c.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	if got.Text != strings.TrimSuffix(lines[1], "\n") || len(got.TurnIDs) != 1 || got.TurnIDs[0] != "t2" {
		t.Fatalf("read_log gave %q (turns %v), want record 2 %q", got.Text, got.TurnIDs, lines[1])
	}
	rec, err := masterlog.Decode([]byte(got.Text))
	if err != nil || rec.Content != long {
		t.Fatalf("the range is not the whole record: %v", err)
	}
	for _, bad := range []ReadLogRequest{
		{ConversationID: "c", Start: 10, End: 5},
		{ConversationID: "c", Start: 0, End: int64(len(raw)) + 1},
		{ConversationID: "c", Start: 0, End: maxReadLogBytes + 1},
		{ConversationID: "../c", Start: 0, End: 10},
	} {
		if _, err := s.ReadLog(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ReadLog(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := s.ReadLog(ctx, ReadLogRequest{ConversationID: "other", Start: 0, End: 10}); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadLog of an unknown conversation: %v", err)
	}

	// expand_topic at a small budget names what it left out.
	tag := s.convs["c"].c.turn(2).primary()
	ex, err := s.Expand(ctx, ExpandRequest{ConversationID: "c", Tag: tag, Depth: DepthFull, MaxTokens: 200})
	if err != nil {
		t.Fatal(err)
	}
	if !ex.Truncated || len(ex.TruncationRefs) == 0 || ex.Tokens > 200 || !strings.Contains(ex.Text, "[truncated: ") {
		t.Fatalf("expand at 200 tokens: truncated %v refs %+v tokens %d\n%s", ex.Truncated, ex.TruncationRefs, ex.Tokens, ex.Text)
	}
	t.Logf("expand:\n%s", ex.Text)
	for _, r := range ex.TruncationRefs {
		if _, err := s.ReadLog(ctx, ReadLogRequest{ConversationID: "c", Start: r.Start, End: r.End}); err != nil {
			t.Fatalf("expand's reference %+v does not read back: %v", r, err)
		}
	}
}

// TestForgetDropsTurnSummaries: a forgotten turn's per-message summary and
// its neighbours' (written with it in view) are gone, also after a
// rebuild from the logs; the others stay.
func TestForgetDropsTurnSummaries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir, Summarizer: &neighbourSummarizer{}})
	ingest(t, s, "c", longChat(8))
	if _, err := s.SummarizeTurns(ctx, TurnSummaryRequest{ConversationID: "c", From: "t1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", TurnIDs: []string{"t5"}}); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		c := s.convs["c"].c
		for seq := 1; seq <= 8; seq++ {
			_, has := c.turnSums[seq]
			if want := seq < 4 || seq > 6; has != want {
				t.Errorf("%s: t%d has a per-message summary: %v, want %v", when, seq, has, want)
			}
		}
	}
	check(s, "after forget")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dbFile, indexDir} {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	s2 := openTest(t, Options{Dir: dir, Summarizer: &neighbourSummarizer{}})
	if _, err := s2.ContextStats(ctx, "c"); err != nil { // loads the conversation
		t.Fatal(err)
	}
	check(s2, "after a rebuild")
}
