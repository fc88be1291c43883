package memory

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/index"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// Ranking is a list of named signals, each a ranked list of past turns that
// can be computed and tested alone, fused by one function (reciprocal rank
// fusion, fuse) with the weights of a Ranking table, then adjusted by the
// turns' neighbourhood (spread) and by per-turn multipliers (boost).

// rkey names one past turn of one conversation.
type rkey struct {
	c   *conv
	seq int
}

// signal is one named ranked list, best first, and its fusion weight. k
// is its reciprocal-rank constant (0 = rrfK): the flat default suits
// relevance lists that agree on a set; a small k makes a list whose first
// place matters far more than its third (a position in time) steep.
type signal struct {
	name   string
	keys   []rkey
	weight float64
	k      float64
}

// ranker holds what every signal reads for one recall. The conversations'
// read locks are held for its whole life.
type ranker struct {
	s     *Store
	convs []*conv
	byID  map[string]*conv
	ids   []string
	msg   string
	qvec  []float32
	kvecs [][]float32 // a question's kind or choices (listkind.go)
	q     tagging.Query
	depth int
	w     Ranking
	// matched collects the tags the message matched (tags signal).
	matched []string
	// unfiltered says that the index holds only these conversations'
	// documents (see search).
	unfiltered bool
}

func (s *Store) newRanker(convs []*conv, msg string, qvec []float32, q tagging.Query, depth int) *ranker {
	r := &ranker{s: s, convs: convs, byID: make(map[string]*conv, len(convs)), ids: make([]string, len(convs)),
		msg: msg, qvec: qvec, q: q, depth: depth, w: s.ranking()}
	for i, c := range convs {
		r.byID[c.id], r.ids[i] = c, c.id
	}
	r.unfiltered = s.ix.OnlyIn(r.ids)
	return r
}

// rank scores past turns for a query: the first-round signals, fused; then
// the second round seeded by the best of them; then neighbours and boosts.
// It returns the candidates best first, the matched tags and the names of
// the signals that contributed.
func (s *Store) rank(ctx context.Context, convs []*conv, msg string, qvec []float32, kvecs [][]float32, q tagging.Query, depth int) (rankedList, []string, []string, error) {
	r := s.newRanker(convs, msg, qvec, q, depth)
	r.kvecs = kvecs
	lex, err := r.bm25(ctx)
	if err != nil {
		return rankedList{}, nil, nil, err
	}
	lists := []signal{lex, r.tags()}
	lists = append(lists, r.dense()...)
	pool := fuse(lists)
	order, err := r.order(ctx, lists)
	if err != nil {
		pool.release()
		return rankedList{}, nil, nil, err
	}
	lists = append(lists, r.timeRange(pool), order, r.recency(), r.names(pool), r.kind(pool))
	pool.release()
	first := fuse(lists)
	lists = append(lists, r.expand(first))
	first.release()
	scores := fuse(lists)
	r.spread(scores)
	out, boosted := r.boost(scores)
	scores.release()

	var names []string
	for _, l := range lists {
		if len(l.keys) > 0 && l.weight > 0 {
			names = appendUnique(names, l.name)
		}
	}
	names = append(names, boosted...)
	matched := r.matched
	if matched == nil {
		matched = []string{}
	}
	return out, matched, names, nil
}

// fuse adds every list's reciprocal ranks, times its weight.
func fuse(lists []signal) *board {
	n := 0
	for _, l := range lists {
		n += len(l.keys)
	}
	scores := newBoard(n)
	for _, l := range lists {
		rk := l.k
		if rk == 0 {
			rk = rrfK
		}
		for i, k := range l.keys {
			scores.add(k, l.weight/(rk+float64(i+1)))
		}
	}
	return scores
}

// bm25 ranks turns by BM25 over their original text.
func (r *ranker) bm25(ctx context.Context) (signal, error) {
	keys, err := r.search(ctx, r.msg, r.depth)
	return signal{name: "bm25", keys: keys, weight: r.w.Lexical}, err
}

func (r *ranker) search(ctx context.Context, text string, limit int) ([]rkey, error) {
	iq := index.Query{Text: text, Limit: limit}
	// Every hit is checked below (a turn of one of these conversations):
	// when the index holds only their documents, which is the common case of
	// one conversation per data directory, Bleve's filters admit everything
	// and only cost it a leapfrog per hit.
	if !r.unfiltered {
		iq.Conversations, iq.Kinds = r.ids, []string{"turn"}
	}
	hits, err := r.s.ix.Search(ctx, iq)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	keys := make([]rkey, 0, len(hits))
	for _, h := range hits {
		conv, seq, ok := parseTurnDocID(h.ID)
		if !ok {
			continue
		}
		if c := r.byID[conv]; c != nil && c.turn(seq) != nil {
			keys = append(keys, rkey{c, seq})
		}
	}
	return keys, nil
}

