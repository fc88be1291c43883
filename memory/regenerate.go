package memory

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
	bolt "go.etcd.io/bbolt"
)

// RegenerateRequest asks for summaries to be rebuilt from the master log:
// those of one conversation (or all), optionally only the segments carrying
// one tag.
type RegenerateRequest struct {
	ConversationID string // "" = every conversation
	Tag            string // "" = every segment
	Progress       Progress
}

// RegenerateResult counts what was rebuilt.
type RegenerateResult struct {
	Conversations int `json:"conversations"`
	Segments      int `json:"segments"`
	Tags          int `json:"tags"`
}

// RegenerateSummaries rebuilds Layer 1 summaries from the original turns
// (read back from the master log) with the current summariser, then the
// Layer 2 summaries of every tag they carry. Each conversation's new
// summaries replace the old ones in one transaction: a failure leaves the
// old ones in place. Segment boundaries do not change.
func (s *Store) RegenerateSummaries(ctx context.Context, req RegenerateRequest) (RegenerateResult, error) {
	ctx, end, err := s.begin(ctx, opAppend)
	if err != nil {
		return RegenerateResult{}, err
	}
	defer end()
	var res RegenerateResult
	var ids []string
	if req.ConversationID == "" {
		all, err := s.conversationIDs()
		if err != nil {
			return res, err
		}
		ids = all
	} else {
		id, err := s.resolve(req.ConversationID)
		if err != nil {
			return res, err
		}
		ids = []string{id}
	}
	for _, id := range ids {
		c, err := s.conversation(ctx, id, false)
		if err != nil {
			return res, err
		}
		nseg, ntag, err := s.regenerate(ctx, c, req.Tag, req.Progress)
		if err == nil { // with shared logs: sent before the next is locked
			err = s.commitShared(ctx)
		}
		if err != nil {
			return res, fmt.Errorf("regenerate summaries of %s: %w", id, err)
		}
		if nseg > 0 {
			res.Conversations++
		}
		res.Segments += nseg
		res.Tags += ntag
	}
	return res, nil
}

func (s *Store) regenerate(ctx context.Context, c *conv, tag string, progress Progress) (int, int, error) {
	c.compactMu.Lock()
	defer c.compactMu.Unlock()

	// Read the segments' original turns.
	c.mu.RLock()
	if tag != "" {
		name, err := c.findTag(tag)
		if err != nil {
			c.mu.RUnlock()
			return 0, 0, err
		}
		tag = name
	}
	all := make([]*segmentRec, len(c.segs))
	var plans []segmentPlan
	for i, sg := range c.segs {
		cp := *sg
		all[i] = &cp
		if tag != "" && !contains(sg.Tags, tag) {
			continue
		}
		p := segmentPlan{rec: cp}
		for seq := sg.First; seq <= sg.Last; seq++ {
			t := c.turn(seq)
			if t == nil || t.Empty {
				continue
			}
			rec, err := c.log.Read(t.Start, t.End)
			if err != nil {
				c.mu.RUnlock()
				return 0, 0, err
			}
			p.turns = append(p.turns, summarize.Turn{ID: turnID(seq), Role: t.Role, Speaker: t.Name, Time: t.When, Text: rec.Content})
		}
		if len(p.turns) > 0 {
			plans = append(plans, p)
		}
	}
	c.mu.RUnlock()
	if len(plans) == 0 {
		return 0, 0, nil
	}

	var done atomic.Int64
	total := len(plans)
	step := func(msg string) {
		if progress != nil {
			progress(int(done.Add(1)), total, msg)
		}
	}
	if err := s.summariseSegments(ctx, c.id, plans, step); err != nil {
		return 0, 0, err
	}
	fresh := make([]*segmentRec, len(plans))
	for i := range plans {
		fresh[i] = &plans[i].rec
		all[plans[i].rec.ID-1] = fresh[i]
	}
	c.mu.RLock()
	tags := earnedTags(tagsOf(fresh), all, c.hasRollup) // the topics that earn a rollup (rollups.go)
	c.mu.RUnlock()
	total += len(tags)
	rollups, err := s.rollup(ctx, c.id, tags, fullRollups(tags, all), step)
	if err != nil {
		return 0, 0, err
	}

	// The decision and the commit under the writers' lock alone; readers
	// wait only for the new summaries to be put in place.
	c.wmu.Lock()
	defer c.wmu.Unlock()
	dec := decision{Kind: decSummaries, Segments: make([]segmentRec, len(fresh)), TagSums: make([]tagSummaryRec, len(rollups))}
	for i, r := range fresh {
		dec.Segments[i] = *r
	}
	for i, r := range rollups {
		dec.TagSums[i] = *r
	}
	meta := c.meta
	if meta.DecisionsSize, err = s.recordDecision(c, dec); err != nil {
		return 0, 0, err
	}
	meta.SummaryGen++
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := convBucket(tx, c.id)
		if err != nil {
			return err
		}
		if err := putMeta(tx, meta); err != nil {
			return err
		}
		sb, rb := b.Bucket(bucketSegments), b.Bucket(bucketTagSums)
		if err := putSegments(sb, fresh...); err != nil {
			return err
		}
		for _, r := range rollups {
			if err := putTagSum(rb, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("commit: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.meta = meta
	for _, r := range fresh {
		c.segs[r.ID-1] = r
	}
	for _, r := range rollups {
		c.tagSums[r.Tag] = r
	}
	if c.meta.SummariesIndexed == c.meta.SummaryGen-1 { // summaries are not in the full-text index
		c.meta.SummariesIndexed = c.meta.SummaryGen
	}
	return len(fresh), len(rollups), nil
}
