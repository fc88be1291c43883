package memory

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// citySplitter splits any tag by the city a sample names.
type citySplitter struct {
	calls []SplitRequest
}

func (f *citySplitter) SplitTag(ctx context.Context, in SplitRequest) (SplitDecision, error) {
	f.calls = append(f.calls, in)
	d := SplitDecision{
		Subtags:     []string{in.Tag + "-kyoto", in.Tag + "-osaka", in.Tag},
		Aliases:     map[string]string{"kansai-" + in.Tag: in.Tag + "-osaka"},
		Assignments: map[int]string{},
	}
	for i, s := range in.Samples {
		switch {
		case strings.Contains(s, "Kyoto"):
			d.Assignments[i] = in.Tag + "-kyoto"
		case strings.Contains(s, "Osaka"):
			d.Assignments[i] = in.Tag + "-osaka"
		}
	}
	return d, nil
}

func TestSplitOverBroadTag(t *testing.T) {
	dir := t.TempDir()
	sp := &citySplitter{}
	s := openTest(t, Options{Dir: dir, Splitter: sp})
	var msgs []Message
	for i := 0; i < 60; i++ {
		city := []string{"Kyoto", "Osaka", "Nara"}[i%3]
		msgs = append(msgs, msg("user", "Ana", fmt.Sprintf("Japan itinerary: day %d in %s.", i+1, city), t0.Add(time.Duration(i)*time.Minute)))
	}
	ingest(t, s, "c", msgs)
	if len(sp.calls) != 1 {
		t.Fatalf("splitter called %d times, want 1", len(sp.calls))
	}
	parent := sp.calls[0].Tag
	if sp.calls[0].Count < splitMinTurns || len(sp.calls[0].Samples) != splitSamples {
		t.Fatalf("split request %+v", sp.calls[0])
	}
	c, _ := s.conversation(context.Background(), "c", false)
	kyoto := parent + "-kyoto"
	if c.vocab[kyoto] == 0 || c.vocab[parent+"-osaka"] == 0 {
		t.Fatalf("subtags not in vocabulary: %v", c.vocab)
	}
	for _, seq := range c.tagSeqs[kyoto] {
		tm := c.turn(seq)
		if !contains(tm.Tags, parent) {
			t.Fatalf("turn %d lost its parent tag: %v", seq, tm.Tags)
		}
	}
	// Later ingests offer other over-broad tags, one per call, but never the
	// same tag again until it doubles.
	for i := 0; i < 3; i++ {
		ingest(t, s, "c", []Message{msg("user", "Ana", fmt.Sprintf("Japan itinerary: extra day %d in Kyoto.", i), t0.Add(2*time.Hour+time.Duration(i)*time.Minute))})
	}
	seen := map[string]bool{}
	for _, call := range sp.calls {
		if seen[call.Tag] {
			t.Fatalf("tag %q offered twice: %d calls", call.Tag, len(sp.calls))
		}
		seen[call.Tag] = true
	}
	// The split survives a restart.
	s.Close()
	s2 := openTest(t, Options{Dir: dir})
	c2, err := s2.conversation(context.Background(), "c", false)
	if err != nil {
		t.Fatal(err)
	}
	if c2.vocab[kyoto] != c.vocab[kyoto] || c2.meta.Aliases["kansai-"+parent] != parent+"-osaka" {
		t.Fatalf("after reopen: %d %s turns (want %d), aliases %v", c2.vocab[kyoto], kyoto, c.vocab[kyoto], c2.meta.Aliases)
	}
	fq, err := s2.FindQuote(context.Background(), FindQuoteRequest{ConversationID: "c", Query: "Kyoto", MaxResults: 50})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range fq.Quotes {
		if contains(q.Tags, kyoto) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no quote carries the new tag %s", kyoto)
	}
}

func TestTagPriorityOrdersTopics(t *testing.T) {
	s := openTest(t, Options{TagPriority: func(tag string) int {
		if strings.Contains(tag, "rex") {
			return 10
		}
		return 0
	}})
	ingest(t, s, "c", chat(40, t0))
	r, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "zebra", MaxTokens: 2000})
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(r.Text, "## Topics on record")
	if i < 0 {
		t.Fatalf("no topic hint:\n%s", r.Text)
	}
	first := strings.TrimPrefix(strings.SplitN(r.Text[i:], "\n", 3)[1], "- ")
	if !strings.HasPrefix(first, "rex") {
		t.Fatalf("topic hint does not start with the prioritised tag: %q", first)
	}
}

func TestStatusReportsUsage(t *testing.T) {
	s := openTest(t, Options{Usage: func(id string) ([]LLMUsage, error) {
		return []LLMUsage{{Provider: "openai", Model: "m", Calls: 3, CostUSD: 0.01}}, nil
	}})
	st, err := s.Status(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Features.LLMUsage) != 1 || st.Features.LLMUsage[0].Calls != 3 {
		t.Fatalf("usage %+v", st.Features.LLMUsage)
	}
}
