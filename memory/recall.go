package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

const (
	defaultRecallTokens = 2000
	minBudget           = 100
	maxBudget           = 32000
	rrfK                = 60.0
	lexicalDepth        = 300 // BM25 hits fetched per query
	maxTagPostings      = 400 // turns per matched tag scored
)

// candidate is one past turn under consideration for an assembly.
type candidate struct {
	c     *conv
	seq   int
	score float64
}

// Recall assembles the context that matters for a message, inside a strict
// cl100k token budget (recall_context): the context items of the request
// (items.go) first, then memory. It stores nothing of the message; what
// the recall used is appended to the conversation's request history
// (Requests).
func (s *Store) Recall(ctx context.Context, req RecallRequest) (RecallResult, error) {
	ctx, end, err := s.begin(ctx, opRead)
	if err != nil {
		return RecallResult{}, err
	}
	defer end()
	rewrites := s.logRewrites.Load()
	res, err := s.recall(ctx, req)
	if err != nil {
		return res.RecallResult, err
	}
	// After the conversations' locks are released: a history for people.
	rec := &RequestRecord{
		At: s.now().UTC(), ConversationID: res.conv, Scope: req.Scope, MessageTokens: s.tok.Count(req.Message),
		Budget: res.Breakdown.Budget, Tokens: res.Tokens, Items: res.ContextItems, Search: res.ItemSearch,
		Memory: RequestMemory{MatchedTags: res.MatchedTags, TurnIDs: res.TurnIDs, Summaries: res.Summaries, Included: res.Included, Breakdown: res.Breakdown},
	}
	if rec.Scope == "" {
		rec.Scope = ScopeConversation
	}
	if recallRecordHook != nil {
		recallRecordHook()
	}
	switch err := s.appendRequest(rec, rewrites); {
	case errors.Is(err, errRewrittenMeanwhile):
		s.log.Debug("a forget or redaction ran during the recall: its request record is not kept", "conversation", res.conv)
	case err != nil:
		s.log.Warn("recording the request context failed; the recall is unaffected", "conversation", res.conv, "err", err)
	default:
		res.RequestID = rec.ID
	}
	return res.RecallResult, nil
}

// recallResult is a RecallResult with the conversation whose session
// context it used.
type recallResult struct {
	RecallResult
	conv string
}

func (s *Store) recall(ctx context.Context, req RecallRequest) (recallResult, error) {
	res := recallResult{RecallResult: RecallResult{MatchedTags: []string{}, TurnIDs: []string{}, Summaries: []SummaryRef{}, Signals: []string{}, Included: []Inclusion{}, ContextItems: []ItemDecision{}, TruncationRefs: []TruncationRef{}}}
	msg := strings.TrimSpace(req.Message)
	if msg == "" {
		return res, fmt.Errorf("%w: message must not be empty", ErrInvalid)
	}
	if !utf8.ValidString(msg) {
		return res, fmt.Errorf("%w: message is not valid UTF-8", ErrInvalid)
	}
	budget, err := checkBudget(req.MaxTokens, defaultRecallTokens)
	if err != nil {
		return res, err
	}
	res.Breakdown.Budget = budget
	convs, unread, err := s.scopeConvs(ctx, req.ConversationID, req.Scope)
	if err != nil {
		return res, err
	}
	q := tagging.ClassifyQuery(msg, s.now())
	res.Broad, res.Temporal = q.Broad, q.Temporal
	if res.conv, err = s.resolve(req.ConversationID); err != nil {
		return res, err
	}
	// A recall over every conversation names each turn with its
	// conversation ("work/t12"), however many answer, and is ranked by
	// relevance (there is no single timeline); only one conversation's
	// recall takes the hierarchical assembly.
	multi := req.Scope == ScopeAll
	if s.opts.Assembly == AssemblyHierarchical && len(convs) == 1 && !multi {
		r, err := s.recallHierarchy(ctx, convs[0], budget, res.RecallResult)
		res.RecallResult = r
		return res, err
	}
	// Embed the query before taking any lock: a model takes milliseconds.
	var qvec []float32
	var kvecs [][]float32
	if len(convs) > 0 || s.items.hasAgentItems() {
		if kinds := kindTexts(q); len(kinds) > 0 && len(convs) > 0 {
			v := s.queryVectors(ctx, append([]string{msg}, kinds...)...)
			qvec, kvecs = v[0], v[1:]
		} else {
			qvec = s.queryVector(ctx, msg)
		}
	}
	items, err := s.selectItems(ctx, res.conv, msg, qvec, int(float64(budget)*s.items.search.Share))
	if err != nil {
		return res, err
	}
	res.ContextItems, res.ItemSearch = items.decisions, items.search
	total := budget
	// join puts the items' section before memory's and keeps the whole
	// within the budget.
	// memTokens is mem's token count when known (-1 if not).
	join := func(mem string, memTokens int) {
		text, n := mem, memTokens
		if items.text != "" {
			text, n = items.text, -1
			if mem != "" {
				text += "\n\n" + mem
			}
		}
		if n < 0 {
			n = s.tok.Count(text)
		}
		if n > total {
			text = s.tok.Truncate(text, total)
			n = s.tok.Count(text)
		}
		res.Text, res.Tokens = text, n
		res.Breakdown.ContextItems = items.tokens
	}
	if items.tokens > 0 {
		budget -= items.tokens + 2
	}
	if len(convs) == 0 || budget < minMemoryBudget {
		mem := ""
		if len(convs) == 0 && budget >= minMemoryBudget {
			mem = s.tok.Truncate("No memory is stored for this conversation yet.", budget)
		}
		join(mem, -1)
		return res, nil
	}
	for _, c := range convs {
		c.mu.RLock()
		defer c.mu.RUnlock()
	}

	q = anchorDates(msg, q, convs)
	ranked, matched, signals, err := s.rank(ctx, convs, msg, qvec, kvecs, q, candidateDepth(budget))
	if err != nil {
		return res, err
	}
	res.MatchedTags, res.Signals = matched, signals
	defer ranked.release()
	ranked, res.Excluded = excludeHeld(ranked, req.Exclude)
	note := ""
	if res.CatchingUp, res.IndexedThrough = catchingUp(convs); res.CatchingUp {
		note = "\n" + catchingUpNote(res.IndexedThrough)
	}
	if unread != "" {
		note += "\n" + unread
	}
	res.HintStyle = HintStyleFor(s.set.get().HintStyle, req.Client)
	a := s.assemble(convs, ranked, matched, q, budget-s.tok.Count(note), multi, res.HintStyle)
	res.TurnIDs, res.Summaries, res.Breakdown, res.Included = a.turnIDs, a.summaries, a.breakdown, a.included
	res.Breakdown.Budget = total
	if note == "" {
		join(a.text, a.tokens)
	} else {
		join(a.text+note, -1)
	}
	res.TruncationRefs = a.refs
	return res, nil
}

