package memory

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// assembly is a rendered context and what went into it.
type assembly struct {
	text      string
	tokens    int
	turnIDs   []string
	summaries []SummaryRef
	breakdown TokenBreakdown
	included  []Inclusion
	refs      []TruncationRef
}

// pick is one turn chosen for an assembly.
type pick struct {
	c    *conv
	seq  int
	text string // rendered line
	cost int
	mode string // include mode
	// ref is set when the turn is cut (or stands only as a reference).
	ref *TruncationRef
}

// summaryPick is one summary chosen for an assembly.
type summaryPick struct {
	c   *conv
	ref SummaryRef
	// head and body make its text, head + "\n" + body, which is built only
	// for the summaries rendered: most candidates do not fit.
	head, body string
	cost       int
}

// assemble packs the ranked turns and the matched topics' summaries into the
// budget. Priority: the exact turns that answer the message, then summaries
// of the matched topics that have been compacted, then a hint naming the
// topics on record. Broad queries put the topic overview first. The
// conversations' read locks are held.
func (s *Store) assemble(convs []*conv, ranked rankedList, matched []string, q tagging.Query, budget int, multi bool, style HintStyle) assembly {
	var a assembly
	const header = "# Recalled memory\n"
	used := s.tok.Count(header) + 2 // slack for joins
	headerBase := used

	// Summaries first for broad queries, after the turns otherwise.
	var sums []summaryPick
	if q.Broad {
		sums = s.overview(convs)
	} else {
		sums = s.topicSummaries(convs, matched, ranked)
	}
	if s.opts.TagPriority != nil {
		// Tag rules put some topics first.
		sort.SliceStable(sums, func(i, j int) bool {
			return s.opts.TagPriority(sums[i].ref.Tag) > s.opts.TagPriority(sums[j].ref.Tag)
		})
	}
	var chosenSums []summaryPick
	takeSums := func(limit int) {
		rest := sums[:0]
		for _, sp := range sums {
			if used+sp.cost > limit {
				rest = append(rest, sp)
				continue
			}
			chosenSums = append(chosenSums, sp)
			used += sp.cost
		}
		sums = rest
	}
	if q.Broad {
		takeSums(budget * 2 / 3)
	} else {
		// Hierarchical assembly: compacted topics the message touches get up
		// to a fifth of the budget as summaries; exact turns get the rest.
		takeSums(used + budget/5)
	}

	// Standing rules are pinned; then exact turns, best first, first fit.
	pk := newPacker(s, budget, used, multi)
	rules := pk.pinRules(convs)
	pack := func() { pk.pack(ranked) }
	pack()
	used = pk.used
	if !q.Broad {
		takeSums(budget)
	}
	for _, sp := range chosenSums {
		a.breakdown.Summaries += sp.cost
	}
	hint := ""
	if room := budget - used; room > 30 {
		if m := s.opts.ContextHintMaxTokens; m > 0 {
			room = min(room, m+4)
		}
		hint = s.topicHint(convs, hintInput{style: style, room: room - 4, budget: budget, used: used, multi: multi})
		used += s.tok.Count(hint) + 1
	}

	text := render(header, rules, pk.picks, chosenSums, hint, q.Broad, multi)
	// The estimates are upper bounds; with the exact count in hand, what is
	// left is filled with the next best turns. Counts are kept by line:
	// each count after the first only counts the lines that changed.
	lines := make(map[string]int, 2*len(pk.picks)+16)
	seedLines(lines, rules, pk.picks)
	n := s.tok.CountChunks(text, lines)
	if budget-n > 16 && hint == "" {
		pk.used = n
		before := len(pk.picks)
		pack()
		if len(pk.picks) > before {
			seedLines(lines, nil, pk.picks[before:])
			text = render(header, rules, pk.picks, chosenSums, hint, q.Broad, multi)
			n = s.tok.CountChunks(text, lines)
		}
	}
	learnLines(lines, rules, pk.picks)
	picks := pk.picks
	a.breakdown.Headers = headerBase + pk.headers
	// Check the whole exactly; if over, drop the weakest parts worth the
	// overshoot (the hint first, then the lowest-ranked turns, then
	// summaries) and check again.
	for ; n > budget; n = s.tok.CountChunks(text, lines) {
		over := n - budget
		switch {
		case hint != "":
			hint = ""
		case len(picks) > 0:
			for over > 0 && len(picks) > 0 {
				over -= picks[len(picks)-1].cost
				picks = picks[:len(picks)-1]
			}
		case len(chosenSums) > 0:
			chosenSums = chosenSums[:len(chosenSums)-1]
		case len(rules) > 0:
			rules = rules[:len(rules)-1]
		default:
			text = s.tok.Truncate(text, budget)
			continue
		}
		text = render(header, rules, picks, chosenSums, hint, q.Broad, multi)
	}
	a.text, a.tokens = text, n
	a.breakdown.Turns = 0
	for _, p := range append(rules, picks...) {
		a.breakdown.Turns += p.cost
	}
	a.turnIDs = make([]string, 0, len(picks))
	a.refs = []TruncationRef{}
	slices.SortFunc(picks, pickCmp)
	for _, p := range picks {
		a.turnIDs = append(a.turnIDs, itemID(p.c, p.seq, multi))
		if p.ref != nil {
			a.refs = append(a.refs, *p.ref)
		}
	}
	a.summaries = make([]SummaryRef, 0, len(chosenSums))
	for _, sp := range chosenSums {
		a.summaries = append(a.summaries, sp.ref)
	}
	a.included = make([]Inclusion, 0, len(rules)+len(picks)+len(chosenSums))
	for _, r := range rules {
		a.included = append(a.included, Inclusion{ID: itemID(r.c, r.seq, multi), Kind: "rule", Mode: IncludeAlways})
	}
	for _, p := range picks {
		a.included = append(a.included, Inclusion{ID: itemID(p.c, p.seq, multi), Kind: "turn", Mode: p.mode, Tag: p.c.turn(p.seq).primary()})
	}
	for _, sp := range chosenSums {
		mode := IncludeAgent
		if w, ok := sp.c.working[sp.ref.Tag]; ok && w.Depth != DepthNone {
			mode = IncludeManual
		}
		a.included = append(a.included, Inclusion{ID: sp.ref.ID, Kind: sp.ref.Kind, Mode: mode, Tag: sp.ref.Tag})
	}
	if hint != "" {
		a.breakdown.TopicHint = s.tok.Count(hint)
	}
	return a
}

