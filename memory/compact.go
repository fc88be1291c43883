package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
	bolt "go.etcd.io/bbolt"
)

type compactResult struct {
	segments int
	freed    int
}

// segmentPlan is a segment about to be summarised.
type segmentPlan struct {
	rec   segmentRec
	turns []summarize.Turn
	// inTags are the tags the summariser was given (rec.Tags before it
	// added its own).
	inTags []string
}

// maybeCompact compacts the conversation when its uncompacted turns cross
// the soft threshold (or always with force): one greedy batch of the oldest
// unprotected turns becomes Layer 1 segments, and every tag they carry gets
// its Layer 2 summary rebuilt. Summarising runs without the conversation's
// lock held, so reads and ingests go on meanwhile.
func (s *Store) maybeCompact(ctx context.Context, c *conv, force bool, progress Progress) (compactResult, error) {
	var res compactResult
	c.compactMu.Lock()
	defer c.compactMu.Unlock()

	plans, through, err := s.planCompaction(c, force)
	if err != nil || len(plans) == 0 {
		return res, err
	}
	var done atomic.Int64
	total := len(plans) // segments; the topics to roll up are added once known
	step := func(msg string) {
		if progress != nil {
			progress(int(done.Add(1)), total, msg)
		}
	}
	if err := s.summariseSegments(ctx, c.id, plans, step); err != nil {
		return res, err
	}

	// Layer 2: every non-general tag on the new segments gets its rollup
	// updated with them.
	c.mu.RLock()
	nextID := len(c.segs) + 1
	fresh := make([]*segmentRec, len(plans))
	for i := range plans {
		plans[i].rec.ID = nextID + i
		fresh[i] = &plans[i].rec
	}
	// An extractive segment is recorded by reference when replay can make
	// it again from the same inputs (segmentref.go).
	segRefs := make([]*segmentRef, len(plans))
	for i := range plans {
		if ref, ok := s.segmentReference(ctx, c, &plans[i]); ok {
			segRefs[i] = &ref
		}
	}
	touched := c.rollupTags(fresh)
	inputs := c.incrementalRollups(touched, fresh)
	prevs := make(map[string]*tagSummaryRec, len(touched))
	for _, t := range touched {
		prevs[t] = c.tagSums[t]
	}
	c.mu.RUnlock()
	total += len(touched)
	rollups, err := s.rollup(ctx, c.id, touched, inputs, step)
	if err != nil {
		return res, err
	}
	replayable := s.replayable(ctx, rollups, inputs)

	// Commit: the decision and the bbolt transaction holding the writer
	// lock only, then the state under mu as well.
	c.wmu.Lock()
	defer c.wmu.Unlock()
	meta := c.meta
	meta.CompactedThrough = through
	freedFull, summaryTokens := 0, 0
	dec := decision{Kind: decCompact, Through: through}
	made := make([]segmentRec, len(plans))
	for i := range plans {
		made[i] = plans[i].rec
		if segRefs[i] != nil {
			dec.SegRefs = append(dec.SegRefs, *segRefs[i])
		} else {
			dec.Segments = append(dec.Segments, plans[i].rec)
		}
	}
	for _, r := range rollups {
		// An extractive rollup is recorded by reference when replay can
		// make it again from the same inputs (rollupref.go).
		if ref, ok := rollupReference(r, prevs[r.Tag], c.tagSums[r.Tag], replayable[r.Tag]); ok {
			if slices.Equal(ref.Add, derivedAdd(r.Tag, made)) {
				ref.Add = nil // replay derives it
			}
			dec.TagRefs = append(dec.TagRefs, ref)
		} else {
			dec.TagSums = append(dec.TagSums, *r)
		}
	}
	if meta.DecisionsSize, err = s.recordDecision(c, dec); err != nil {
		return res, err
	}
	meta.SummaryGen++
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := convBucket(tx, c.id)
		if err != nil {
			return err
		}
		// The turns' records are left as they are: loading gives each
		// turn its segment from the segments' ranges (loadConv).
		sb, rb := b.Bucket(bucketSegments), b.Bucket(bucketTagSums)
		segs := make([]*segmentRec, len(plans))
		for i := range plans {
			segs[i] = &plans[i].rec
		}
		if err := putSegments(sb, segs...); err != nil {
			return err
		}
		for _, r := range rollups {
			if err := putTagSum(rb, r); err != nil {
				return err
			}
		}
		return putMeta(tx, meta)
	})
	if err != nil {
		return res, fmt.Errorf("commit compaction of %s: %w", c.id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.meta = meta
	for i := range plans {
		r := plans[i].rec
		rec := r
		c.segs = append(c.segs, &rec)
		for seq := r.First; seq <= r.Last; seq++ {
			c.turns[seq-1].Segment = r.ID
		}
		freedFull += r.FullTokens
		summaryTokens += r.SummaryTokens
	}
	for _, r := range rollups {
		c.tagSums[r.Tag] = r
	}
	c.active = 0
	for seq := through + 1; seq <= len(c.turns); seq++ {
		c.active += c.turns[seq-1].Tokens
	}
	// Summaries are not in the full-text index: both searches (recall's
	// lexical signal, find_quote) look for turns only.
	if c.meta.SummariesIndexed == c.meta.SummaryGen-1 {
		c.meta.SummariesIndexed = c.meta.SummaryGen
	}
	s.notifyCompacted(c, fresh, rollups)
	res.segments = len(plans)
	res.freed = max(0, freedFull-summaryTokens)
	s.log.Info("compacted", "conversation", c.id, "segments", res.segments, "tokens_freed", res.freed, "through", through)
	return res, nil
}

const tagSummaryTokens = 300

// summariseSegments writes the Layer 1 summary of each plan, several at a
// time (a model-backed summariser waits on the network), each result in its
// own slot. No lock is held.
func (s *Store) summariseSegments(ctx context.Context, convID string, plans []segmentPlan, step func(string)) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.SummaryConcurrency)
	for i := range plans {
		p := &plans[i]
		g.Go(func() error {
			p.inTags = slices.Clone(p.rec.Tags)
			if err := s.summariseSegment(gctx, s.sum, convID, &p.rec, p.inTags, p.turns); err != nil {
				return fmt.Errorf("summarise segment of %s: %w", convID, err)
			}
			p.rec.CreatedAt = s.now().UTC()
			step("summarised segment " + p.rec.Primary)
			return nil
		})
	}
	return g.Wait()
}

