package memory

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
	bolt "go.etcd.io/bbolt"
)

const (
	defaultExpandTokens = 4000
	// workingSetBudget is the token budget of a conversation's working set:
	// expanding past it evicts the least recently used topics.
	workingSetBudget = 12000
)

// Expand pages a topic in (expand_topic): it returns the topic's content at
// the asked depth (segment summaries, or the original turns read back from
// the master log) trimmed to the budget, and records the working-set change,
// evicting the coldest topics when over the working-set budget.
func (s *Store) Expand(ctx context.Context, req ExpandRequest) (ExpandResult, error) {
	res := ExpandResult{Evicted: []string{}, TurnIDs: []string{}, WorkingSet: []WorkingEntry{}, TruncationRefs: []TruncationRef{}}
	ctx, end, id, err := s.beginOn(ctx, opAppendRO, req.ConversationID)
	if err != nil {
		return res, err
	}
	defer end()
	res.ConversationID = id
	if req.Depth == "" {
		req.Depth = DepthSegments
	}
	if req.Depth != DepthSegments && req.Depth != DepthFull {
		return res, fmt.Errorf("%w: depth must be \"segments\" or \"full\" (got %q)", ErrInvalid, req.Depth)
	}
	budget, err := checkBudget(req.MaxTokens, defaultExpandTokens)
	if err != nil {
		return res, err
	}
	c, tag, unlock, err := s.lockTopic(ctx, id, req.Tag)
	if err != nil {
		return res, err
	}
	defer unlock()
	res.Tag, res.Depth = tag, req.Depth

	var b strings.Builder
	header := fmt.Sprintf("# Topic %s (%d turns)\n", tag, c.vocab[tag])
	b.WriteString(header)
	used := s.tok.Count(header)
	if ts, ok := c.tagSums[tag]; ok && req.Depth == DepthSegments {
		part := fmt.Sprintf("## Overview\n%s\n", ts.Summary)
		if n := s.tok.Count(part); used+n <= budget {
			b.WriteString(part)
			used += n
		}
	}
	switch req.Depth {
	case DepthSegments:
		// Segment summaries for the compacted part, original turns for what
		// has not been compacted yet (it has no summary).
		var left []int // turns of the topic's segments that did not fit
		for _, sg := range c.segs {
			if !contains(sg.Tags, tag) {
				continue
			}
			if res.Truncated {
				left = append(left, topicSeqs(c, tag, sg.First, sg.Last)...)
				continue
			}
			part := fmt.Sprintf("## %s · turns %s-%s · %s\n%s\n", sg.Primary, turnID(sg.First), turnID(sg.Last), sg.Start.Format("2 Jan 2006"), sg.Summary)
			n := s.tok.Count(part)
			if used+n > budget-noteReserve {
				res.Truncated = true
				left = append(left, topicSeqs(c, tag, sg.First, sg.Last)...)
				continue
			}
			b.WriteString(part)
			used += n
		}
		if res.Truncated {
			left = append(left, topicSeqs(c, tag, c.meta.CompactedThrough+1, len(c.turns))...)
			used = s.writeSpanRef(c, left, budget, used, &b, &res)
		}
		if !res.Truncated {
			used = s.writeTurns(c, tag, c.meta.CompactedThrough+1, budget, used, &b, &res)
		}
	case DepthFull:
		used = s.writeTurns(c, tag, 1, budget, used, &b, &res)
	}
	res.Text = strings.TrimRight(b.String(), "\n")
	res.Tokens = s.tok.Count(res.Text)

	// Record the working-set change: durably first, then in memory.
	now := s.now().UTC()
	working := maps.Clone(c.working)
	working[tag] = WorkingEntry{Tag: tag, Depth: req.Depth, Tokens: res.Tokens, LastAccess: now}
	evicted := evict(working, c.tagSums, tag)
	if err := s.saveWorking(c, working); err != nil {
		return res, err
	}
	res.Evicted = evicted
	res.WorkingSet = c.workingList()
	// With shared logs, the working-set change reaches the others before
	// the call reports success.
	return res, s.commitShared(ctx)
}

