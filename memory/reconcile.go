package memory

import (
	"context"
	"fmt"

	"github.com/vc-mcp/vc-mcp/index"
)

// turnDoc renders stored turn seq as an index document, reading its text
// back from the master log. It returns false for an empty turn.
func (s *Store) turnDoc(c *conv, seq int) (index.Doc, bool, error) {
	t := c.turn(seq)
	if t == nil || t.Empty {
		return index.Doc{}, false, nil
	}
	rec, err := c.log.read(t.Start, t.End)
	if err != nil {
		return index.Doc{}, false, err
	}
	return index.Doc{
		ID: turnDocID(c.id, seq), Conversation: c.id, Kind: "turn", Text: rec.Content,
		Speaker: t.Name, Role: t.Role, Tags: t.Tags, Time: t.When, Seq: int64(seq),
	}, true, nil
}

// indexSeqs (re-)indexes the given turns without moving the watermark.
// c.mu is held.
func (s *Store) indexSeqs(ctx context.Context, c *conv, seqs []int) error {
	docs := make([]index.Doc, 0, len(seqs))
	for _, seq := range seqs {
		d, ok, err := s.turnDoc(c, seq)
		if err != nil {
			return err
		}
		if ok {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil
	}
	if err := s.ix.Add(ctx, docs); err != nil {
		return fmt.Errorf("index %d turns of %s: %w", len(docs), c.id, err)
	}
	return nil
}

// summaryDocsAll renders every summary of a conversation. c.mu is held.
func (c *conv) summaryDocsAll() []index.Doc {
	rollups := make([]*tagSummaryRec, 0, len(c.tagSums))
	for _, r := range c.tagSums {
		rollups = append(rollups, r)
	}
	return summaryDocs(c.id, c.segs, rollups)
}

// indexSummaries puts every summary of the conversation into the index
// when the index is behind them. c.mu is held for writing.
func (s *Store) indexSummaries(ctx context.Context, c *conv) error {
	if c.meta.SummariesIndexed == c.meta.SummaryGen {
		return nil
	}
	gen := c.meta.SummaryGen
	if docs := c.summaryDocsAll(); len(docs) > 0 {
		if err := s.ix.Add(ctx, docs); err != nil {
			return fmt.Errorf("index summaries of %s: %w", c.id, err)
		}
	}
	c.meta.SummariesIndexed = gen
	return nil
}
