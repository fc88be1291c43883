package memory

import (
	"context"
	"errors"
	"sort"
)

// Status describes a conversation's memory (domain_status): every tag with
// its turn and segment counts, full and summary tokens, first and last seen
// and working-set depth; totals; and which features are enabled. A
// conversation with nothing stored yet has an empty status, not an error.
func (s *Store) Status(ctx context.Context, conversationID string) (Status, error) {
	ctx, end, id, err := s.beginOn(ctx, opRead, conversationID)
	if err != nil {
		return Status{}, err
	}
	defer end()
	st := Status{ConversationID: id, Tags: []TagStatus{}, Features: s.features()}
	if s.opts.Usage != nil {
		u, err := s.opts.Usage(id)
		if err != nil {
			s.log.Warn("reading LLM usage failed", "conversation", id, "err", err)
		}
		st.Features.LLMUsage = u
	}
	ids, err := s.conversationIDs()
	if err != nil {
		return st, err
	}
	st.Totals.Conversations = len(ids)
	c, err := s.conversation(ctx, id, false)
	if err != nil {
		if isNotFound(err) {
			return st, nil
		}
		return st, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for tag := range c.vocab {
		st.Tags = append(st.Tags, c.tagStatus(tag))
	}
	sort.Slice(st.Tags, func(i, j int) bool {
		if st.Tags[i].Turns != st.Tags[j].Turns {
			return st.Tags[i].Turns > st.Tags[j].Turns
		}
		return st.Tags[i].Tag < st.Tags[j].Tag
	})
	st.Totals.Turns = len(c.turns)
	st.Totals.Segments = len(c.segs)
	st.Totals.TagSummaries = len(c.tagSums)
	st.Totals.Tokens = c.tokens
	st.Totals.ActiveTokens = c.active
	st.Totals.CompactedTokens = c.tokens - c.active
	st.Totals.LogBytes = c.meta.LogSize
	st.Totals.DamagedRecords = c.damaged
	return st, nil
}

func (c *conv) tagStatus(tag string) TagStatus {
	ts := TagStatus{Tag: tag, Turns: c.vocab[tag], Depth: DepthNone}
	seqs := c.tagSeqs[tag]
	for _, seq := range seqs {
		ts.FullTokens += c.turns[seq-1].Tokens
	}
	if len(seqs) > 0 {
		ts.FirstSeen = c.turns[seqs[0]-1].When
		ts.LastSeen = c.turns[seqs[len(seqs)-1]-1].When
	}
	for _, sg := range c.segs {
		if contains(sg.Tags, tag) {
			ts.Segments++
		}
	}
	if sum, ok := c.tagSums[tag]; ok {
		ts.SummaryTokens = sum.Tokens
		ts.Description = sum.Description
		ts.Depth = DepthSummary
	}
	if w, ok := c.working[tag]; ok {
		ts.Depth = w.Depth
	}
	return ts
}

// Domain returns one tag's summaries and segments (the
// virtualcontext://domains/{tag} resource).
func (s *Store) Domain(ctx context.Context, conversationID, tag string) (Domain, error) {
	ctx, end, id, err := s.beginOn(ctx, opRead, conversationID)
	if err != nil {
		return Domain{}, err
	}
	defer end()
	c, err := s.conversation(ctx, id, false)
	if err != nil {
		return Domain{}, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	name, err := c.findTag(tag)
	if err != nil {
		return Domain{}, err
	}
	d := Domain{ConversationID: id, Tag: name, Segments: []Segment{}, Status: c.tagStatus(name)}
	if sum, ok := c.tagSums[name]; ok {
		d.Summary, d.Description = sum.Summary, sum.Description
	}
	for _, sg := range c.segs {
		if !contains(sg.Tags, name) {
			continue
		}
		d.Segments = append(d.Segments, Segment{
			ID: segmentName(sg.ID), ConversationID: id, Primary: sg.Primary, Tags: sg.Tags,
			FirstTurn: turnID(sg.First), LastTurn: turnID(sg.Last), Turns: sg.Last - sg.First + 1,
			Start: sg.Start, End: sg.End, Summary: sg.Summary, SummaryTokens: sg.SummaryTokens,
			FullTokens: sg.FullTokens, Method: sg.Method, Version: sg.Version, CreatedAt: sg.CreatedAt,
		})
	}
	return d, nil
}

func segmentName(id int) string { return "s" + itoa(id) }

// Conversations lists every conversation in the store.
func (s *Store) Conversations(ctx context.Context) ([]ConversationInfo, error) {
	ctx, end, err := s.begin(ctx, opRead)
	if err != nil {
		return nil, err
	}
	defer end()
	ids, err := s.conversationIDs()
	if err != nil {
		return nil, err
	}
	out := []ConversationInfo{}
	for _, id := range ids {
		c, err := s.conversation(ctx, id, false)
		switch {
		case err == nil:
		case isNotFound(err) || errors.Is(err, ErrForbidden):
			continue
		case errors.Is(err, errDamagedDB):
			// Listed, with what to do: the others are still listed.
			out = append(out, ConversationInfo{ID: id, Damaged: err.Error()})
			continue
		default:
			return out, err
		}
		c.mu.RLock()
		info := ConversationInfo{ID: id, Turns: len(c.turns), Tokens: c.tokens}
		if len(c.turns) > 0 {
			info.FirstSeen, info.LastSeen = c.turns[0].When, c.turns[len(c.turns)-1].When
		}
		c.mu.RUnlock()
		out = append(out, info)
	}
	return out, nil
}

// eachConversation calls fn for every stored conversation, in id order,
// under the conversation's read lock. The caller is inside an operation.
func (s *Store) eachConversation(ctx context.Context, fn func(id string, c *conv)) error {
	ids, err := s.conversationIDs()
	if err != nil {
		return err
	}
	for _, id := range ids {
		c, err := s.conversation(ctx, id, false)
		if err != nil {
			if isNotFound(err) || errors.Is(err, ErrForbidden) {
				continue
			}
			return err
		}
		c.mu.RLock()
		fn(id, c)
		c.mu.RUnlock()
	}
	return nil
}

// features reports what is enabled and, when not, why.
func (s *Store) features() Features {
	var f Features
	if s.ro != nil {
		f.ReadOnly, f.ReadOnlyReason = true, s.ro.error().Error()
	}
	switch e := s.opts.Embedder.(type) {
	case nil:
		f.EmbeddingsReason = "no embedding model configured (lexical recall only)"
	case Readiness:
		f.Embeddings, f.EmbeddingsReason = e.Ready()
	default:
		f.Embeddings = true
	}
	var llm []any
	if s.opts.Tagger != nil {
		llm = append(llm, s.opts.Tagger)
	}
	if s.opts.Summarizer != nil {
		llm = append(llm, s.opts.Summarizer)
	}
	if len(llm) == 0 {
		f.LLMReason = "no LLM configured: keyword tagging and extractive summaries"
	}
	for _, x := range llm {
		if r, ok := x.(Readiness); ok {
			ok, why := r.Ready()
			f.LLM = ok
			if why != "" {
				f.LLMReason = why
			}
		} else {
			f.LLM = true
		}
	}
	return f
}