// seedLines puts the remembered counts of the picks' lines in lines (the
// chunk counts an assembly's exact count uses; see linecount.go).
func seedLines(lines map[string]int, rules, picks []pick) {
	eachTurnLine(rules, picks, func(p *pick, t *turnMeta) {
		if n, ok := p.c.cachedLine(t); ok {
			lines[p.text+"\n"] = n
		}
	})
}

// learnLines remembers the counts of the picks' lines the assembly's count
// made (a line is a chunk of its own when what follows it starts a line).
func learnLines(lines map[string]int, rules, picks []pick) {
	eachTurnLine(rules, picks, func(p *pick, t *turnMeta) {
		if _, ok := p.c.cachedLine(t); ok {
			return
		}
		if n, ok := lines[p.text+"\n"]; ok {
			p.c.cacheLine(t, n)
		}
	})
}

// eachTurnLine calls fn for each pick that is a turn's whole line (not a
// cut one, which carries a reference).
func eachTurnLine(rules, picks []pick, fn func(*pick, *turnMeta)) {
	for _, ps := range [2][]pick{rules, picks} {
		for i := range ps {
			p := &ps[i]
			if t := p.c.turn(p.seq); t != nil && p.ref == nil {
				fn(p, t)
			}
		}
	}
}

// packer fills a budget with turns: standing rules first, then ranked
// turns best first, first fit, each new session's header counted with the
// turn that opens it. Costs are estimated from counts made once (each
// turn's content at ingest, each speaker's prefix once); the assembly is
// counted exactly at the end.
type packer struct {
	s        *Store
	budget   int
	used     int
	headers  int // estimated tokens of session headers
	multi    bool
	sessions map[sessKey]bool
	hcosts   map[sessKey]int // estimated header cost of each session seen
	taken    map[rkey]bool   // turns taken, tried and left, or pinned
	picks    []pick
	tail     []candidate // scratch for the ranking's unsorted rest
}

// sessKey names one session of one conversation.
type sessKey struct {
	c       *conv
	session int
}

func newPacker(s *Store, budget, used int, multi bool) *packer {
	return &packer{s: s, budget: budget, used: used, multi: multi, sessions: map[sessKey]bool{},
		hcosts: map[sessKey]int{}, taken: map[rkey]bool{}}
}

// headerCost is the estimated cost of sk's session header, or 0 once the
// assembly has it.
func (p *packer) headerCost(sk sessKey, c *conv, t *turnMeta) int {
	if p.sessions[sk] {
		return 0
	}
	n, ok := p.hcosts[sk]
	if !ok {
		n = estimateTokens(sessionHeader(c, t, p.multi)) + 1
		p.hcosts[sk] = n
	}
	return n
}