// recallHierarchy answers a recall with a hierarchical assembly of c,
// first making the few per-message summaries it lacks (lazily, bounded).
func (s *Store) recallHierarchy(ctx context.Context, c *conv, budget int, res RecallResult) (RecallResult, error) {
	s.lazyTurnSums(ctx, c, budget)
	c.mu.RLock()
	defer c.mu.RUnlock()
	note := ""
	if res.CatchingUp, res.IndexedThrough = catchingUp([]*conv{c}); res.CatchingUp {
		note = "\n" + catchingUpNote(res.IndexedThrough)
	}
	a := s.assembleHierarchy(c, budget-s.tok.Count(note))
	res.Text, res.Tokens = a.text+note, s.tok.Count(a.text+note)
	res.TurnIDs, res.Summaries, res.Breakdown, res.Included = a.turnIDs, a.summaries, a.breakdown, a.included
	res.TruncationRefs = a.refs
	res.Signals = []string{"hierarchy"}
	res.Breakdown.Budget = budget
	return res, nil
}

// excludeHeld drops the candidates whose text is one the caller holds.
func excludeHeld(ranked rankedList, held []string) (rankedList, int) {
	if len(held) == 0 {
		return ranked, 0
	}
	keys := make(map[string]bool, len(held))
	for _, t := range held {
		if strings.TrimSpace(t) != "" {
			keys[textKey(t)] = true
		}
	}
	out := ranked.filter(func(cd candidate) bool {
		t := cd.c.turn(cd.seq)
		return t == nil || t.TextKey == "" || !keys[t.TextKey]
	})
	return out, ranked.len() - out.len()
}

// minMemoryBudget is the least budget worth assembling memory in once the
// context items have taken their part.
const minMemoryBudget = 24

// anchorDates resolves the message's relative dates ("last week", "two
// days ago", "in May") against the conversation's own time line when the
// wall clock finds no turn there: a memory is often recalled long after
// its sessions, and "last week" then means the week before its latest
// session. The conversations' read locks are held.
func anchorDates(msg string, q tagging.Query, convs []*conv) tagging.Query {
	if q.Since.IsZero() && q.Until.IsZero() || anyTurnIn(convs, q) {
		return q
	}
	var latest time.Time
	for _, c := range convs {
		for i := len(c.turns) - 1; i >= 0; i-- {
			if !c.turns[i].Empty {
				if w := c.turns[i].When; w.After(latest) {
					latest = w
				}
				break
			}
		}
	}
	if latest.IsZero() {
		return q
	}
	// End of the latest session's day: "today" includes it.
	a := tagging.ClassifyQuery(msg, latest)
	if anyTurnIn(convs, a) {
		return a
	}
	return q
}