// tags ranks turns by the tags the message matches, each weighted by its
// IDF (rare tags weigh more), related terms at half weight and tags close
// in meaning by their confidence.
func (r *ranker) tags() signal {
	terms := index.Analyze(r.msg)
	score := newBoard(0)
	for _, c := range r.convs {
		qtags := c.queryTags(terms)
		if r.qvec != nil {
			for _, st := range semanticTags(c, r.qvec) {
				if !hasTag(qtags, st.tag) {
					qtags = append(qtags, st)
				}
			}
		}
		for _, qt := range qtags {
			r.matched = appendUnique(r.matched, qt.tag)
			seqs := c.tagSeqs[qt.tag]
			if len(seqs) > maxTagPostings {
				seqs = seqs[len(seqs)-maxTagPostings:] // the most recent
			}
			w := c.idf(qt.tag) * qt.weight
			for _, seq := range seqs {
				score.add(rkey{c, seq}, w)
			}
		}
	}
	keys := score.ranked()
	score.release()
	return signal{name: "tags", keys: keys, weight: r.w.Tags}
}

// idf is a tag's inverse document frequency over the conversation's turns.
func (c *conv) idf(tag string) float64 {
	return math.Log(1 + float64(len(c.turns))/float64(max(1, c.vocab[tag])))
}

// dense ranks turns by cosine to the message's vector, one list per
// conversation, each weighted by how clearly its best matches stand out.
func (r *ranker) dense() []signal {
	if r.qvec == nil {
		return nil
	}
	var out []signal
	for _, c := range r.convs {
		seqs, sims, st := denseRank(c, r.qvec, r.depth)
		if len(seqs) == 0 {
			continue
		}
		conf := marginConfidence(float64(sims[0]), st.sum, st.sumSq, st.n, len(r.qvec))
		if conf <= 0 {
			continue
		}
		keys := make([]rkey, len(seqs))
		for i, seq := range seqs {
			keys[i] = rkey{c, seq}
		}
		out = append(out, signal{name: "dense", keys: keys, weight: r.w.Dense * conf})
	}
	return out
}

// timeRange ranks the turns inside the dates the message names: those the
// other signals found first (by their score), then the rest of the range,
// earliest first, so "what did we do last week?" finds that week even
// with no topic word.
func (r *ranker) timeRange(pool *board) signal {
	q := r.q
	if q.Since.IsZero() && q.Until.IsZero() {
		return signal{name: "time"}
	}
	var in []rkey
	seen := map[rkey]bool{}
	for _, k := range pool.keys {
		if inRange(k.c.turn(k.seq).When, q.Since, q.Until) {
			in = append(in, k)
			seen[k] = true
		}
	}
	sort.Slice(in, func(i, j int) bool {
		if si, sj := pool.score(in[i]), pool.score(in[j]); si != sj {
			return si > sj
		}
		return keyLess(in[i], in[j])
	})
	const rest = 50
	added := 0
	for _, c := range r.convs {
		for i := range c.turns {
			t := &c.turns[i]
			if added >= rest {
				break
			}
			k := rkey{c, t.Seq}
			if !t.Empty && !seen[k] && inRange(t.When, q.Since, q.Until) {
				in = append(in, k)
				added++
			}
		}
	}
	return signal{name: "time", keys: in, weight: r.w.Time}
}

// orderDepth is how many of the best topical matches the order signal
// sorts by time, and orderTake how many of the earliest (or latest) it
// ranks: a position question wants the ends of one topic, not of the
// conversation.
const (
	orderK     = 1 // steep: the earliest turn on the topic outranks the third
	orderDepth = 30
	orderTake  = 12
)

// order answers "at the beginning", "originally", "the first time", "last
// time", "most recently": among the turns on the message's topic (a
// lexical search on its content words alone, and the first-round tag and
// dense lists), the earliest (or latest) come first. With no topic word it
// ranks the conversation's own ends.
func (r *ranker) order(ctx context.Context, first []signal) (signal, error) {
	if r.q.Order == "" {
		return signal{name: "order"}, nil
	}
	topic := strings.Join(r.q.Terms, " ")
	pool := map[rkey]bool{}
	if topic != "" {
		keys, err := r.search(ctx, topic, orderDepth)
		if err != nil {
			return signal{}, err
		}
		for _, k := range keys {
			pool[k] = true
		}
		for _, l := range first {
			if l.name == "bm25" {
				continue // the full message carries the order words
			}
			for i, k := range l.keys {
				if i >= orderDepth {
					break
				}
				pool[k] = true
			}
		}
	} else {
		for _, c := range r.convs {
			for i := range c.turns {
				pool[rkey{c, c.turns[i].Seq}] = true
			}
		}
	}
	keys := make([]rkey, 0, len(pool))
	for k := range pool {
		if !k.c.turn(k.seq).Empty {
			keys = append(keys, k)
		}
	}
	latest := r.q.Order == "last"
	sort.Slice(keys, func(i, j int) bool {
		ti, tj := keys[i].c.turn(keys[i].seq).When, keys[j].c.turn(keys[j].seq).When
		if !ti.Equal(tj) {
			return ti.Before(tj) != latest
		}
		return keyLess(keys[i], keys[j]) != latest
	})
	if len(keys) > orderTake {
		keys = keys[:orderTake]
	}
	return signal{name: "order", keys: keys, weight: r.w.Order, k: orderK}, nil
}

