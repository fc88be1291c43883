package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// Hierarchical assembly (seed 003, Options.Assembly "hierarchical"): the
// conversation's recent turns whole, the turns before them as per-message
// summaries, and the oldest as aggregated (segment) summaries, all within
// the budget; whatever is still left out is named with a truncation
// reference. It replaces relevance ranking for single-conversation recalls
// (scope all stays relevance-ranked: there is no one timeline to layer).

// Assembly modes (Options.Assembly).
const (
	AssemblyRelevance    = "relevance"
	AssemblyHierarchical = "hierarchical"
)

const (
	// maxRecentTurns and maxMiddleTurns bound the two newer layers.
	maxRecentTurns = 20
	maxMiddleTurns = 80
)

// hierTurn is one turn as the hierarchical planner sees it.
type hierTurn struct {
	seq  int
	full int // tokens of its verbatim line
	// summary is the tokens of its summary line; 0 when it has none.
	summary int
	// short turns need no summary: the middle layer shows them whole.
	short bool
}

// hierAgg is one aggregated summary (a segment) covering turns up to last.
type hierAgg struct {
	cost int
	last int
}

// hierPlan is what a hierarchical assembly shows.
type hierPlan struct {
	whole      []int // seqs shown verbatim (recent), ascending
	summarised []int // seqs shown as summaries or short turns (middle), ascending
	aggs       []int // indexes into the aggregates taken, ascending
	// missing are middle turns that wanted a summary and had none, newest first.
	missing []int
	// omitted are the turns older than the middle layer that no taken
	// aggregate covers, ascending.
	omitted []int
	used    int
}

// planHierarchy lays turns (ascending, non-empty) and aggregates out in
// budget tokens: the newest turns whole in up to half of it (at most
// maxRecentTurns), the turns before them as summaries in up to two thirds
// of what is left (at most maxMiddleTurns; a long turn without a summary
// is skipped and reported missing), then the aggregates wholly older than
// the middle layer, newest first, in the rest. reserve tokens are kept for
// the reference naming what is omitted. Each layer is contiguous.
func planHierarchy(turns []hierTurn, aggs []hierAgg, budget, reserve int) hierPlan {
	var p hierPlan
	avail := max(0, budget-reserve)
	i := len(turns) - 1
	for ; i >= 0 && len(p.whole) < maxRecentTurns; i-- {
		if p.used+turns[i].full > avail/2 {
			break
		}
		p.used += turns[i].full
		p.whole = append(p.whole, turns[i].seq)
	}
	n := 0
	// middle takes turn i as a summary (or whole when short) within limit;
	// false when it does not fit.
	middle := func(i, limit int) bool {
		t := turns[i]
		cost := t.summary
		if t.short {
			cost = t.full
		}
		if cost == 0 {
			p.missing = append(p.missing, t.seq)
			n++
			return true
		}
		if p.used+cost > limit {
			return false
		}
		p.used += cost
		p.summarised = append(p.summarised, t.seq)
		n++
		return true
	}
	middleCap := p.used + (avail-p.used)*2/3
	for ; i >= 0 && n < maxMiddleTurns && middle(i, middleCap); i-- {
	}
	oldest := 0 // turns [0, oldest] are older than the middle layer
	if i >= 0 {
		oldest = turns[i].seq
	}
	floor := 0 // the newest turn a taken aggregate covers
	for j := len(aggs) - 1; j >= 0; j-- {
		a := aggs[j]
		if a.last > oldest || p.used+a.cost > avail {
			continue
		}
		p.used += a.cost
		p.aggs = append(p.aggs, j)
		floor = max(floor, a.last)
	}
	// What the aggregates left goes to more summaries, down to them.
	for ; i >= 0 && n < maxMiddleTurns && turns[i].seq > floor && middle(i, avail); i-- {
	}
	sort.Ints(p.aggs)
	sort.Ints(p.whole)
	sort.Ints(p.summarised)
	for ; i >= 0; i-- {
		p.omitted = append(p.omitted, turns[i].seq)
	}
	sort.Ints(p.omitted)
	return p
}

// hierTurns lists c's non-empty turns for planHierarchy. c.mu is held.
func (s *Store) hierTurns(c *conv) []hierTurn {
	out := make([]hierTurn, 0, len(c.turns))
	for i := range c.turns {
		t := &c.turns[i]
		if t.Empty || t.Damaged {
			continue
		}
		pre := s.prefixTokens(c, t.Seq)
		h := hierTurn{seq: t.Seq, full: t.Tokens + pre + 1, short: !summarisable(t)}
		if r := c.turnSums[t.Seq]; r != nil && !h.short {
			h.summary = r.Tokens + pre + 4 // " (summary)"
		}
		out = append(out, h)
	}
	return out
}

