package memory

import (
	"slices"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// kindTake is how many turns the kind signal ranks: the first listScan
// turns of the first round by the people a list question names, re-sorted
// by cosine to the kind, of which the best kindTake are kept (20, 30 and
// 60 measured; see BENCHMARKS.md, "List questions: the kind alone").
const kindTake = 20

// kindTexts are what is embedded beside a question for the kind signal:
// a list question's kind alone ("activities", "martial arts"), or the
// alternatives of a choice question ("national park", "theme park"); none
// when the question names nobody (no turns are the named person's).
func kindTexts(q tagging.Query) []string {
	if len(q.Speakers) == 0 {
		return nil
	}
	if q.List && q.Kind != "" {
		return []string{q.Kind}
	}
	return q.Choices
}

// kind serves the list questions whose instances are common nouns ("What
// activities does Melanie partake in?": pottery, camping, painting), which
// the names signal (listnames.go) cannot see. A list question asks for
// instances of a kind, and a turn naming an instance ("I took my kids
// camping") is closer in meaning to the kind word alone than to the whole
// question, which also carries the person's name and the verb and so ranks
// first the turns that talk about the person and the kind in general. Among
// the first round's best listScan turns by the people the question names,
// this list orders them by the cosine of their stored vectors to the
// kind's vector (r.kvecs) and keeps the best kindTake. A choice question
// ("Would Melanie rather visit a national park or a theme park?") is read
// the same way: its evidence is the person's turns about either
// alternative (camping trips), each closer to the alternative alone than
// to the question; a turn counts by its better cosine of the two. Scoped
// like the names signal, and needs the model: without one there is no
// kind vector.
func (r *ranker) kind(pool *board) signal {
	var kvecs [][]float32
	for _, v := range r.kvecs {
		if v != nil {
			kvecs = append(kvecs, v)
		}
	}
	if len(kvecs) == 0 || r.w.Kind == 0 || pool.len() == 0 {
		return signal{name: "kind"}
	}
	want := r.listSpeakers()
	if len(want) == 0 {
		return signal{name: "kind"}
	}
	// The named people's turns among the first round's best, by
	// conversation.
	scan := map[*conv]map[int]bool{}
	scanned := 0
	for _, k := range pool.ranked() {
		if scanned >= listScan {
			break
		}
		t := k.c.turn(k.seq)
		if t == nil || t.Empty || t.Name == "" || !want[k.c][strings.ToLower(t.Name)] || !k.c.vecs.has[k.seq] {
			continue
		}
		scanned++
		if scan[k.c] == nil {
			scan[k.c] = map[int]bool{}
		}
		scan[k.c][k.seq] = true
	}
	type hit struct {
		k   rkey
		sim float32
	}
	var hits []hit
	for c, seqs := range scan {
		v := &c.vecs
		best := map[int]float32{}
		for _, kv := range kvecs {
			if len(kv) != v.dim {
				continue
			}
			for row, d := range v.mat.Dots(kv, nil) {
				seq := v.seqs[row]
				if b, ok := best[seq]; seqs[seq] && (!ok || d > b) {
					best[seq] = d
				}
			}
		}
		for seq, d := range best {
			hits = append(hits, hit{rkey{c, seq}, d})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		switch {
		case a.sim != b.sim:
			if a.sim > b.sim {
				return -1
			}
			return 1
		case a.k.c.id != b.k.c.id:
			return strings.Compare(a.k.c.id, b.k.c.id)
		}
		return a.k.seq - b.k.seq
	})
	if len(hits) > kindTake {
		hits = hits[:kindTake]
	}
	keys := make([]rkey, len(hits))
	for i, h := range hits {
		keys[i] = h.k
	}
	return signal{name: "kind", keys: keys, weight: r.w.Kind}
}
