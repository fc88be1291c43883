package memory

import (
	"fmt"
	"strconv"
	"strings"
)

// Ranking is the table of rank-fusion weights: how much each named signal
// (see signals.go) counts when its ranked list is fused by reciprocal rank,
// and the multipliers applied after fusion. It is data, kept in one place:
// DefaultRanking is the only fitted copy, Options.Ranking overrides it (for
// ablations: vc-mcp bench locomo --variant).
//
// Fitted on: the LoCoMo dev split (conv-26, 30, 41, 42, 43), by hand, one
// knob at a time, lexical only (no embedding model); Dense set once the
// real all-MiniLM-L6-v2 could be measured (2026-11-24, same split): 1.0,
// the same say as Lexical, as plain RRF hybrids give (on that split dense
// alone recalls 73.7% at 2000 tokens, BM25 alone 75.2%); Names set on the
// same split (2026-11-24, real model): 1.0, the same say as the other
// first-round lists (0.5 and 2 measured lower); Kind set on the same
// split (2026-11-24, real model): 1.0 likewise (0.5 and 2 measured lower),
// with its depth kindTake. Every figure measured
// with these weights on that split is in-sample. Weights marked "LoCoMo
// shape" help there because of how LoCoMo is built (two named speakers, a
// question and its answer in adjacent turns) and are scoped by a condition
// (see ScopeSpeaker) rather than trusted everywhere.
type Ranking struct {
	// Lexical: BM25 over the original turns, the strongest single signal.
	Lexical float64
	// Tags: tag overlap x IDF (related tags at half weight); bridges
	// vocabulary the turn itself does not use.
	Tags float64
	// Dense: cosine over turn vectors, times the query's confidence.
	Dense float64
	// Time: turns inside the dates the message names.
	Time float64
	// Order: the earliest (or latest) turns on the message's topic, for
	// "at the beginning", "originally", "last time", "most recently", fused
	// with a steep rank constant (1, not 60): its first place outweighs the
	// best lexical hit on purpose, since the message asks for a position,
	// which relevance alone never ranks; by its fifth place it weighs less.
	Order float64
	// Recency: a light prior towards the latest turns.
	Recency float64
	// Expand: the second round, seeded by the names and dates of the first
	// round's best turns (multi-hop questions).
	Expand float64
	// Neighbor: share of a hit's score lent to the turns beside it in its
	// session; Neighbor2 the extra decay two turns away.
	Neighbor, Neighbor2 float64
	// Answer: share lent to the turn right after a matching question
	// (LoCoMo shape, but true of any dialogue).
	Answer float64
	// Speaker: multiplier for turns by a speaker the message names (LoCoMo
	// shape: applies only when the turns carry people's names, never to
	// role-only chats).
	Speaker float64
	// Working: multiplier for turns of topics the model paged in.
	Working float64
	// Names: the turns by the person a list question names that name
	// something (a title, a place, a person), in first-round order.
	Names float64
	// Kind: the turns by the person a list question names, by cosine to
	// the kind it asks about alone ("activities"), not to the question.
	Kind float64
}

// DefaultRanking returns the fitted weights (see Ranking for the split).
func DefaultRanking() Ranking {
	return Ranking{
		Lexical: 1.0, Tags: 0.25, Dense: 1.0, Time: 0.6, Order: 0.1, Recency: 0.05, Expand: 0.3,
		Neighbor: 0.5, Neighbor2: 0.5, Answer: 1.0, Speaker: 1.25, Working: 1.15,
		Names: 1.0, Kind: 1.0,
	}
}

// rankingKnobs names every weight for ParseRanking.
func (r *Ranking) knobs() map[string]*float64 {
	return map[string]*float64{
		"lexical": &r.Lexical, "tags": &r.Tags, "dense": &r.Dense, "time": &r.Time, "order": &r.Order,
		"recency": &r.Recency, "expand": &r.Expand, "neighbor": &r.Neighbor, "neighbor2": &r.Neighbor2,
		"answer": &r.Answer, "speaker": &r.Speaker, "working": &r.Working,
		"names": &r.Names, "kind": &r.Kind,
	}
}

// ParseRanking applies "name=value,name=value" overrides to base, e.g.
// "speaker=1,expand=0" (a multiplier of 1 or a weight of 0 switches a
// signal off).
func ParseRanking(base Ranking, spec string) (Ranking, error) {
	r := base
	k := r.knobs()
	for _, kv := range strings.Split(spec, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			return r, fmt.Errorf("%w: ranking override %q: want name=value", ErrInvalid, kv)
		}
		p := k[strings.TrimSpace(name)]
		if p == nil {
			return r, fmt.Errorf("%w: ranking override %q: unknown weight (known: %s)", ErrInvalid, kv, strings.Join(r.names(), ", "))
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || f < 0 {
			return r, fmt.Errorf("%w: ranking override %q: value must be a number >= 0", ErrInvalid, kv)
		}
		*p = f
	}
	return r, nil
}

func (r *Ranking) names() []string {
	return []string{"lexical", "tags", "dense", "time", "order", "recency", "expand", "neighbor", "neighbor2", "answer", "speaker", "working", "names", "kind"}
}

// ranking is the table this store uses.
func (s *Store) ranking() Ranking {
	if s.opts.Ranking != nil {
		return *s.opts.Ranking
	}
	return DefaultRanking()
}
