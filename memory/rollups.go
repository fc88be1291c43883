package memory

import (
	"sort"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// Which topics earn a Layer 2 summary (a rollup). A rollup of a topic that
// lives in one segment repeats that segment's summary, and a topic spread
// over most of the conversation (a speaker's name, "chatting") summarises
// nothing in particular: both cost a summariser call, storage, and room in
// the topic overview for no gain. A topic earns a rollup when it spans at
// least rollupMinSegments segments and is not spread; once it has one, it
// keeps it up to date.
const (
	rollupMinSegments = 2
	// A tag on more than spreadShare of a conversation's segments (once it
	// has spreadMinSegments of them) is too spread to be a topic.
	spreadShare       = 0.5
	spreadMinSegments = 6
)

// rollupTags lists, sorted, the tags of the fresh segments that earn a
// rollup, counting the segments already stored. c.mu is held for reading.
func (c *conv) rollupTags(fresh []*segmentRec) []string {
	return earnedTags(tagsOf(fresh), append(append([]*segmentRec(nil), c.segs...), fresh...), c.hasRollup)
}

// hasRollup reports a tag that has its Layer 2 summary. c.mu is held.
func (c *conv) hasRollup(tag string) bool {
	_, ok := c.tagSums[tag]
	return ok
}

// earnedTags keeps, sorted, the tags that have a rollup already or span
// rollupMinSegments of segs without being spread over them.
func earnedTags(tags []string, segs []*segmentRec, has func(string) bool) []string {
	count := map[string]int{}
	for _, sg := range segs {
		for _, t := range sg.Tags {
			count[t]++
		}
	}
	var out []string
	for _, t := range tags {
		if has(t) || count[t] >= rollupMinSegments && !spread(count[t], len(segs)) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// spread reports whether a tag on n of total units (segments, sessions)
// is on too many of them to name a topic.
func spread(n, total int) bool {
	return total >= spreadMinSegments && float64(n) > spreadShare*float64(total)
}

// spreadTag reports whether a tag is on too many of a conversation's
// sessions to name a topic: it stays on its turns (find_quote and
// expand_topic still use it) but is not matched by recall, named in the
// topic hint or rolled up. c.mu is held.
func (c *conv) spreadTag(tag string) bool {
	if tag == tagging.General {
		return true
	}
	sessions := c.sessions()
	if sessions < spreadMinSegments {
		return false
	}
	return spread(c.tagSessions(tag), sessions)
}

// tagSessions is the number of sessions with a turn on tag. Postings are
// in turn order, and sessions only grow along it, so counting where the
// session changes is enough; postings out of order (none are written so)
// are counted with a set. c.mu is held.
func (c *conv) tagSessions(tag string) int {
	seqs := c.tagSeqs[tag]
	n, last, prevSeq := 0, -1, 0
	for _, seq := range seqs {
		if seq < prevSeq {
			seen := map[int]bool{}
			for _, seq := range seqs {
				seen[c.turns[seq-1].Session] = true
			}
			return len(seen)
		}
		prevSeq = seq
		if s := c.turns[seq-1].Session; s != last {
			n, last = n+1, s
		}
	}
	return n
}

// sessions is the number of sessions in the conversation (the last turn's).
func (c *conv) sessions() int {
	if len(c.turns) == 0 {
		return 0
	}
	return c.turns[len(c.turns)-1].Session
}