// recency is a light prior towards each conversation's latest turns.
func (r *ranker) recency() signal {
	var keys []rkey
	for _, c := range r.convs {
		for seq := len(c.lite); seq > 0 && seq > len(c.lite)-20; seq-- {
			if !c.lite[seq-1].empty() {
				keys = append(keys, rkey{c, seq})
			}
		}
	}
	return signal{name: "recency", keys: keys, weight: r.w.Recency}
}

// expandSeeds is how many of the first round's best turns seed the second.
const expandSeeds = 5

// expand is the second retrieval round, for questions whose answer spans
// turns that share no word with the question (multi-hop): the topics
// (tags) of the first round's best turns that the message did not name
// pull in the other turns carrying them, rare topics first, and the
// opening turns of those turns' sessions, which name the activity or the
// plan the rest of the session talks about in other words.
func (r *ranker) expand(first *board) signal {
	if r.w.Expand == 0 || first.len() == 0 {
		return signal{name: "expand"}
	}
	seeds := first.top(expandSeeds)
	score := newBoard(0)
	for _, k := range seeds {
		t := k.c.turn(k.seq)
		for _, tag := range t.Tags {
			if tag == tagging.General || contains(r.matched, tag) {
				continue
			}
			seqs := k.c.tagSeqs[tag]
			if len(seqs) > maxTagPostings/4 {
				continue // a tag on that many turns says nothing about this one
			}
			w := k.c.idf(tag)
			for _, seq := range seqs {
				if seq != k.seq {
					score.add(rkey{k.c, seq}, w)
				}
			}
		}
		// The session's opener.
		sess := int32(t.Session)
		for seq := k.seq - 1; seq > 0; seq-- {
			o := k.c.lite[seq-1]
			if o.session != sess {
				break
			}
			if seq == 1 || k.c.lite[seq-2].session != sess {
				if !o.empty() {
					score.add(rkey{k.c, seq}, 1)
				}
			}
		}
	}
	keys := score.ranked()
	score.release()
	return signal{name: "expand", keys: keys, weight: r.w.Expand}
}

// spread lends part of each turn's score to the turns beside it in its
// session: the turn before or after a strong hit often carries the
// question it answers or the answer it prompts.
func (r *ranker) spread(scores *board) {
	// Each neighbour gets the largest share lent to it, added to its own
	// score once all are known.
	bumps := newBoard(scores.len())
	for _, k := range scores.keys {
		v := scores.score(k)
		t, _ := k.c.liteAt(k.seq)
		for _, d := range [...]int{-2, -1, 1, 2} {
			n := rkey{k.c, k.seq + d}
			nt, ok := k.c.liteAt(n.seq)
			if !ok || nt.empty() || nt.session != t.session {
				continue
			}
			share := r.w.Neighbor
			if d == 1 && t.question() {
				share = r.w.Answer // the reply to a matching question
			}
			if d == -2 || d == 2 {
				share *= r.w.Neighbor2
			}
			if bump := v * share; bump > 0 {
				if b := bumps.slot(n); bump > *b {
					*b = bump
				}
			}
		}
	}
	for _, k := range bumps.keys {
		scores.add(k, bumps.score(k))
	}
	bumps.release()
}

// boost applies the per-turn multipliers: the speaker the message names
// (only when turns carry people's names: a role-only chat has none) and
// the topics the model paged in. It returns the candidates best first and
// the names of the boosts that applied.
func (r *ranker) boost(scores *board) (rankedList, []string) {
	speakers := map[string]bool{}
	for _, sp := range r.q.Speakers {
		low := strings.ToLower(sp)
		for _, c := range r.convs {
			if c.speakers[low] > 0 {
				speakers[low] = true
			}
		}
	}
	var names []string
	if len(speakers) > 0 && r.w.Speaker != 1 {
		names = append(names, "speaker")
	}
	// Only conversations with topics paged in pay for the check.
	paging := map[*conv]bool{}
	for _, c := range r.convs {
		paging[c] = c.anyPagedIn()
	}
	out := newCandidates(scores.len())
	for _, k := range scores.keys {
		v := scores.score(k)
		if l, _ := k.c.liteAt(k.seq); l.empty() {
			continue
		}
		if len(speakers) > 0 {
			if t := k.c.turn(k.seq); t.Name != "" && speakers[strings.ToLower(t.Name)] {
				v *= r.w.Speaker
			}
		}
		if paging[k.c] && k.c.pagedIn(k.c.turn(k.seq)) {
			v *= r.w.Working
		}
		out = append(out, candidate{c: k.c, seq: k.seq, score: v})
	}
	return rankCandidates(out, rankedHead), names
}

func keyLess(a, b rkey) bool {
	if a.c.id != b.c.id {
		return a.c.id < b.c.id
	}
	return a.seq < b.seq
}

// inRange reports whether t is in [since, until); zero bounds are open.
func inRange(t, since, until time.Time) bool {
	return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
}
