package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

// Segment summaries recorded by reference.
//
// A compaction decision used to hold each new segment in full: on the
// scale benchmark's 10,000 turns that was 0.9 of the 2 MB decisions log,
// most of it summaries, entities, times and method names the replay has
// or can make. A segment summarised by the extractive summariser is a
// deterministic function of inputs replay already holds: the turns in its
// range (their text in the master log, their role, speaker and time in the
// store), the topic tags it was given and its token budget. So such a
// segment is recorded as a reference (its range, tags, token count, the
// summariser's version, when, and a digest of what it made) and replay
// makes it again with the extractive summariser. A segment summarised by a
// model, or one whose inputs replay would not rebuild identically (checked
// when recording), stays in full, so nothing that cost a model call is
// ever remade. This is memory/rollupref.go's treatment of topic rollups.

// segmentRef is a segment recorded by reference in a compaction decision.
type segmentRef struct {
	ID      int      `json:"id"`
	First   int      `json:"first"`
	Last    int      `json:"last"`
	Primary string   `json:"primary"`
	Tags    []string `json:"tags"`
	// In is how many of Tags (from the first) the summariser was given;
	// it added the rest.
	In int `json:"in"`
	// FullTokens is the segment's turns' size; its summary's budget
	// follows from it.
	FullTokens int       `json:"full_tokens"`
	Version    string    `json:"version"`
	At         time.Time `json:"at"`
	// Sum is the digest (segmentDigest) of what the summariser made.
	Sum string `json:"sum"`
	// Cleared: a forget took text of the segment's turns out of the log;
	// replay leaves its summary empty (the forget decision remakes it).
	Cleared bool `json:"cleared,omitempty"`
}

// segmentDigest is 64 bits of the SHA-256 of what a segment's summariser
// made, enough to notice a replay that does not make the same.
func segmentDigest(r *segmentRec) string {
	h := sha256.New()
	for _, part := range [][]string{{r.Summary}, r.Entities, r.Decisions} {
		for _, s := range part {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// segmentTurns are the summariser's turns of the segment covering turns
// first..last, as planCompaction gives them: the non-empty turns with
// their text from the master log. c.mu is held.
func segmentTurns(c *conv, first, last int) ([]summarize.Turn, error) {
	var out []summarize.Turn
	for seq := first; seq <= last && seq <= len(c.turns); seq++ {
		t := c.turns[seq-1]
		if t.Empty {
			continue
		}
		rec, err := c.log.Read(t.Start, t.End)
		if err != nil {
			return nil, err
		}
		out = append(out, summarize.Turn{ID: turnID(seq), Role: t.Role, Speaker: t.Name, Time: t.When, Text: rec.Content})
	}
	return out, nil
}

// summariseSegment runs sum on a segment's inputs and fills r's summary
// fields as a compaction does.
func (s *Store) summariseSegment(ctx context.Context, sum Summarizer, convID string, r *segmentRec, inTags []string, turns []summarize.Turn) error {
	limit := segmentSummaryTokens(r.FullTokens)
	out, err := sum.Summarize(ctx, summarize.Input{
		ConversationID: convID, Kind: summarize.Segment, Tag: r.Primary, Tags: inTags, Turns: turns, MaxTokens: limit,
	})
	if err != nil {
		return err
	}
	r.Summary = s.tok.Truncate(out.Summary, limit)
	r.SummaryTokens = s.tok.Count(r.Summary)
	r.Tags = mergeTags(inTags, out.Tags)
	r.Entities, r.Decisions = out.Entities, out.Decisions
	r.Method, r.Version = out.Method, out.Version
	return nil
}

// segmentReference returns the reference that records plan p's segment
// and true when replay would make it identically: made by the extractive
// summariser, over the turns replay rebuilds from the range, starting and
// ending at those turns' times. Otherwise it is recorded in full. c.mu is
// held (for reading at least); no model is called.
func (s *Store) segmentReference(ctx context.Context, c *conv, p *segmentPlan) (segmentRef, bool) {
	r := &p.rec
	if r.Method != summarize.Method || r.Version != summarize.Version || r.First < 1 || r.Last > len(c.turns) || r.First > r.Last ||
		len(p.inTags) > len(r.Tags) || !slices.Equal(p.inTags, r.Tags[:len(p.inTags)]) ||
		!r.Start.Equal(c.turns[r.First-1].When) || !r.End.Equal(c.turns[r.Last-1].When) {
		return segmentRef{}, false
	}
	turns, err := segmentTurns(c, r.First, r.Last)
	if err != nil || !slices.Equal(turns, p.turns) {
		return segmentRef{}, false
	}
	if s.sum != Summarizer(s.ext) {
		// Another summariser whose output says it is the extractive one
		// (a model's fallback, a differently configured one): recorded by
		// reference only when replay's makes the same.
		again := segmentRec{Primary: r.Primary, FullTokens: r.FullTokens}
		if s.summariseSegment(ctx, s.ext, c.id, &again, p.inTags, turns) != nil || segmentDigest(&again) != segmentDigest(r) ||
			again.SummaryTokens != r.SummaryTokens || again.Version != r.Version {
			return segmentRef{}, false
		}
	}
	return segmentRef{ID: r.ID, First: r.First, Last: r.Last, Primary: r.Primary, Tags: slices.Clone(r.Tags), In: len(p.inTags),
		FullTokens: r.FullTokens, Version: r.Version, At: r.CreatedAt, Sum: segmentDigest(r)}, true
}

// resolveSegment makes the segment ref records again from the replayed
// state with the extractive summariser. c.mu is held for writing. A
// result that differs from the recorded digest (the extractive code
// changed since) is kept and reported.
func (s *Store) resolveSegment(ctx context.Context, c *conv, ref segmentRef) segmentRec {
	r := segmentRec{ID: ref.ID, Primary: ref.Primary, Tags: slices.Clone(ref.Tags), First: ref.First, Last: ref.Last,
		FullTokens: ref.FullTokens, Method: summarize.Method, Version: ref.Version, CreatedAt: ref.At}
	if ref.First >= 1 && ref.Last <= len(c.turns) && ref.First <= ref.Last {
		r.Start, r.End = c.turns[ref.First-1].When, c.turns[ref.Last-1].When
	}
	if ref.Cleared {
		return r
	}
	in := ref.Tags[:min(max(ref.In, 0), len(ref.Tags))]
	turns, err := segmentTurns(c, ref.First, ref.Last)
	if err == nil {
		err = s.summariseSegment(ctx, s.ext, c.id, &r, slices.Clone(in), turns)
	}
	if err != nil {
		s.log.Warn("replay: a segment summary recorded by reference could not be made again; left empty", "conversation", c.id, "segment", ref.ID, "err", err)
		return r
	}
	if r.Tags = slices.Clone(ref.Tags); segmentDigest(&r) != ref.Sum {
		s.log.Warn("replay: a segment summary recorded by reference came out differently (the extractive summariser changed?); kept",
			"conversation", c.id, "segment", ref.ID)
	}
	r.Method, r.Version = summarize.Method, ref.Version
	return r
}
