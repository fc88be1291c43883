package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

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