// pinRules takes the standing rules, the newest first, within a sixth of
// the budget.
func (p *packer) pinRules(convs []*conv) []pick {
	var rules []pick
	ruleUsed := 0
	for _, c := range convs {
		for i := len(c.rules) - 1; i >= 0; i-- {
			t := c.turn(c.rules[i])
			cost := t.Tokens + p.s.prefixTokens(c, t.Seq) + 1
			if ruleUsed+cost > p.budget/ruleShare {
				continue
			}
			content, err := c.log.ReadContent(t.Start, t.End)
			if err != nil {
				continue
			}
			p.used += cost
			ruleUsed += cost
			rules = append(rules, pick{c: c, seq: t.Seq, text: turnPrefix(t) + oneLine(content), cost: cost, mode: IncludeAlways})
			p.taken[rkey{c, t.Seq}] = true
		}
	}
	return rules
}

// pack adds ranked turns not taken yet, best first, while they fit.
// Below the ranking's sorted head only turns whose text fits what is left
// can be taken (the room only shrinks): those are picked out and sorted,
// and the packing goes on through them, as through the whole ranking.
func (p *packer) pack(ranked rankedList) {
	p.packFrom(ranked.list[:ranked.sorted], 0)
	if ranked.sorted == ranked.len() || p.used >= p.budget-4 {
		return
	}
	room := p.budget - p.used
	tail := p.tail[:0]
	for _, cd := range ranked.list[ranked.sorted:] {
		if l, _ := cd.c.liteAt(cd.seq); int(l.tokens)+1 <= room {
			tail = append(tail, cd)
		}
	}
	slices.SortFunc(tail, candCmp)
	p.packFrom(tail, ranked.sorted)
	p.tail = tail
}

// packFrom packs ranked, whose first entry is at rank from.
func (p *packer) packFrom(ranked []candidate, from int) {
	for j := range ranked {
		i, cd := from+j, &ranked[j]
		if p.used >= p.budget-4 {
			break
		}
		// Most of a long ranking does not fit once the budget is nearly
		// full: that is decided on the compact entry alone (the text, then
		// the line), before anything else.
		l, _ := cd.c.liteAt(cd.seq)
		if i >= cutRanks && p.used+int(l.tokens)+1 > p.budget {
			continue
		}
		cost := int(l.tokens) + p.s.prefixTokens(cd.c, cd.seq) + 1
		if i >= cutRanks && p.used+cost > p.budget {
			continue // does not fit even without its session's header
		}
		k := rkey{cd.c, cd.seq}
		if p.taken[k] {
			continue
		}
		t := cd.c.turn(cd.seq)
		if t == nil {
			continue
		}
		sk := sessKey{cd.c, t.Session}
		hcost := p.headerCost(sk, cd.c, t)
		if p.used+cost+hcost > p.budget {
			if i < cutRanks && cd.c.log != nil {
				p.cut(cd, t, sk, hcost)
			}
			continue
		}
		content, err := cd.c.log.ReadContent(t.Start, t.End)
		if err != nil {
			p.s.log.Warn("unreadable turn skipped", "conversation", cd.c.id, "turn", cd.seq, "err", err)
			p.taken[k] = true
			continue
		}
		p.taken[k] = true
		p.sessions[sk] = true
		p.used += cost + hcost
		p.headers += hcost
		p.picks = append(p.picks, pick{c: cd.c, seq: cd.seq, text: turnPrefix(t) + oneLine(content), cost: cost, mode: includeMode(cd.c, t)})
	}
}

// cut takes a best-ranked turn too long for what is left: its head and a
// reference to its whole record, or only the reference (with a preview)
// when no useful head fits. The top turn may use two thirds of the room,
// the next ones half, so that other turns still fit.
func (p *packer) cut(cd *candidate, t *turnMeta, sk sessKey, hcost int) {
	room := p.budget - p.used - hcost - 1
	if room <= 0 {
		return
	}
	content, err := cd.c.log.ReadContent(t.Start, t.End)
	if err != nil {
		return
	}
	share := room / 2
	if len(p.picks) == 0 {
		share = room * 2 / 3
	}
	text, n, ref, ok := p.s.cutTurn(cd.c, t, content, share)
	if !ok {
		if text, n, ref, ok = p.s.droppedTurn(cd.c, t, content, min(room, 64)); !ok {
			return
		}
	}
	p.taken[rkey{cd.c, cd.seq}] = true
	p.sessions[sk] = true
	p.used += n + 1 + hcost
	p.headers += hcost
	p.picks = append(p.picks, pick{c: cd.c, seq: cd.seq, text: text, cost: n + 1, mode: includeMode(cd.c, t), ref: &ref})
}