// hierAggs lists c's segment summaries for planHierarchy, with their
// rendered text. c.mu is held.
func (s *Store) hierAggs(c *conv) ([]hierAgg, []string) {
	aggs := make([]hierAgg, len(c.segs))
	texts := make([]string, len(c.segs))
	for i, sg := range c.segs {
		texts[i] = fmt.Sprintf("### %s (turns %s-%s, %s)\n%s", sg.Primary, turnID(sg.First), turnID(sg.Last), sg.Start.Format("2 Jan 2006"), sg.Summary)
		aggs[i] = hierAgg{cost: estimateTokens(texts[i][:strings.IndexByte(texts[i], '\n')]) + sg.SummaryTokens + 2, last: sg.Last}
	}
	return aggs, texts
}

// lazyTurnSums makes, before a hierarchical recall, the per-message
// summaries its middle layer wants and lacks: at most lazyTurnSummaries,
// newest first. Failures are logged; the recall goes on without them.
func (s *Store) lazyTurnSums(ctx context.Context, c *conv, budget int) {
	c.mu.RLock()
	aggs, _ := s.hierAggs(c)
	p := planHierarchy(s.hierTurns(c), aggs, budget, noteReserve)
	c.mu.RUnlock()
	if len(p.missing) == 0 {
		return
	}
	want := p.missing[:min(len(p.missing), lazyTurnSummaries)]
	// A compaction or regeneration under way holds compactMu, maybe for a
	// while (a model): this recall does not wait, the next one makes them.
	if !c.compactMu.TryLock() {
		return
	}
	defer c.compactMu.Unlock()
	if _, err := s.summariseTurnsLocked(ctx, c, want, nil); err != nil {
		s.log.Warn("making per-message summaries for a hierarchical recall failed; those turns are left out", "conversation", c.id, "err", err)
	}
}