// writeTurns appends the tag's original turns from seq from on, reading them
// back from the master log, within the budget.
func (s *Store) writeTurns(c *conv, tag string, from, budget, used int, b *strings.Builder, res *ExpandResult) int {
	lastSession := -1
	seqs := topicSeqs(c, tag, from, len(c.turns))
	for i, seq := range seqs {
		t := c.turn(seq)
		rec, err := c.log.Read(t.Start, t.End)
		if err != nil {
			s.log.Warn("unreadable turn skipped", "conversation", c.id, "turn", seq, "err", err)
			continue
		}
		header := ""
		if t.Session != lastSession {
			header = sessionHeader(c, t, false) + "\n"
		}
		part := header + turnPrefix(t) + oneLine(rec.Content) + "\n"
		n := s.tok.Count(part)
		last := i == len(seqs)-1
		if used+n > budget || !last && used+n > budget-noteReserve {
			// What does not fit is named with a reference: this turn cut
			// (when a useful head of it fits), then the rest as one range.
			res.Truncated = true
			rest := seqs[i:]
			hn := s.tok.Count(header)
			if text, cn, ref, ok := s.cutTurn(c, t, rec.Content, budget-used-hn-noteReserve-1); ok {
				b.WriteString(header + text + "\n")
				used += hn + cn + 1
				res.TurnIDs = append(res.TurnIDs, turnID(seq))
				res.TruncationRefs = append(res.TruncationRefs, ref)
				rest = rest[1:]
			}
			return s.writeSpanRef(c, rest, budget, used, b, res)
		}
		lastSession = t.Session
		b.WriteString(part)
		used += n
		res.TurnIDs = append(res.TurnIDs, turnID(seq))
	}
	return used
}

// topicSeqs are the tag's turns in [from, to].
func topicSeqs(c *conv, tag string, from, to int) []int {
	var out []int
	for _, seq := range c.tagSeqs[tag] {
		if seq >= from && seq <= to {
			out = append(out, seq)
		}
	}
	return out
}

// writeSpanRef names turns seqs, left out for the budget, with one
// reference to their records, when it fits.
func (s *Store) writeSpanRef(c *conv, seqs []int, budget, used int, b *strings.Builder, res *ExpandResult) int {
	ref, ok := s.spanRef(c, seqs)
	if !ok {
		return used
	}
	preview := ""
	if t := c.turn(seqs[0]); t != nil {
		if rec, err := c.log.Read(t.Start, t.End); err == nil {
			preview = s.tok.Truncate(rec.Content, previewTokens)
		}
	}
	for _, p := range []string{preview, ""} {
		note := ref.note(p) + "\n"
		if n := s.tok.Count(note); used+n <= budget {
			b.WriteString(note)
			res.TruncationRefs = append(res.TruncationRefs, ref)
			return used + n
		}
	}
	return used
}

// Collapse pages a topic out (collapse_topic): to its summary, or out of
// the working set entirely. It reports the tokens freed.
func (s *Store) Collapse(ctx context.Context, req CollapseRequest) (CollapseResult, error) {
	res := CollapseResult{WorkingSet: []WorkingEntry{}}
	ctx, end, id, err := s.beginOn(ctx, opAppendRO, req.ConversationID)
	if err != nil {
		return res, err
	}
	defer end()
	res.ConversationID = id
	if req.Depth == "" {
		req.Depth = DepthSummary
	}
	if req.Depth != DepthSummary && req.Depth != DepthNone {
		return res, fmt.Errorf("%w: depth must be \"summary\" or \"none\" (got %q)", ErrInvalid, req.Depth)
	}
	c, tag, unlock, err := s.lockTopic(ctx, id, req.Tag)
	if err != nil {
		return res, err
	}
	defer unlock()
	res.Tag, res.Depth = tag, req.Depth
	before := c.working[tag].Tokens
	after := 0
	working := maps.Clone(c.working)
	if req.Depth == DepthSummary {
		if ts, ok := c.tagSums[tag]; ok {
			after = ts.Tokens
		}
		working[tag] = WorkingEntry{Tag: tag, Depth: DepthSummary, Tokens: after, LastAccess: s.now().UTC()}
	} else {
		delete(working, tag)
	}
	if err := s.saveWorking(c, working); err != nil {
		return res, err
	}
	res.TokensFreed = max(0, before-after)
	res.WorkingSet = c.workingList()
	return res, s.commitShared(ctx)
}

// findTag resolves a tag name as a user may type it to a stored tag.
func (c *conv) findTag(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fmt.Errorf("%w: tag must not be empty", ErrInvalid)
	}
	if c.vocab[name] > 0 {
		return name, nil
	}
	canon := tagging.Canonicalize(name, nil)
	if c.vocab[canon] > 0 {
		return canon, nil
	}
	// Suggest the closest existing tags.
	var near []string
	for tag := range c.vocab {
		if strings.Contains(tag, canon) || canon != "" && strings.Contains(canon, tag) {
			near = append(near, tag)
		}
	}
	sort.Slice(near, func(i, j int) bool { return c.vocab[near[i]] > c.vocab[near[j]] })
	if len(near) > 5 {
		near = near[:5]
	}
	hint := "domain_status lists the tags"
	if len(near) > 0 {
		hint = "did you mean " + strings.Join(near, ", ") + "?"
	}
	return "", fmt.Errorf("%w: no tag %q in conversation %q; %s", ErrNotFound, name, c.id, hint)
}