// pickCmp orders picks by conversation, then in time order. A pick is one
// turn: no two are equal.
func pickCmp(a, b pick) int {
	if a.c != b.c {
		return strings.Compare(a.c.id, b.c.id)
	}
	return cmp.Compare(a.seq, b.seq)
}

// render lays the assembly out: turns grouped by session in time order, then
// summaries (or summaries first for broad queries), then the topic hint.
func render(header string, rules, picks []pick, sums []summaryPick, hint string, broad, multi bool) string {
	var b strings.Builder
	size := len(header) + len(hint) + 128
	for _, p := range picks {
		size += len(p.text) + 48 // and perhaps a session header
	}
	for _, sp := range sums {
		size += len(sp.head) + len(sp.body) + 2
	}
	b.Grow(size)
	b.WriteString(header)
	if len(rules) > 0 {
		b.WriteString("## Standing rules (always included)\n")
		for _, r := range rules {
			b.WriteString(r.text)
			b.WriteByte('\n')
		}
	}
	writeSums := func() {
		if len(sums) == 0 {
			return
		}
		b.WriteString("## Topic summaries\n")
		for _, sp := range sums {
			b.WriteString(sp.head)
			b.WriteByte('\n')
			b.WriteString(sp.body)
			b.WriteByte('\n')
		}
	}
	if broad {
		writeSums()
	}
	if len(picks) > 0 {
		ordered := slices.Clone(picks)
		slices.SortFunc(ordered, pickCmp)
		b.WriteString("## Past turns (verbatim)\n")
		last := ""
		for _, p := range ordered {
			t := p.c.turn(p.seq)
			if sk := sessionKey(p.c, t); sk != last {
				b.WriteString(sessionHeader(p.c, t, multi))
				b.WriteByte('\n')
				last = sk
			}
			b.WriteString(p.text)
			b.WriteByte('\n')
		}
	}
	if !broad {
		writeSums()
	}
	if hint != "" {
		b.WriteString(hint)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

func sessionKey(c *conv, t *turnMeta) string { return c.id + "#" + strconv.Itoa(t.Session) }

func sessionHeader(c *conv, t *turnMeta, multi bool) string {
	date := t.When.Format("2 January 2006, 15:04")
	if multi {
		return "### " + c.id + " · session " + strconv.Itoa(t.Session) + " · " + date
	}
	return "### session " + strconv.Itoa(t.Session) + " · " + date
}

func turnPrefix(t *turnMeta) string {
	return "[" + turnID(t.Seq) + "] " + speakerName(t) + ": "
}

// oneLine keeps a turn on one logical line block: the content is verbatim,
// but trailing whitespace is dropped.
func oneLine(s string) string { return strings.TrimRight(s, " \t\r\n") }

// topicSummaries returns, for the topics a query matched (or that its best
// turns carry), the Layer 2 summary and the segment summaries of compacted
// turns, best first.
func (s *Store) topicSummaries(convs []*conv, matched []string, ranked rankedList) []summaryPick {
	var out []summaryPick
	type tagKey struct {
		c   *conv
		tag string
	}
	seenTag := map[tagKey]bool{}
	seenSeg := map[*segmentRec]bool{}
	tags := append([]string(nil), matched...)
	for _, cd := range ranked.top(10) {
		if t := cd.c.turn(cd.seq); t != nil && len(t.Tags) > 0 {
			tags = appendUnique(tags, t.Tags[0])
		}
	}
	for _, c := range convs {
		for _, tag := range tags {
			if ts, ok := c.tagSums[tag]; ok && !seenTag[tagKey{c, tag}] {
				seenTag[tagKey{c, tag}] = true
				head := "### " + tag
				out = append(out, summaryPick{c: c, ref: SummaryRef{Kind: "tag", ID: tag, Tag: tag, ConversationID: c.id, Tokens: ts.Tokens},
					head: head, body: ts.Summary, cost: estimateTokens(head) + ts.Tokens + 2})
			}
		}
		// Segments holding the best compacted hits.
		for _, cd := range ranked.top(40) {
			if cd.c != c {
				continue
			}
			t := c.turn(cd.seq)
			if t.Segment == 0 || t.Segment > len(c.segs) {
				continue
			}
			sg := c.segs[t.Segment-1]
			if seenSeg[sg] {
				continue
			}
			seenSeg[sg] = true
			head := "### " + sg.Primary + " (turns " + turnID(sg.First) + "-" + turnID(sg.Last) + ", " + sg.Start.Format("2 Jan 2006") + ")"
			out = append(out, summaryPick{c: c, ref: SummaryRef{Kind: "segment", ID: "s" + strconv.Itoa(sg.ID), Tag: sg.Primary, ConversationID: c.id, Tokens: sg.SummaryTokens},
				head: head, body: sg.Summary, cost: estimateTokens(head) + sg.SummaryTokens + 2})
		}
	}
	return out
}

// overview returns every topic's Layer 2 summary in cover order, for broad
// queries ("what have we discussed?"). Topics not compacted yet have no
// summary; their turns compete on relevance and the topic hint names them.
func (s *Store) overview(convs []*conv) []summaryPick {
	var out []summaryPick
	for _, c := range convs {
		for _, tag := range coverOrder(c) {
			if ts, ok := c.tagSums[tag]; ok {
				head := fmt.Sprintf("### %s (%d turns)", tag, c.vocab[tag])
				out = append(out, summaryPick{c: c, ref: SummaryRef{Kind: "tag", ID: tag, Tag: tag, ConversationID: c.id, Tokens: ts.Tokens},
					head: head, body: ts.Summary, cost: estimateTokens(head) + ts.Tokens + 2})
			}
		}
	}
	return out
}

// coverOrder orders a conversation's topics greedily so that each next tag
// covers the most turns not yet covered (set cover); it only orders the list.
func coverOrder(c *conv) []string {
	covered := map[int]bool{}
	remaining := map[string]bool{}
	for tag := range c.vocab {
		if tag != tagging.General {
			remaining[tag] = true
		}
	}
	var out []string
	for len(remaining) > 0 && len(out) < 200 {
		best, bestN := "", -1
		for tag := range remaining {
			n := 0
			for _, seq := range c.tagSeqs[tag] {
				if !covered[seq] {
					n++
				}
			}
			if n > bestN || n == bestN && tag < best {
				best, bestN = tag, n
			}
		}
		if bestN <= 0 {
			break
		}
		out = append(out, best)
		delete(remaining, best)
		for _, seq := range c.tagSeqs[best] {
			covered[seq] = true
		}
	}
	return out
}

// prefixTokens is an upper bound on the tokens of turn seq's line prefix
// ("[t12] Caroline: ") and of the join with its content: the speaker part
// is counted once per speaker and conversation (conv.speakerToks), the id
// digits are bounded. It reads the turn's compact entry only. c.mu is held
// (for reading will do).
func (s *Store) prefixTokens(c *conv, seq int) int {
	l, _ := c.liteAt(seq)
	var n int
	if i := int(l.speaker); i < len(c.speakerToks) {
		n = int(atomic.LoadInt32(&c.speakerToks[i]))
		if n == 0 {
			n = s.tok.Count(speakerPrefix(c.speakerNames[i]))
			atomic.StoreInt32(&c.speakerToks[i], int32(n))
		}
	} else if t := c.turn(seq); t != nil {
		who := speakerName(t)
		v, ok := s.prefixCache.Load(who)
		if !ok {
			v = s.tok.Count(speakerPrefix(who))
			s.prefixCache.Store(who, v)
		}
		n = v.(int)
	}
	digits := 1
	for v := seq; v >= 10; v /= 10 {
		digits++
	}
	return n + 2 + (digits+2)/3 + 1
}

// speakerPrefix is the part of a turn line's prefix that names its speaker.
func speakerPrefix(who string) string { return "] " + who + ": " }

// estimateTokens bounds the cl100k tokens of a short header-like string
// from above without running the tokenizer: such strings (tags, dates, ids,
// punctuation) average well over 2.5 bytes per token. Assemblies are
// counted exactly at the end, so an estimate can only cost a little slack.
func estimateTokens(s string) int { return (len(s)*2)/5 + 2 }

// ruleShare: standing rules may take 1/ruleShare of a budget.
const ruleShare = 6

func itemID(c *conv, seq int, multi bool) string {
	if multi {
		return c.id + "/" + turnID(seq)
	}
	return turnID(seq)
}

// includeMode says why a ranked turn is in a context: it belongs to a topic
// the model paged in, or it was chosen for the message.
func includeMode(c *conv, t *turnMeta) string {
	if c.pagedIn(t) {
		return IncludeManual
	}
	return IncludeAgent
}