func anyTurnIn(convs []*conv, q tagging.Query) bool {
	for _, c := range convs {
		for i := range c.turns {
			if !c.turns[i].Empty && inRange(c.turns[i].When, q.Since, q.Until) {
				return true
			}
		}
	}
	return false
}

// candidateDepth is how many lexical and dense hits to fetch: enough to
// fill the budget several times over with average turns.
func candidateDepth(budget int) int {
	return min(1000, max(lexicalDepth, budget/8))
}

func checkBudget(n, def int) (int, error) {
	if n == 0 {
		return def, nil
	}
	if n < minBudget || n > maxBudget {
		return 0, fmt.Errorf("%w: max_tokens must be between %d and %d (got %d)", ErrInvalid, minBudget, maxBudget, n)
	}
	return n, nil
}

// scopeConvs returns the conversations a read covers: the one named (or the
// default), or every one for scope "all". A conversation with nothing stored
// yields none. For scope "all", one that cannot be read (a damaged vc.db
// page) is left out so that the others are served; unread's note says so.
func (s *Store) scopeConvs(ctx context.Context, id string, scope Scope) (convs []*conv, unread string, err error) {
	switch scope {
	case "", ScopeConversation:
		id, err := s.resolve(id)
		if err != nil {
			return nil, "", err
		}
		c, err := s.conversation(ctx, id, false)
		if err != nil {
			if isNotFound(err) {
				return nil, "", nil
			}
			return nil, "", err
		}
		return []*conv{c}, "", nil
	case ScopeAll:
		if id != "" {
			if _, err := s.resolve(id); err != nil {
				return nil, "", err
			}
		}
		ids, err := s.conversationIDs()
		if err != nil {
			return nil, "", err
		}
		out := make([]*conv, 0, len(ids))
		var skipped []string
		var cause error
		for _, cid := range ids {
			c, err := s.conversation(ctx, cid, false)
			switch {
			case err == nil:
				out = append(out, c)
			case isNotFound(err) || errors.Is(err, ErrForbidden):
			case errors.Is(err, ErrStorage):
				s.log.Warn("a conversation could not be read; scope \"all\" goes on without it", "conversation", cid, "err", err)
				skipped, cause = append(skipped, cid), err
			default:
				return nil, "", err
			}
		}
		return out, unreadNote(skipped, cause), nil
	default:
		return nil, "", fmt.Errorf("%w: scope must be \"conversation\" or \"all\" (got %q)", ErrInvalid, scope)
	}
}

// unreadNote tells a scope "all" answer which conversations it left out,
// and why ("" when none).
func unreadNote(ids []string, cause error) string {
	if len(ids) == 0 {
		return ""
	}
	return "(note: left out, as they could not be read: " + shortList(ids, 5) + "; " + cause.Error() + ")"
}

func appendUnique(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}

type queryTag struct {
	tag    string
	weight float64
}

// queryTags finds the conversation's existing tags that a query mentions (a
// closed set: a query never invents topics). A tag matches when every one of
// its words is among the query's terms; a tag whose related terms match
// counts at half weight.
func (c *conv) queryTags(terms []string) []queryTag {
	if len(terms) == 0 {
		return nil
	}
	set := make(map[string]bool, len(terms))
	for _, t := range terms {
		set[t] = true
	}
	weights := map[string]float64{}
	seen := map[string]bool{}
	for w := range set {
		for _, cand := range c.wordTags[w] {
			if seen[cand] {
				continue
			}
			seen[cand] = true
			if !allIn(c.tagWords[cand], set) {
				continue
			}
			if c.vocab[cand] > 0 && !c.spreadTag(cand) {
				weights[cand] = 1
			}
			for _, tag := range c.relatedBy[cand] {
				weights[tag] = max(weights[tag], 0.5)
			}
		}
	}
	out := make([]queryTag, 0, len(weights))
	for t, w := range weights {
		if w > 0 {
			out = append(out, queryTag{t, w})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].weight != out[j].weight {
			return out[i].weight > out[j].weight
		}
		ci, cj := c.vocab[out[i].tag], c.vocab[out[j].tag]
		if ci != cj {
			return ci < cj // rarer first
		}
		return out[i].tag < out[j].tag
	})
	if len(out) > 12 {
		out = out[:12]
	}
	return out
}

func allIn(words []string, set map[string]bool) bool {
	if len(words) == 0 {
		return false
	}
	for _, w := range words {
		if !set[w] {
			return false
		}
	}
	return true
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

func hasTag(list []queryTag, tag string) bool {
	for _, q := range list {
		if q.tag == tag {
			return true
		}
	}
	return false
}
