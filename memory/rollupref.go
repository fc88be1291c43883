package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

// Topic summaries (rollups) recorded by reference.
//
// Every compaction updates the rollup of each topic its new segments carry,
// and the decisions log used to hold each of them in full: on a long
// conversation most topics are touched by most compactions, so the same
// few hundred tokens per topic were written again and again (2.2 of the
// 3.6 MB of decisions at 10,000 synthetic turns). An extractive rollup is
// a deterministic function of its inputs, which replay already has: the
// topic's previous rollup and the new segments' summaries (both in the
// decisions log, in log order). So a compaction decision records such a
// rollup as a reference, the topic, the segments it covers, its method,
// version and time, whether it continued a previous rollup, and a digest
// of its text, and replay makes the text again with the extractive
// summariser, no model involved. A rollup written by a model, or one the
// replay summariser would not make identically, is recorded in full as
// before, so nothing that cost a model call is ever remade.

// rollupRef is a rollup recorded by reference in a compaction decision.
type rollupRef struct {
	Tag string `json:"tag"`
	// Prev: the rollup continued the topic's previous rollup (its text and
	// its segments come first); Add are the compaction's new segments
	// carrying the topic, whose summaries follow.
	Prev bool `json:"prev,omitempty"`
	// Add is left out when it is every segment of the compaction that
	// carries the topic (derivedAdd), as it always is when written by
	// maybeCompact: replay derives it from the compaction's segments.
	Add []int `json:"add,omitempty"`
	// Version of the extractive summariser that made it, and when.
	Version string    `json:"version"`
	At      time.Time `json:"at"`
	// Sum is the digest (rollupDigest) of the text it was made with.
	Sum string `json:"sum"`
	// Cleared: a forget took the text of the topic's summaries out of the
	// log; replay leaves this one empty (the forget decision remakes it).
	Cleared bool `json:"cleared,omitempty"`
}

// rollupDigest is 64 bits of the SHA-256 of a rollup's text, enough to
// notice a replay that does not make the same text.
func rollupDigest(summary, description string) string {
	h := sha256.Sum256([]byte(summary + "\x00" + description))
	return hex.EncodeToString(h[:8])
}

// replayable reports, per topic, whether replay would make the extractive
// rollups of rollups identically from inputs: always when they were made
// by the replay summariser itself, and otherwise (a model's extractive
// fallback, an extractive summariser configured differently) when it
// makes the same text. No lock is held.
func (s *Store) replayable(ctx context.Context, rollups []*tagSummaryRec, inputs map[string]rollupInput) map[string]bool {
	out := make(map[string]bool, len(rollups))
	for _, r := range rollups {
		if r.Method != summarize.Method || r.Version != summarize.Version {
			continue
		}
		if s.sum == Summarizer(s.ext) {
			out[r.Tag] = true
			continue
		}
		again, err := s.rollupWith(ctx, s.ext, "", r.Tag, inputs[r.Tag])
		out[r.Tag] = err == nil && again.Summary == r.Summary && again.Description == r.Description
	}
	return out
}

// rollupReference returns the reference that records rollup r and true
// when replay would make r identically (replayable) and the previous
// rollup it continued (prev, nil for none) is still the topic's current
// one (now). Otherwise r is recorded in full. c.mu is held.
func rollupReference(r, prev, now *tagSummaryRec, replayable bool) (rollupRef, bool) {
	base := 0
	if prev != nil {
		base = len(prev.Segments)
	}
	if !replayable || prev != now || base > len(r.Segments) || prev != nil && !slices.Equal(prev.Segments, r.Segments[:base]) {
		return rollupRef{}, false
	}
	return rollupRef{Tag: r.Tag, Prev: prev != nil, Add: slices.Clone(r.Segments[base:]), Version: r.Version,
		At: r.UpdatedAt, Sum: rollupDigest(r.Summary, r.Description)}, true
}

// resolveRollup makes rollup ref again from the replayed state: the
// topic's current rollup (when it continued one) and the summaries of the
// segments it adds, with the extractive summariser. c.mu is held for
// writing; the compaction's segments are already in c.segs. A text that
// differs from the recorded digest (the extractive summariser changed
// since) is kept and reported.
func (s *Store) resolveRollup(ctx context.Context, c *conv, ref rollupRef) *tagSummaryRec {
	var in rollupInput
	if prev := c.tagSums[ref.Tag]; ref.Prev && prev != nil {
		in.texts = []string{prev.Summary}
		in.segments = slices.Clone(prev.Segments)
	} else if ref.Prev {
		s.log.Warn("replay: a topic summary continues one that is not there", "conversation", c.id, "tag", ref.Tag)
	}
	for _, id := range ref.Add {
		in.segments = append(in.segments, id)
		if id >= 1 && id <= len(c.segs) {
			in.texts = append(in.texts, c.segs[id-1].Summary)
		}
	}
	out := &tagSummaryRec{Tag: ref.Tag, Segments: in.segments, Method: summarize.Method, Version: ref.Version, UpdatedAt: ref.At}
	if ref.Cleared {
		return out
	}
	r, err := s.rollupWith(ctx, s.ext, c.id, ref.Tag, in)
	if err != nil {
		s.log.Warn("replay: a topic summary recorded by reference could not be made again; left empty", "conversation", c.id, "tag", ref.Tag, "err", err)
		return out
	}
	out.Summary, out.Description, out.Tokens = r.Summary, r.Description, r.Tokens
	if rollupDigest(out.Summary, out.Description) != ref.Sum {
		out.Version = r.Version
		s.log.Warn("replay: a topic summary made again differs from the one recorded (the extractive summariser changed)", "conversation", c.id, "tag", ref.Tag, "version", ref.Version, "now", r.Version)
	}
	return out
}

// derivedAdd is what a rollup reference of tag adds when it leaves Add
// out: the compaction's segments (in id order) that carry tag.
func derivedAdd(tag string, segs []segmentRec) []int {
	var out []int
	for _, sg := range segs {
		if contains(sg.Tags, tag) {
			out = append(out, sg.ID)
		}
	}
	return out
}