// evict collapses the least recently used expanded topics of working
// (never keep) to their summaries until it fits its budget.
func evict(working map[string]WorkingEntry, tagSums map[string]*tagSummaryRec, keep string) []string {
	evicted := []string{}
	total := 0
	for _, w := range working {
		total += w.Tokens
	}
	for total > workingSetBudget {
		var coldest *WorkingEntry
		for tag, w := range working {
			if tag == keep || w.Depth == DepthSummary || w.Depth == DepthNone {
				continue
			}
			if coldest == nil || w.LastAccess.Before(coldest.LastAccess) || w.LastAccess.Equal(coldest.LastAccess) && w.Tag < coldest.Tag {
				wc := w
				coldest = &wc
			}
		}
		if coldest == nil {
			break
		}
		after := 0
		if ts, ok := tagSums[coldest.Tag]; ok {
			after = ts.Tokens
		}
		total -= coldest.Tokens - after
		working[coldest.Tag] = WorkingEntry{Tag: coldest.Tag, Depth: DepthSummary, Tokens: after, LastAccess: coldest.LastAccess}
		evicted = append(evicted, coldest.Tag)
	}
	return evicted
}

func (c *conv) workingList() []WorkingEntry {
	out := make([]WorkingEntry, 0, len(c.working))
	for _, w := range c.working {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastAccess.Equal(out[j].LastAccess) {
			return out[i].LastAccess.After(out[j].LastAccess)
		}
		return out[i].Tag < out[j].Tag
	})
	return out
}

// saveWorking makes working the conversation's working set: recorded in
// the decisions log, committed to bbolt, then in memory, so that a failure
// leaves the previous set everywhere. c's writer lock is held; mu is taken
// for the change in memory.
func (s *Store) saveWorking(c *conv, working map[string]WorkingEntry) error {
	list := make([]WorkingEntry, 0, len(working))
	for _, w := range working {
		list = append(list, w)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Tag < list[j].Tag })
	end, err := s.recordDecision(c, decision{Kind: decWorking, Working: list})
	if err != nil {
		return err
	}
	meta := c.meta
	meta.DecisionsSize = end
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := convBucket(tx, c.id)
		if err != nil {
			return err
		}
		if err := putWorking(b, working); err != nil {
			return err
		}
		return putMeta(tx, meta)
	})
	if err != nil {
		return fmt.Errorf("save working set of %s: %w", c.id, err)
	}
	c.mu.Lock()
	c.meta, c.working = meta, working
	c.mu.Unlock()
	return nil
}

// putWorking replaces the working-set bucket of a conversation bucket.
func putWorking(b *bolt.Bucket, working map[string]WorkingEntry) error {
	if err := b.DeleteBucket(bucketWorking); err != nil {
		return fmt.Errorf("reset working set: %w", err)
	}
	wb, err := b.CreateBucket(bucketWorking)
	if err != nil {
		return fmt.Errorf("create working set: %w", err)
	}
	for tag, w := range working {
		if err := putJSON(wb, []byte(tag), w); err != nil {
			return err
		}
	}
	return nil
}

// lockTopic loads a conversation, takes its writer lock and resolves a tag
// name in it. The caller must call unlock, and takes c.mu as well to change
// the state (saveWorking does).
func (s *Store) lockTopic(ctx context.Context, convID, name string) (c *conv, tag string, unlock func(), err error) {
	c, err = s.conversation(ctx, convID, false)
	if err != nil {
		return nil, "", nil, err
	}
	c.wmu.Lock()
	tag, err = c.findTag(name)
	if err != nil {
		c.wmu.Unlock()
		return nil, "", nil, err
	}
	return c, tag, c.wmu.Unlock, nil
}

// pagedIn reports whether a turn belongs to a topic the model expanded
// (expand_topic) and has not collapsed. c.mu is held.
// anyPagedIn reports whether any topic of c is paged in (pagedIn can be
// true for some turn).
func (c *conv) anyPagedIn() bool {
	for _, w := range c.working {
		if w.Depth == DepthFull || w.Depth == DepthSegments {
			return true
		}
	}
	return false
}

func (c *conv) pagedIn(t *turnMeta) bool {
	for _, tag := range t.Tags {
		if w, ok := c.working[tag]; ok && (w.Depth == DepthFull || w.Depth == DepthSegments) {
			return true
		}
	}
	return false
}
