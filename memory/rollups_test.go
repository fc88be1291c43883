package memory

import (
	"context"
	"strings"
	"testing"
)

// TestRollupsAreEarned compacts the shared scripted conversation and checks
// that only topics spanning several segments get a Layer 2 summary: a
// rollup of one segment would repeat that segment's summary.
func TestRollupsAreEarned(t *testing.T) {
	s := openTest(t, Options{ProtectedTurns: 2})
	msgs := loadConversation(t)
	for i := 0; i < len(msgs); i += 4 {
		req := IngestRequest{ConversationID: "r", Messages: msgs[i:min(i+4, len(msgs))], Force: true}
		if _, err := s.Ingest(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Status(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Segments < 2 {
		t.Fatalf("%d segments: the fixture no longer compacts", st.Totals.Segments)
	}
	c, err := s.conversation(context.Background(), "r", false)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	segTags := map[string]int{}
	for _, sg := range c.segs {
		for _, tag := range sg.Tags {
			segTags[tag]++
		}
	}
	earned := 0
	for tag, n := range segTags {
		if n >= rollupMinSegments {
			earned++
		}
		if _, ok := c.tagSums[tag]; ok && n < rollupMinSegments {
			t.Errorf("tag %q on %d segment(s) has a rollup", tag, n)
		}
	}
	if len(c.tagSums) == 0 || len(c.tagSums) > earned {
		t.Errorf("%d rollups; %d tags span %d+ segments", len(c.tagSums), earned, rollupMinSegments)
	}
	t.Logf("%d turns, %d segments, %d segment tags, %d rollups", len(msgs), len(c.segs), len(segTags), len(c.tagSums))
}

func TestSpread(t *testing.T) {
	tests := []struct {
		n, total int
		want     bool
	}{
		{1, 2, false}, {5, 5, false}, // too few units to judge
		{3, 6, false}, {4, 6, true}, {10, 30, false}, {16, 30, true},
	}
	for _, tt := range tests {
		if got := spread(tt.n, tt.total); got != tt.want {
			t.Errorf("spread(%d, %d) = %v, want %v", tt.n, tt.total, got, tt.want)
		}
	}
}

// TestSegmentSummariesCarryFacts compacts the shared scripted conversation
// with the built-in (extractive) summariser at compaction's own budgets
// and checks that the segment summaries carry the names, numbers, dates
// and findings a person would keep, not a fragment of tool output.
func TestSegmentSummariesCarryFacts(t *testing.T) {
	s := openTest(t, Options{ProtectedTurns: 2})
	if _, err := s.Ingest(context.Background(), IngestRequest{ConversationID: "f", Messages: loadConversation(t), Force: true}); err != nil {
		t.Fatal(err)
	}
	c, err := s.conversation(context.Background(), "f", false)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var all []string
	for _, sg := range c.segs {
		all = append(all, sg.Summary)
	}
	text := strings.Join(all, "\n")
	for _, fact := range []string{"Postgres 16", "15 April", "Rex", "Thursday at 4 pm", "Hiiragiya", "12 to 15 May", "Lena", "Berlin", "orders_cdc"} {
		if !strings.Contains(text, fact) {
			t.Errorf("segment summaries lack %q:\n%s", fact, text)
		}
	}
	for _, sg := range c.segs {
		if strings.Contains(sg.Summary, "(1 row)") || strings.Contains(sg.Summary, "--+--") {
			t.Errorf("segment %d summary is tool output: %q", sg.ID, sg.Summary)
		}
	}
}