// tagsOf lists the non-general tags of segments, sorted.
func tagsOf(segs []*segmentRec) []string {
	var out []string
	for _, sg := range segs {
		for _, t := range sg.Tags {
			if t != tagging.General && !contains(out, t) {
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// rollupInput is what one tag's Layer 2 summary is made from.
type rollupInput struct {
	texts    []string // summaries to roll up, oldest first
	segments []int    // every segment the tag's summary covers
}

// fullRollups rolls every tag up from all of its segments (regeneration).
func fullRollups(tags []string, segs []*segmentRec) map[string]rollupInput {
	in := make(map[string]rollupInput, len(tags))
	for _, t := range tags {
		in[t] = rollupInput{}
	}
	for _, sg := range segs {
		for _, t := range sg.Tags {
			if r, ok := in[t]; ok {
				in[t] = rollupInput{append(r.texts, sg.Summary), append(r.segments, sg.ID)}
			}
		}
	}
	return in
}

// incrementalRollups updates each tag's existing Layer 2 summary with its
// new segments only, so the cost of a compaction does not grow with the
// conversation's length. c.mu is held for reading.
func (c *conv) incrementalRollups(tags []string, fresh []*segmentRec) map[string]rollupInput {
	in := make(map[string]rollupInput, len(tags))
	for _, t := range tags {
		var r rollupInput
		if prev, ok := c.tagSums[t]; ok {
			r.texts = []string{prev.Summary}
			r.segments = append([]int(nil), prev.Segments...)
		}
		for _, sg := range fresh {
			if contains(sg.Tags, t) {
				r.texts = append(r.texts, sg.Summary)
				r.segments = append(r.segments, sg.ID)
			}
		}
		in[t] = r
	}
	return in
}

// rollup writes the Layer 2 summary of each tag from its inputs. No lock
// is held.
func (s *Store) rollup(ctx context.Context, convID string, tags []string, inputs map[string]rollupInput, step func(string)) ([]*tagSummaryRec, error) {
	rollups := make([]*tagSummaryRec, len(tags))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.SummaryConcurrency)
	for i, t := range tags {
		in := inputs[t]
		g.Go(func() error {
			r, err := s.rollupWith(gctx, s.sum, convID, t, in)
			if err != nil {
				return err
			}
			r.UpdatedAt = s.now().UTC()
			rollups[i] = r
			step("summarised topic " + t)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return rollups, nil
}

// rollupWith writes one tag's Layer 2 summary from its inputs with sum
// (UpdatedAt left for the caller).
func (s *Store) rollupWith(ctx context.Context, sum Summarizer, convID, tag string, in rollupInput) (*tagSummaryRec, error) {
	out, err := sum.Summarize(ctx, summarize.Input{ConversationID: convID, Kind: summarize.Tag, Tag: tag, Segments: in.texts, MaxTokens: tagSummaryTokens})
	if err != nil {
		return nil, fmt.Errorf("summarise tag %s of %s: %w", tag, convID, err)
	}
	text := s.tok.Truncate(out.Summary, tagSummaryTokens)
	return &tagSummaryRec{
		Tag: tag, Summary: text, Description: out.Description, Tokens: s.tok.Count(text),
		Segments: in.segments, Method: out.Method, Version: out.Version,
	}, nil
}

// segmentSummaryTokens sizes a Layer 1 summary: about a quarter of the
// segment, between 40 and 250 tokens.
func segmentSummaryTokens(full int) int {
	return min(250, max(40, full/4))
}

// planCompaction chooses the batch and cuts it into segments, reading the
// turns' text. It takes c.mu for reading.
func (s *Store) planCompaction(c *conv, force bool) ([]segmentPlan, int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	set := s.set.get()
	window := float64(s.opts.ContextWindow)
	soft := int(window * set.SoftThreshold)
	if !force && c.active < soft {
		return nil, 0, nil
	}
	from := c.meta.CompactedThrough + 1
	limit := len(c.turns) - set.ProtectedTurns // last compactable seq
	if limit < from {
		return nil, 0, nil
	}
	// One greedy batch: oldest first, until the active part is down to half
	// the soft threshold (everything unprotected when forced or past hard).
	target := soft / 2
	if force || c.active >= int(window*set.HardThreshold) {
		target = 0
	}
	active, through := c.active, from-1
	for seq := from; seq <= limit && (active > target || through < from); seq++ {
		active -= c.turns[seq-1].Tokens
		through = seq
	}
	// Never split a tool call from its result: when the next turn continues
	// a call chain, cut before the chain instead.
	for through >= from && through < len(c.turns) && c.turns[through].ToolResult &&
		(c.turns[through-1].ToolUse || c.turns[through-1].ToolResult) {
		through--
	}
	if through < from {
		return nil, 0, nil
	}

	var plans []segmentPlan
	var cur *segmentPlan
	for seq := from; seq <= through; seq++ {
		t := c.turns[seq-1]
		prim := t.primary()
		startNew := cur == nil ||
			t.Session != c.turns[cur.rec.Last-1].Session ||
			(!t.Empty && prim != cur.rec.Primary && cur.rec.Primary != "" && !t.ToolResult)
		if startNew {
			plans = append(plans, segmentPlan{rec: segmentRec{Primary: prim, First: seq, Last: seq, Start: t.When, End: t.When}})
			cur = &plans[len(plans)-1]
		}
		if cur.rec.Primary == "" {
			cur.rec.Primary = prim
		}
		cur.rec.Last, cur.rec.End = seq, t.When
		cur.rec.Tags = mergeTags(cur.rec.Tags, t.Tags)
		cur.rec.FullTokens += t.Tokens
		if t.Empty {
			continue
		}
		rec, err := c.log.Read(t.Start, t.End)
		if err != nil {
			return nil, 0, err
		}
		cur.turns = append(cur.turns, summarize.Turn{ID: turnID(seq), Role: t.Role, Speaker: t.Name, Time: t.When, Text: rec.Content})
	}
	// Fold single-turn segments into their predecessor in the same session:
	// keyword tags flip often, and a one-turn page is not worth a summary.
	merged := plans[:0]
	for _, p := range plans {
		if n := len(merged); n > 0 && len(p.turns) <= 1 && c.turns[merged[n-1].rec.Last-1].Session == c.turns[p.rec.First-1].Session {
			m := &merged[n-1]
			m.rec.Last, m.rec.End = p.rec.Last, p.rec.End
			m.rec.Tags = mergeTags(m.rec.Tags, p.rec.Tags)
			m.rec.FullTokens += p.rec.FullTokens
			m.turns = append(m.turns, p.turns...)
			continue
		}
		merged = append(merged, p)
	}
	// Segments of only empty turns carry nothing to summarise; keep them
	// attached so that every compacted turn belongs to a segment.
	out := merged[:0]
	for _, p := range merged {
		if len(p.turns) == 0 && len(out) > 0 {
			out[len(out)-1].rec.Last, out[len(out)-1].rec.End = p.rec.Last, p.rec.End
			continue
		}
		out = append(out, p)
	}
	if len(out) > 0 && len(out[0].turns) == 0 && len(out) > 1 {
		out[1].rec.First, out[1].rec.Start = out[0].rec.First, out[0].rec.Start
		out = out[1:]
	}
	if len(out) == 1 && len(out[0].turns) == 0 {
		// Only empty turns: nothing to summarise, but they are compacted.
		out[0].rec.Primary = tagging.General
		out[0].turns = []summarize.Turn{{ID: turnID(out[0].rec.First), Role: "tool", Text: "(tool calls without text)"}}
	}
	for i := range out {
		if out[i].rec.Primary == "" {
			out[i].rec.Primary = tagging.General
		}
		if len(out[i].rec.Tags) == 0 {
			out[i].rec.Tags = []string{out[i].rec.Primary}
		}
	}
	return out, through, nil
}

// mergeTags returns a followed by the tags of b it lacks: tags are only ever
// added to, never dropped.
func mergeTags(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, t := range b {
		t = strings.TrimSpace(t)
		if t != "" && !contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
