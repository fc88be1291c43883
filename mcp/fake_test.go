package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

// fakeMemory is a small in-memory Memory for the adapter's unit tests: it
// keeps messages per conversation, answers recall and find_quote by
// substring, and returns memory's sentinel errors where the real store
// would. The end-to-end tests use the real store.
type fakeMemory struct {
	mu       sync.Mutex
	turns    map[string][]fakeTurn
	maxBytes int
	// failWith, when set, is returned by every method (fault injection).
	failWith error
	// progressSteps is how many progress callbacks Ingest makes.
	progressSteps int
	// panicOn makes the named method panic.
	panicOn string
}

type fakeTurn struct {
	id, role, name, text string
}

func newFakeMemory() *fakeMemory {
	return &fakeMemory{turns: map[string][]fakeTurn{}, maxBytes: 1 << 20}
}

func conv(id string) string {
	if id == "" {
		return "default"
	}
	return id
}

func (f *fakeMemory) Ingest(ctx context.Context, req memory.IngestRequest) (memory.IngestResult, error) {
	if f.panicOn == "Ingest" {
		panic("boom")
	}
	if f.failWith != nil {
		return memory.IngestResult{}, f.failWith
	}
	var texts []string
	for i, m := range req.Messages {
		if len(m.Content) > f.maxBytes {
			return memory.IngestResult{}, fmt.Errorf("%w: messages[%d] is %d bytes, over the limit of %d bytes (max_message_bytes)", memory.ErrTooLarge, i, len(m.Content), f.maxBytes)
		}
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			s = string(m.Content)
		}
		texts = append(texts, s)
	}
	for i := 1; i <= f.progressSteps; i++ {
		if req.Progress != nil {
			req.Progress(i, f.progressSteps, fmt.Sprintf("step %d", i))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := conv(req.ConversationID)
	res := memory.IngestResult{ConversationID: c}
	for i, m := range req.Messages {
		dup := false
		for _, t := range f.turns[c] {
			if t.role == m.Role && t.text == texts[i] {
				dup = true
			}
		}
		if dup {
			res.Duplicates++
			continue
		}
		id := fmt.Sprintf("%s-%d", c, len(f.turns[c])+1)
		f.turns[c] = append(f.turns[c], fakeTurn{id: id, role: m.Role, name: m.Name, text: texts[i]})
		res.Stored++
		res.TurnIDs = append(res.TurnIDs, id)
	}
	res.TotalTurns = len(f.turns[c])
	res.Tags = []string{"general"}
	return res, nil
}

func (f *fakeMemory) match(c, q string) []fakeTurn {
	var out []fakeTurn
	for _, t := range f.turns[c] {
		for w := range strings.FieldsSeq(strings.ToLower(q)) {
			if strings.Contains(strings.ToLower(t.text), w) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

func (f *fakeMemory) Recall(ctx context.Context, req memory.RecallRequest) (memory.RecallResult, error) {
	if f.panicOn == "Recall" {
		panic("boom")
	}
	if f.failWith != nil {
		return memory.RecallResult{}, f.failWith
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	res := memory.RecallResult{Signals: []string{"bm25"}, Breakdown: memory.TokenBreakdown{Budget: req.MaxTokens}}
	var b strings.Builder
	for _, t := range f.match(conv(req.ConversationID), req.Message) {
		fmt.Fprintf(&b, "[%s] %s\n", t.role, t.text)
		res.TurnIDs = append(res.TurnIDs, t.id)
	}
	res.Text = b.String()
	res.Tokens = len(strings.Fields(res.Text))
	return res, nil
}

func (f *fakeMemory) Expand(ctx context.Context, req memory.ExpandRequest) (memory.ExpandResult, error) {
	if f.failWith != nil {
		return memory.ExpandResult{}, f.failWith
	}
	if req.Tag != "general" {
		return memory.ExpandResult{}, fmt.Errorf("%w: no tag %q in conversation %q; domain_status lists the tags", memory.ErrNotFound, req.Tag, conv(req.ConversationID))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	res := memory.ExpandResult{ConversationID: conv(req.ConversationID), Tag: req.Tag, Depth: req.Depth}
	for _, t := range f.turns[conv(req.ConversationID)] {
		fmt.Fprintf(&b, "[%s] %s\n", t.role, t.text)
		res.TurnIDs = append(res.TurnIDs, t.id)
	}
	res.Text = b.String()
	return res, nil
}

func (f *fakeMemory) Collapse(ctx context.Context, req memory.CollapseRequest) (memory.CollapseResult, error) {
	if f.failWith != nil {
		return memory.CollapseResult{}, f.failWith
	}
	if req.Tag != "general" {
		return memory.CollapseResult{}, fmt.Errorf("%w: no tag %q", memory.ErrNotFound, req.Tag)
	}
	return memory.CollapseResult{ConversationID: conv(req.ConversationID), Tag: req.Tag, Depth: req.Depth, TokensFreed: 42}, nil
}

func (f *fakeMemory) FindQuote(ctx context.Context, req memory.FindQuoteRequest) (memory.FindQuoteResult, error) {
	if f.failWith != nil {
		return memory.FindQuoteResult{}, f.failWith
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	res := memory.FindQuoteResult{Query: req.Query}
	for _, t := range f.match(conv(req.ConversationID), req.Query) {
		res.Quotes = append(res.Quotes, memory.Quote{
			TurnID: t.id, ConversationID: conv(req.ConversationID), Role: t.role, Speaker: t.name,
			Timestamp: time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC), Excerpt: t.text, Tags: []string{"general"},
			Ref: memory.LogRef{File: "logs/" + conv(req.ConversationID) + ".jsonl", Start: 0, End: 10}, Match: "lexical",
		})
		if len(res.Quotes) == req.MaxResults {
			break
		}
	}
	return res, nil
}

func (f *fakeMemory) Status(ctx context.Context, id string) (memory.Status, error) {
	if f.failWith != nil {
		return memory.Status{}, f.failWith
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := conv(id)
	st := memory.Status{ConversationID: c, Totals: memory.Totals{Conversations: len(f.turns), Turns: len(f.turns[c])}}
	if n := len(f.turns[c]); n > 0 {
		st.Tags = []memory.TagStatus{{Tag: "general", Turns: n, Depth: memory.DepthSummary}}
	}
	return st, nil
}

func (f *fakeMemory) Domain(ctx context.Context, id, tag string) (memory.Domain, error) {
	if f.failWith != nil {
		return memory.Domain{}, f.failWith
	}
	if tag != "general" {
		return memory.Domain{}, fmt.Errorf("%w: no tag %q in conversation %q", memory.ErrNotFound, tag, conv(id))
	}
	return memory.Domain{ConversationID: conv(id), Tag: tag, Summary: "Everything else.",
		Segments: []memory.Segment{{ID: "seg-1", Turns: 2, Summary: "They said hello."}}}, nil
}

func (f *fakeMemory) Conversations(ctx context.Context) ([]memory.ConversationInfo, error) {
	if f.failWith != nil {
		return nil, f.failWith
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []memory.ConversationInfo
	for id, ts := range f.turns {
		out = append(out, memory.ConversationInfo{ID: id, Turns: len(ts)})
	}
	return out, nil
}

var errDisk = errors.New("disk on fire: /secret/path")

// CompactMessages keeps the system messages and the last two, with a
// summary naming how many were replaced (the real one is tested end to end).
func (f *fakeMemory) CompactMessages(ctx context.Context, req memory.ReplaceRequest) (memory.ReplaceResult, error) {
	if f.failWith != nil {
		return memory.ReplaceResult{}, f.failWith
	}
	keep := 2
	if req.KeepLast != nil {
		keep = *req.KeepLast
	}
	var sys, rest []memory.Message
	for _, m := range req.Messages {
		if m.Role == "system" {
			sys = append(sys, m)
		} else {
			rest = append(rest, m)
		}
	}
	cut := max(0, len(rest)-keep)
	summary := fmt.Sprintf("%d messages replaced", cut)
	content, _ := json.Marshal(summary)
	out := append(sys, memory.Message{Role: "system", Content: content, ID: memory.SummaryIDPrefix + "fake"})
	out = append(out, rest[cut:]...)
	return memory.ReplaceResult{Replacement: memory.Replacement{ConversationID: conv(req.ConversationID), Compacted: cut > 0, Replaced: cut, Kept: len(out) - 1},
		Messages: out, Summary: summary}, nil
}
