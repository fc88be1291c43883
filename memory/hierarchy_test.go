package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPlanHierarchy(t *testing.T) {
	// turns(n, full, summary) makes n turns t1..tn of the given costs.
	turns := func(n, full, summary int) []hierTurn {
		out := make([]hierTurn, n)
		for i := range out {
			out[i] = hierTurn{seq: i + 1, full: full, summary: summary}
		}
		return out
	}
	seqs := func(from, to int) []int {
		var out []int
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
		return out
	}
	withGap := turns(10, 100, 10)
	withGap[6].summary = 0 // t7 has no summary yet
	short := turns(10, 100, 10)
	short[7] = hierTurn{seq: 8, full: 12, short: true}
	for _, tc := range []struct {
		name   string
		turns  []hierTurn
		aggs   []hierAgg
		budget int
		want   hierPlan
	}{
		{name: "everything fits whole", turns: turns(4, 50, 10), budget: 1000,
			want: hierPlan{whole: seqs(1, 4), used: 200}},
		{name: "recent whole, middle summarised, oldest omitted", turns: turns(60, 100, 10), budget: 600,
			// 528 after the reserve: half = 2 whole (t59-t60, 200); the middle may grow to
			// 200+2/3*328 = 418 (t38-t58), then, with no aggregate, to 528 (t27-t37); t1-t26 omitted.
			want: hierPlan{whole: seqs(59, 60), summarised: seqs(27, 58), omitted: seqs(1, 26), used: 520}},
		{name: "the middle layer is capped", turns: turns(200, 100, 5), budget: 5000,
			// 20 recent turns and 80 summaries at most, however large the budget.
			want: hierPlan{whole: seqs(181, 200), summarised: seqs(101, 180), omitted: seqs(1, 100), used: 2400}},
		{name: "recent turns are capped", turns: turns(40, 10, 5), budget: 10000,
			want: hierPlan{whole: seqs(21, 40), summarised: seqs(1, 20), used: 300}},
		{name: "a missing summary is skipped and reported", turns: withGap, budget: 500,
			want: hierPlan{whole: seqs(9, 10), summarised: []int{1, 2, 3, 4, 5, 6, 8}, missing: []int{7}, used: 270}},
		{name: "short turns stand whole in the middle", turns: short, budget: 500,
			// t8 is short (12): it joins the recent turns (212 <= 428/2).
			want: hierPlan{whole: seqs(8, 10), summarised: seqs(1, 7), used: 282}},
		{name: "aggregates cover the oldest, newest first while they fit", turns: turns(30, 100, 10),
			aggs: []hierAgg{{cost: 60, last: 3}, {cost: 60, last: 6}, {cost: 500, last: 7}, {cost: 60, last: 9}}, budget: 740,
			// 668 after the reserve: 3 whole (300), summaries up to 545 (t4-t27), so only
			// aggregates ending by t3 qualify; the 500-token one never fits.
			want: hierPlan{whole: seqs(28, 30), summarised: seqs(4, 27), aggs: []int{0}, omitted: seqs(1, 3), used: 600}},
		{name: "reserve is kept", turns: turns(3, 100, 10), budget: 272,
			want: hierPlan{whole: []int{3}, summarised: []int{1, 2}, used: 120}},
		{name: "nothing fits", turns: turns(3, 500, 400), budget: 100,
			want: hierPlan{omitted: seqs(1, 3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planHierarchy(tc.turns, tc.aggs, tc.budget, 72)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("plan\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestHierarchicalRecallGolden: a 40-turn conversation with per-message
// summaries made lazily, recalled hierarchically at 700 tokens.
func TestHierarchicalRecallGolden(t *testing.T) {
	ctx := context.Background()
	fake := &neighbourSummarizer{}
	// A fixed clock: the master log records when each message was stored,
	// so the byte ranges in the golden move with the wall clock otherwise.
	now := func() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) }
	s := openTest(t, Options{Dir: t.TempDir(), Assembly: AssemblyHierarchical, Summarizer: fake, ContextWindow: 3000, ProtectedTurns: 4, Now: now})
	var msgs []Message
	for i := range 40 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		body := fmt.Sprintf("Turn %d on the canal barge restoration: the hull plate %d was sanded and painted with red oxide primer before the winter. ", i+1, i+1)
		msgs = append(msgs, msg(role, "", strings.Repeat(body, 1+i%3), t0.Add(time.Duration(i)*10*time.Minute)))
	}
	ingest(t, s, "c", msgs)
	res, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "what happened with the barge?", MaxTokens: 700})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens > 700 {
		t.Fatalf("%d tokens over the 700 budget", res.Tokens)
	}
	if len(fake.seen) == 0 || len(fake.seen) > lazyTurnSummaries {
		t.Fatalf("lazy summaries made: %d, want 1-%d", len(fake.seen), lazyTurnSummaries)
	}
	if !strings.Contains(res.Text, "## Recent turns (verbatim)") || !strings.Contains(res.Text, "(summary): summary of t") {
		t.Fatalf("not layered:\n%s", res.Text)
	}
	t.Logf("lazily summarised: %v; breakdown %+v", keys(fake.seen), res.Breakdown)
	checkGolden(t, filepath.Join("testdata", "hierarchical_recall.txt"), []byte(res.Text))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestTurnSummariesConcurrent: ingest, hierarchical recalls (which make
// summaries lazily), bulk summarising, clearing, stats and read_log at
// once; run under -race.
func TestTurnSummariesConcurrent(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: t.TempDir(), Assembly: AssemblyHierarchical, ContextWindow: 4000, ProtectedTurns: 4})
	ingest(t, s, "c", longChat(12))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	run := func(n int, f func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	run(8, func(i int) error {
		_, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: []Message{
			msg("user", "", strings.Repeat(fmt.Sprintf("New message %d about the ryokan booking and the train times. ", i), 8), t0.Add(time.Duration(100+i)*time.Minute))}})
		return err
	})
	run(8, func(int) error {
		res, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "ryokan", MaxTokens: 500})
		if err == nil && res.Tokens > 500 {
			err = fmt.Errorf("recall over budget: %d", res.Tokens)
		}
		return err
	})
	run(3, func(int) error {
		_, err := s.SummarizeTurns(ctx, TurnSummaryRequest{ConversationID: "c", From: "t1", Missing: true})
		return err
	})
	run(3, func(int) error { _, err := s.ClearTurnSummaries(ctx, "c"); return err })
	run(8, func(int) error {
		st, err := s.ContextStats(ctx, "c")
		if err == nil && st.Summarised > st.Summarisable {
			err = fmt.Errorf("stats %+v", st)
		}
		return err
	})
	run(8, func(int) error {
		_, err := s.ReadLog(ctx, ReadLogRequest{ConversationID: "c", Start: 0, End: 100})
		return err
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
