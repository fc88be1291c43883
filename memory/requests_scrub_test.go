package memory

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestForgetScrubsAScopeAllRecallOfOneConversation: a recall over every
// conversation made from a that finds only b's memory (a has nothing
// stored) is recorded in a's history; it named b's turns "t1" when only
// one conversation answered (and the hierarchical assembly ran), which no
// scrub of b recognised. Such recalls name them "b/t1" now, and forgetting
// b's t1 takes it out.
func TestForgetScrubsAScopeAllRecallOfOneConversation(t *testing.T) {
	for _, mode := range []string{"", AssemblyHierarchical} {
		t.Run(string(mode)+"x", func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t, Options{Dir: t.TempDir(), Assembly: mode})
			if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "b", Messages: []Message{msg("user", "", "the Zephyr account PIN is 4417", time.Time{})}}); err != nil {
				t.Fatal(err)
			}
			res, err := s.Recall(ctx, RecallRequest{ConversationID: "a", Message: "what about Zephyr?", Scope: ScopeAll})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("recall from a named %v %+v %+v", res.TurnIDs, res.Summaries, res.Included)
			if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "b", TurnIDs: []string{"t1"}}); err != nil {
				t.Fatal(err)
			}
			recs, err := s.Requests(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				named := slices.Clone(r.Memory.TurnIDs)
				for _, in := range r.Memory.Included {
					named = append(named, in.ID)
				}
				for _, sm := range r.Memory.Summaries {
					named = append(named, sm.ID)
				}
				if slices.Contains(named, "t1") || slices.Contains(named, "b/t1") {
					t.Errorf("a's history still names b's forgotten turn: %v", named)
				}
			}
		})
	}
}

// TestForgetScrubsAGoneTopicMatchedWithoutItsTurns: a recall over every
// conversation that matched b's topic "zephyr" but included none of b's
// turns (the caller held its text) names no "b/"; the topic, gone once b's
// only turn is forgotten, must still leave a's history (the scrub's
// prefilter looks for the gone topics too).
func TestForgetScrubsAGoneTopicMatchedWithoutItsTurns(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: t.TempDir()})
	for _, in := range []struct{ conv, text string }{
		{"a", "lunch on friday at the noodle bar"},
		{"b", "the Zephyr account PIN is 4417"},
	} {
		if _, err := s.Ingest(ctx, IngestRequest{ConversationID: in.conv, Messages: []Message{msg("user", "", in.text, time.Time{})}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Recall(ctx, RecallRequest{ConversationID: "a", Message: "what about Zephyr?", Scope: ScopeAll,
		Exclude: []string{"the Zephyr account PIN is 4417"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.MatchedTags, "zephyr") || slices.Contains(res.TurnIDs, "b/t1") {
		t.Fatalf("the recall matched %v and used %v: the test shows nothing", res.MatchedTags, res.TurnIDs)
	}
	f, err := s.Forget(ctx, ForgetRequest{ConversationID: "b", TurnIDs: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("forget: %+v", f)
	recs, err := s.Requests(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if slices.Contains(r.Memory.MatchedTags, "zephyr") {
			t.Errorf("a's history still names the gone topic zephyr: %+v", r.Memory)
		}
	}
}

// TestForgetScrubsSummaryInclusions: the records here have the shape
// assemble and assembleHierarchy give them: a summary's inclusion is named by its unqualified id ("zephyr",
// "s1"), its conversation only in Summaries; a per-message summary is
// named by its turn's id.
func TestForgetScrubsSummaryInclusions(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: t.TempDir()})
	all := &RequestRecord{At: time.Now(), ConversationID: "a", Scope: ScopeAll, Memory: RequestMemory{
		TurnIDs: []string{"b/t3"},
		Summaries: []SummaryRef{{Kind: "tag", ID: "zephyr", Tag: "zephyr", ConversationID: "b"},
			{Kind: "segment", ID: "s1", Tag: "zephyr", ConversationID: "b"}},
		Included: []Inclusion{{ID: "b/t3", Kind: "turn", Tag: "other"},
			{ID: "zephyr", Kind: "tag", Tag: "zephyr"}, {ID: "s1", Kind: "segment", Tag: "zephyr"}},
	}}
	own := &RequestRecord{At: time.Now(), ConversationID: "c", Scope: ScopeConversation, Memory: RequestMemory{
		Summaries: []SummaryRef{{Kind: "message", ID: "t1", Tag: "x", ConversationID: "c"}},
		Included:  []Inclusion{{ID: "t1", Kind: "message", Tag: "x"}},
	}}
	for _, r := range []*RequestRecord{all, own} {
		if err := s.appendRequest(r, s.logRewrites.Load()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.scrubRequests("b", map[string]bool{"zephyr": true}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.scrubRequests("c", nil, map[string]bool{"t1": true}); err != nil {
		t.Fatal(err)
	}
	recs, _ := s.Requests(ctx, "a")
	for _, in := range recs[0].Memory.Included {
		if in.Tag == "zephyr" || in.ID == "zephyr" {
			t.Errorf("a's history still names b's gone topic: %+v", recs[0].Memory)
		}
	}
	recs, _ = s.Requests(ctx, "c")
	for _, sm := range recs[0].Memory.Summaries {
		if sm.ID == "t1" {
			t.Errorf("c's history still names its forgotten t1 (a message summary): %+v", recs[0].Memory)
		}
	}
}

// TestForgetLeavesOtherConversationsInItsOwnHistory: no over-scrubbing. a
// forgets its only turn (and so its topic zephyr); c's
// turn, in a's own history by a recall over every conversation, keeps its
// topic, and b's t1, named unqualified by a recall over every
// conversation made when only b had memory, is not a's t1.
func TestForgetLeavesOtherConversationsInItsOwnHistory(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Dir: t.TempDir()})
	ing := func(conv, text string) {
		if _, err := s.Ingest(ctx, IngestRequest{ConversationID: conv, Messages: []Message{msg("user", "", text, time.Time{})}}); err != nil {
			t.Fatal(err)
		}
	}
	ing("b", "lunch on friday at the noodle bar")
	if _, err := s.Recall(ctx, RecallRequest{ConversationID: "a", Message: "where is lunch?", Scope: ScopeAll}); err != nil {
		t.Fatal(err)
	}
	ing("a", "the deploy uses blue-green switching for the Zephyr service")
	ing("c", "the Zephyr account PIN is 4417")
	res, err := s.Recall(ctx, RecallRequest{ConversationID: "a", Message: "what about Zephyr?", Scope: ScopeAll})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res.Included)
	if _, err := s.Forget(ctx, ForgetRequest{ConversationID: "a", TurnIDs: []string{"t1"}}); err != nil {
		t.Fatal(err)
	}
	recs, err := s.Requests(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		t.Logf("%s: %v %+v", r.ID, r.Memory.TurnIDs, r.Memory.Included)
	}
	if !slices.Contains(recs[1].Memory.TurnIDs, "t1") && !slices.Contains(recs[1].Memory.TurnIDs, "b/t1") {
		t.Errorf("the first recall's b/t1 (named t1) was taken out by a's forget")
	}
	for _, in := range recs[0].Memory.Included {
		if in.ID == "c/t1" && in.Tag != "zephyr" {
			t.Errorf("c/t1 lost its topic, which c still has: %+v", in)
		}
	}
}
