package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vc-mcp/vc-mcp/index"
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

// tuning holds the rank-fusion weights. BM25 over the original turns is the
// strongest single signal; tags bridge vocabulary; the rest nudge. They were
// set on the LoCoMo dev split (see BENCHMARKS.md) and are not per-query.
type tuning struct {
	Lexical, Tags, Dense, Time, Recency float64
	Neighbor                            float64 // share of a hit's score given to its neighbours
	Speaker                             float64 // multiplier for turns by a speaker the query names
	Working                             float64 // multiplier for turns of topics paged in
	Answer                              float64 // share given to the turn right after a matching question
	Neighbor2                           float64 // extra decay for neighbours two turns away
}

var weights = tuning{
	Lexical: 1.0, Tags: 0.25, Dense: 0.8, Time: 0.6, Recency: 0.05,
	Neighbor: 0.5, Speaker: 1.25, Working: 1.15, Answer: 1.0, Neighbor2: 0.5,
}

// candidate is one past turn under consideration for an assembly.
type candidate struct {
	c     *conv
	seq   int
	score float64
}

// Recall assembles the context that matters for a message, inside a strict
// cl100k token budget (recall_context). It is read-only.
func (s *Store) Recall(ctx context.Context, req RecallRequest) (RecallResult, error) {
	ctx, end, err := s.begin(ctx, opRead)
	if err != nil {
		return RecallResult{}, err
	}
	defer end()
	res := RecallResult{MatchedTags: []string{}, TurnIDs: []string{}, Summaries: []SummaryRef{}, Signals: []string{}, Included: []Inclusion{}}
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
	convs, err := s.scopeConvs(ctx, req.ConversationID, req.Scope)
	if err != nil {
		return res, err
	}
	q := tagging.ClassifyQuery(msg, s.now())
	res.Broad, res.Temporal = q.Broad, q.Temporal
	if len(convs) == 0 {
		res.Text = s.tok.Truncate("No memory is stored for this conversation yet.", budget)
		res.Tokens = s.tok.Count(res.Text)
		return res, nil
	}
	// Embed the query before taking any lock: a model takes milliseconds.
	qvec := s.queryVector(ctx, msg)
	for _, c := range convs {
		c.mu.RLock()
		defer c.mu.RUnlock()
	}

	ranked, matched, signals, err := s.rank(ctx, convs, msg, qvec, q, candidateDepth(budget))
	if err != nil {
		return res, err
	}
	res.MatchedTags, res.Signals = matched, signals
	note := ""
	if res.CatchingUp, res.IndexedThrough = catchingUp(convs); res.CatchingUp {
		note = "\n" + catchingUpNote(res.IndexedThrough)
	}
	a := s.assemble(convs, ranked, matched, q, budget-s.tok.Count(note), len(convs) > 1)
	res.Text, res.Tokens = a.text+note, s.tok.Count(a.text+note)
	res.TurnIDs, res.Summaries, res.Breakdown, res.Included = a.turnIDs, a.summaries, a.breakdown, a.included
	res.Breakdown.Budget = budget
	return res, nil
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
// yields none.
func (s *Store) scopeConvs(ctx context.Context, id string, scope Scope) ([]*conv, error) {
	switch scope {
	case "", ScopeConversation:
		id, err := s.resolve(id)
		if err != nil {
			return nil, err
		}
		c, err := s.conversation(ctx, id, false)
		if err != nil {
			if isNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		return []*conv{c}, nil
	case ScopeAll:
		if id != "" {
			if _, err := s.resolve(id); err != nil {
				return nil, err
			}
		}
		ids, err := s.conversationIDs()
		if err != nil {
			return nil, err
		}
		out := make([]*conv, 0, len(ids))
		for _, cid := range ids {
			c, err := s.conversation(ctx, cid, false)
			if err != nil {
				if isNotFound(err) {
					continue
				}
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: scope must be \"conversation\" or \"all\" (got %q)", ErrInvalid, scope)
	}
}

// rank scores past turns for a query by fusing ranked lists (reciprocal rank
// fusion): BM25 over the original turns, tag overlap weighted by IDF,
// time, speaker and recency. The conversations' read locks are held.
func (s *Store) rank(ctx context.Context, convs []*conv, msg string, qvec []float32, q tagging.Query, depth int) ([]candidate, []string, []string, error) {
	byID := map[string]*conv{}
	ids := make([]string, len(convs))
	for i, c := range convs {
		byID[c.id], ids[i] = c, c.id
	}
	type key struct {
		c   *conv
		seq int
	}
	scores := map[key]float64{}
	add := func(list []key, w float64) {
		for r, k := range list {
			scores[k] += w / (rrfK + float64(r+1))
		}
	}
	var signals []string

	// 1. BM25 over original turns.
	hits, err := s.ix.Search(ctx, index.Query{Text: msg, Conversations: ids, Kinds: []string{"turn"}, Limit: depth})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("search: %w", err)
	}
	lex := make([]key, 0, len(hits))
	for _, h := range hits {
		if c := byID[h.Conversation]; c != nil && c.turn(int(h.Seq)) != nil {
			lex = append(lex, key{c, int(h.Seq)})
		}
	}
	if len(lex) > 0 {
		signals = append(signals, "bm25")
	}
	add(lex, weights.Lexical)

	// 2. Tag overlap, weighted by IDF (rare tags weigh more; related at half;
	// tags close in meaning by their confidence).
	terms := index.Analyze(msg)
	var matched []string
	tagScore := map[key]float64{}
	for _, c := range convs {
		qtags := c.queryTags(terms)
		if qvec != nil {
			for _, st := range semanticTags(c, qvec) {
				if !hasTag(qtags, st.tag) {
					qtags = append(qtags, st)
				}
			}
		}
		for _, qt := range qtags {
			matched = appendUnique(matched, qt.tag)
			idf := math.Log(1 + float64(len(c.turns))/float64(max(1, c.vocab[qt.tag])))
			seqs := c.tagSeqs[qt.tag]
			if len(seqs) > maxTagPostings {
				seqs = seqs[len(seqs)-maxTagPostings:] // the most recent
			}
			for _, seq := range seqs {
				tagScore[key{c, seq}] += idf * qt.weight
			}
		}
	}
	if len(tagScore) > 0 {
		signals = append(signals, "tags")
		add(sortKeys(tagScore, func(k key) int { return k.seq }), weights.Tags)
	}

	// 3. Dense: cosine over turn vectors, weighted by how clearly the best
	// matches stand out.
	if qvec != nil {
		for _, c := range convs {
			seqs, _, conf := denseScores(c, qvec, depth)
			if conf <= 0 {
				continue
			}
			list := make([]key, len(seqs))
			for i, seq := range seqs {
				list[i] = key{c, seq}
			}
			add(list, weights.Dense*conf)
			signals = appendUnique(signals, "dense")
		}
	}

	// 4. Time: an explicit date range, or "the first/last time".
	var timed []key
	if !q.Since.IsZero() || !q.Until.IsZero() {
		for k := range scores {
			t := k.c.turn(k.seq)
			if inRange(t.When, q.Since, q.Until) {
				timed = append(timed, k)
			}
		}
		sort.Slice(timed, func(i, j int) bool { return scores[timed[i]] > scores[timed[j]] })
	}
	if q.Order != "" {
		pool := make([]key, 0, len(scores))
		for k := range scores {
			pool = append(pool, k)
		}
		sort.Slice(pool, func(i, j int) bool {
			ti, tj := pool[i].c.turn(pool[i].seq).When, pool[j].c.turn(pool[j].seq).When
			if q.Order == "last" {
				return ti.After(tj)
			}
			return ti.Before(tj)
		})
		if len(pool) > 50 {
			pool = pool[:50]
		}
		timed = append(timed, pool...)
	}
	if len(timed) > 0 {
		signals = append(signals, "time")
		add(timed, weights.Time)
	}

	// 5. Recency: a light prior towards the latest turns.
	var recent []key
	for _, c := range convs {
		for seq := len(c.turns); seq > 0 && seq > len(c.turns)-20; seq-- {
			if !c.turns[seq-1].Empty {
				recent = append(recent, key{c, seq})
			}
		}
	}
	add(recent, weights.Recency)

	// 6. Neighbours: the turn before or after a strong hit often carries the
	// question it answers or the answer it prompts.
	base := make(map[key]float64, len(scores))
	for k, v := range scores {
		base[k] = v
	}
	for k, v := range base {
		t := k.c.turn(k.seq)
		for _, d := range []int{-2, -1, 1, 2} {
			n := key{k.c, k.seq + d}
			nt := k.c.turn(n.seq)
			if nt == nil || nt.Empty || nt.Session != t.Session {
				continue
			}
			share := weights.Neighbor
			if d == 1 && t.Question {
				share = weights.Answer // the reply to a matching question
			}
			if d == -2 || d == 2 {
				share *= weights.Neighbor2
			}
			if bump := v * share; bump > scores[n]-base[n] {
				scores[n] = base[n] + bump
			}
		}
	}

	// 7. Boosts: the speaker the question is about, topics paged in.
	speakers := map[string]bool{}
	for _, sp := range q.Speakers {
		for _, c := range convs {
			if c.speakers[strings.ToLower(sp)] > 0 {
				speakers[strings.ToLower(sp)] = true
			}
		}
	}
	if len(speakers) > 0 {
		signals = append(signals, "speaker")
	}
	out := make([]candidate, 0, len(scores))
	for k, v := range scores {
		t := k.c.turn(k.seq)
		if t.Empty {
			continue
		}
		if speakers[strings.ToLower(t.Name)] {
			v *= weights.Speaker
		}
		if k.c.pagedIn(t) {
			v *= weights.Working
		}
		out = append(out, candidate{c: k.c, seq: k.seq, score: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		if out[i].c.id != out[j].c.id {
			return out[i].c.id < out[j].c.id
		}
		return out[i].seq > out[j].seq
	})
	signals = append(signals, "recency")
	if matched == nil {
		matched = []string{}
	}
	return out, matched, signals, nil
}

// inRange reports whether t is in [since, until); zero bounds are open.
func inRange(t, since, until time.Time) bool {
	return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
}

// sortKeys orders map keys by value, descending, ties by tie() descending.
func sortKeys[K comparable](m map[K]float64, tie func(K) int) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]] != m[out[j]] {
			return m[out[i]] > m[out[j]]
		}
		return tie(out[i]) > tie(out[j])
	})
	return out
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
			if c.vocab[cand] > 0 && cand != tagging.General {
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
