package memory

import (
	"context"
	"fmt"
	"maps"
	"sort"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
	bolt "go.etcd.io/bbolt"
)

// By default a tag is over-broad when it has at least splitMinTurns turns
// and more than splitMaxShare of the conversation's tagged turns
// (Options.SplitMinTurns and SplitMaxShare). It is offered to the splitter
// again only once it has doubled since the last look.
const (
	splitMinTurns = 40
	splitMaxShare = 0.25
	splitSamples  = 30
)

// maybeSplit offers the most over-broad tag of a conversation to the
// configured splitter and applies its decision: the sampled turns it
// assigns gain the new, narrower tag (they keep the parent: tags are only
// ever added), the new tags join the vocabulary, and their aliases are
// registered for later tagging. The splitter runs with no lock held.
// It reports whether a tag was offered.
func (s *Store) maybeSplit(ctx context.Context, c *conv) (bool, error) {
	if s.opts.Splitter == nil {
		return false, nil
	}
	c.compactMu.Lock() // turn metas change: keep out of compaction's way
	defer c.compactMu.Unlock()

	c.mu.RLock()
	req, seqs := c.splitCandidate(s.opts.SplitMinTurns, s.opts.SplitMaxShare)
	if req.Tag == "" {
		c.mu.RUnlock()
		return false, nil
	}
	req.ConversationID = c.id
	for _, seq := range seqs {
		t := c.turn(seq)
		rec, err := c.log.Read(t.Start, t.End)
		if err != nil {
			c.mu.RUnlock()
			return true, err
		}
		req.Samples = append(req.Samples, clip(rec.Content, 1200))
	}
	c.mu.RUnlock()

	dec, err := s.opts.Splitter.SplitTag(ctx, req)
	if err != nil {
		return true, fmt.Errorf("split tag %q of %s: %w", req.Tag, c.id, err)
	}

	// The decision and the commit under the writer lock alone; the state
	// changes under mu too.
	c.wmu.Lock()
	defer c.wmu.Unlock()
	meta := c.meta
	meta.SplitChecked = maps.Clone(meta.SplitChecked)
	if meta.SplitChecked == nil {
		meta.SplitChecked = map[string]int{}
	}
	meta.SplitChecked[req.Tag] = req.Count
	valid := map[string]bool{}
	for _, sub := range dec.Subtags {
		sub = tagging.Canonicalize(sub, nil)
		if sub != "" && sub != req.Tag && sub != tagging.General && c.vocab[sub] == 0 {
			valid[sub] = true
		}
	}
	changed := map[int][]string{} // seq -> new tags
	for idx, sub := range dec.Assignments {
		sub = tagging.Canonicalize(sub, nil)
		if idx < 0 || idx >= len(seqs) || !valid[sub] {
			continue
		}
		seq := seqs[idx]
		if t := c.turn(seq); t != nil && !contains(t.Tags, sub) {
			changed[seq] = mergeTags(t.Tags, []string{sub})
		}
	}
	if len(changed) > 0 {
		meta.Aliases = maps.Clone(meta.Aliases)
		if meta.Aliases == nil {
			meta.Aliases = map[string]string{}
		}
		for alias, sub := range dec.Aliases {
			alias, sub = tagging.Canonicalize(alias, nil), tagging.Canonicalize(sub, nil)
			if alias != "" && valid[sub] && c.vocab[alias] == 0 && !valid[alias] {
				meta.Aliases[alias] = sub
			}
		}
	}
	sp := &splitRec{Tag: req.Tag, Count: req.Count, Turns: changed, Aliases: meta.Aliases}
	if meta.DecisionsSize, err = s.recordDecision(c, decision{Kind: decSplit, Split: sp}); err != nil {
		return true, err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := convBucket(tx, c.id)
		if err != nil {
			return err
		}
		put := make([]*turnMeta, 0, len(changed))
		for seq, tags := range changed {
			t := *c.turn(seq)
			t.Tags = tags
			put = append(put, &t)
		}
		if err := putTurns(b.Bucket(bucketTurns), put...); err != nil {
			return err
		}
		return putMeta(tx, meta)
	})
	if err != nil {
		return true, fmt.Errorf("commit split of %q in %s: %w", req.Tag, c.id, err)
	}
	c.mu.Lock()
	c.meta = meta
	s.notifySplit(c, req.Tag, changed) // before addTags: it names the tags the split adds
	seqs = seqs[:0]
	for seq, tags := range changed {
		c.addTags(seq, tags)
		seqs = append(seqs, seq)
	}
	c.mu.Unlock()
	sort.Ints(seqs)
	if err := s.indexSeqs(ctx, c, seqs); err != nil {
		s.log.Warn("re-indexing split turns failed; the reconciler retries", "conversation", c.id, "turns", len(seqs), "err", err)
	}
	s.log.Info("split tag", "conversation", c.id, "tag", req.Tag, "subtags", len(valid), "turns", len(changed))
	return true, nil
}

// splitCandidate picks the most over-broad tag not looked at since it last
// doubled, with sample turns spread across its span. c.mu is held.
func (c *conv) splitCandidate(minTurns int, maxShare float64) (SplitRequest, []int) {
	total := 0
	for _, t := range c.turns {
		if !t.Empty {
			total++
		}
	}
	var best string
	for tag, n := range c.vocab {
		if tag == tagging.General || n < minTurns || float64(n) <= maxShare*float64(total) {
			continue
		}
		if last := c.meta.SplitChecked[tag]; last > 0 && n < 2*last {
			continue
		}
		if best == "" || n > c.vocab[best] || n == c.vocab[best] && tag < best {
			best = tag
		}
	}
	if best == "" {
		return SplitRequest{}, nil
	}
	all := c.tagSeqs[best]
	var seqs []int
	for i := 0; i < splitSamples && i < len(all); i++ {
		seqs = append(seqs, all[i*len(all)/min(splitSamples, len(all))])
	}
	return SplitRequest{Tag: best, Count: c.vocab[best], Total: total, Vocabulary: maps.Clone(c.vocab)}, seqs
}