// assembleHierarchy renders c's context in layers (see planHierarchy).
// c.mu is held for reading.
func (s *Store) assembleHierarchy(c *conv, budget int) assembly {
	a := assembly{refs: []TruncationRef{}}
	const header = "# Recalled memory (hierarchical: recent turns whole, earlier turns summarised)\n"
	used := s.tok.Count(header) + 2
	pk := newPacker(s, budget, used, false)
	rules := pk.pinRules([]*conv{c})
	aggs, aggTexts := s.hierAggs(c)
	p := planHierarchy(s.hierTurns(c), aggs, budget-pk.used, noteReserve)

	render := func(p hierPlan, rules []pick) (string, hierParts) {
		var b strings.Builder
		var parts hierParts
		b.WriteString(header)
		if len(rules) > 0 {
			b.WriteString("## Standing rules (always included)\n")
			for _, r := range rules {
				b.WriteString(r.text + "\n")
			}
		}
		if len(p.aggs) > 0 || len(p.omitted) > 0 {
			b.WriteString("## Earlier (aggregated summaries)\n")
			for _, j := range p.aggs {
				b.WriteString(aggTexts[j] + "\n")
			}
			if left := uncovered(c, p); len(left) > 0 {
				if ref, ok := s.spanRef(c, left); ok {
					parts.refs = append(parts.refs, ref)
					b.WriteString(ref.note(topicsOf(c, left)) + "\n")
				}
			}
		}
		if len(p.summarised) > 0 {
			b.WriteString("## Earlier turns (per-message summaries)\n")
			for _, seq := range p.summarised {
				t := c.turn(seq)
				if r := c.turnSums[seq]; r != nil && summarisable(t) {
					b.WriteString(strings.TrimSuffix(turnPrefix(t), ": ") + " (summary): " + oneLine(r.Summary) + "\n")
					parts.sums = append(parts.sums, seq)
					continue
				}
				content, err := c.log.ReadContent(t.Start, t.End)
				if err != nil {
					continue
				}
				b.WriteString(turnPrefix(t) + oneLine(content) + "\n")
				parts.short = append(parts.short, seq)
			}
		}
		if len(p.whole) > 0 {
			b.WriteString("## Recent turns (verbatim)\n")
			last := ""
			for _, seq := range p.whole {
				t := c.turn(seq)
				content, err := c.log.ReadContent(t.Start, t.End)
				if err != nil {
					continue
				}
				if sk := sessionKey(c, t); sk != last {
					b.WriteString(sessionHeader(c, t, false) + "\n")
					last = sk
				}
				b.WriteString(turnPrefix(t) + oneLine(content) + "\n")
				parts.whole = append(parts.whole, seq)
			}
		}
		return strings.TrimRight(b.String(), "\n"), parts
	}
	text, parts := render(p, rules)
	// The costs were estimates: while over, drop the oldest aggregate, then
	// the oldest summary, then the oldest recent turn, then rules.
	for n := s.tok.Count(text); n > budget; n = s.tok.Count(text) {
		switch {
		case len(p.aggs) > 0:
			p.aggs = p.aggs[1:]
		case len(p.summarised) > 0:
			p.omitted = append(p.omitted, p.summarised[0])
			p.summarised = p.summarised[1:]
		case len(p.whole) > 0:
			p.omitted = append(p.omitted, p.whole[0])
			p.whole = p.whole[1:]
		case len(rules) > 0:
			rules = rules[:len(rules)-1]
		default:
			text = s.tok.Truncate(text, budget)
			continue
		}
		text, parts = render(p, rules)
	}
	a.text, a.tokens = text, s.tok.Count(text)
	a.refs = parts.refs
	a.turnIDs = make([]string, 0, len(parts.whole)+len(parts.short))
	for _, r := range rules {
		a.included = append(a.included, Inclusion{ID: turnID(r.seq), Kind: "rule", Mode: IncludeAlways})
		a.breakdown.Turns += r.cost
	}
	for _, j := range p.aggs {
		sg := c.segs[j]
		ref := SummaryRef{Kind: "segment", ID: fmt.Sprintf("s%d", sg.ID), Tag: sg.Primary, ConversationID: c.id, Tokens: sg.SummaryTokens}
		a.summaries = append(a.summaries, ref)
		a.included = append(a.included, Inclusion{ID: ref.ID, Kind: "segment", Mode: IncludeAgent, Tag: sg.Primary})
		a.breakdown.Summaries += aggs[j].cost
	}
	for _, seq := range parts.sums {
		r := c.turnSums[seq]
		a.summaries = append(a.summaries, SummaryRef{Kind: "message", ID: turnID(seq), Tag: c.turn(seq).primary(), ConversationID: c.id, Tokens: r.Tokens})
		a.included = append(a.included, Inclusion{ID: turnID(seq), Kind: "message", Mode: IncludeAgent, Tag: c.turn(seq).primary()})
		a.breakdown.Summaries += r.Tokens
	}
	whole := append(append([]int(nil), parts.short...), parts.whole...)
	sort.Ints(whole)
	for _, seq := range whole {
		t := c.turn(seq)
		a.turnIDs = append(a.turnIDs, turnID(seq))
		a.included = append(a.included, Inclusion{ID: turnID(seq), Kind: "turn", Mode: includeMode(c, t), Tag: t.primary()})
		a.breakdown.Turns += t.Tokens
	}
	if a.summaries == nil {
		a.summaries = []SummaryRef{}
	}
	if a.included == nil {
		a.included = []Inclusion{}
	}
	a.breakdown.Headers = max(0, a.tokens-a.breakdown.Turns-a.breakdown.Summaries)
	return a
}

// hierParts is what a hierarchical rendering actually wrote.
type hierParts struct {
	whole, short, sums []int
	refs               []TruncationRef
}

// uncovered are the omitted turns that no taken aggregate covers.
func uncovered(c *conv, p hierPlan) []int {
	var out []int
	for _, seq := range p.omitted {
		in := false
		for _, j := range p.aggs {
			if sg := c.segs[j]; seq >= sg.First && seq <= sg.Last {
				in = true
				break
			}
		}
		if !in {
			out = append(out, seq)
		}
	}
	return out
}

// topicsOf names the busiest topics of seqs, as a reference's preview.
func topicsOf(c *conv, seqs []int) string {
	count := map[string]int{}
	for _, seq := range seqs {
		if t := c.turn(seq); t != nil && t.primary() != "" && t.primary() != tagging.General {
			count[t.primary()]++
		}
	}
	tags := make([]string, 0, len(count))
	for tag := range count {
		tags = append(tags, tag)
	}
	sort.Slice(tags, func(i, j int) bool {
		if count[tags[i]] != count[tags[j]] {
			return count[tags[i]] > count[tags[j]]
		}
		return tags[i] < tags[j]
	})
	var parts []string
	for _, tag := range tags[:min(len(tags), 6)] {
		parts = append(parts, fmt.Sprintf("%s (%d)", tag, count[tag]))
	}
	if len(parts) == 0 {
		return ""
	}
	return "topics " + strings.Join(parts, ", ")
}
