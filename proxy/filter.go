package proxy

import (
	"crypto/sha256"
)

// unit is one turn of a history: a user message and everything up to the
// next one (the answer, tool calls and their results). Units are dropped
// or kept whole, so a tool call is never separated from its result and
// roles keep alternating.
type unit struct {
	start, end int // messages[start:end]
	key        [16]byte
}

// units splits a history into turns. Messages before the first user
// message (system prompts) belong to no unit and are always kept.
func units(msgs []message) []unit {
	var out []unit
	for i, m := range msgs {
		if m.role == "user" && !m.onlyResults {
			if n := len(out); n > 0 {
				out[n-1].end = i
			}
			out = append(out, unit{start: i, end: len(msgs), key: unitKey(m.text)})
		}
	}
	return out
}

// unitKey names a turn by its user text, so its tags can be found again
// when the client resends it.
func unitKey(text string) [16]byte {
	sum := sha256.Sum256([]byte(text))
	var k [16]byte
	copy(k[:], sum[:16])
	return k
}

// filterInput is what the history filter decides from.
type filterInput struct {
	msgs      []message
	units     []unit
	protected int                               // most recent units always kept (the new one aside)
	inbound   []string                          // the new message's tags
	tagsOf    func(k [16]byte) ([]string, bool) // a stored turn's tags
}

// filter returns which messages to forward: system messages, the new turn,
// the protected recent turns, older turns sharing a tag with the new
// message, and turns whose tags are unknown. A turn linked by a tool call
// id to a kept turn is kept too.
func filter(in filterInput) []bool {
	keep := make([]bool, len(in.msgs))
	for i, m := range in.msgs {
		keep[i] = m.role == "system"
	}
	if len(in.units) > 0 {
		for i := 0; i < in.units[0].start; i++ {
			keep[i] = true
		}
	}
	want := make(map[string]bool, len(in.inbound))
	for _, t := range in.inbound {
		want[t] = true
	}
	keepUnit := make([]bool, len(in.units))
	for i, u := range in.units {
		if i >= len(in.units)-1-in.protected || len(want) == 0 {
			keepUnit[i] = true
			continue
		}
		tags, ok := in.tagsOf(u.key)
		if !ok {
			keepUnit[i] = true
			continue
		}
		for _, t := range tags {
			if want[t] {
				keepUnit[i] = true
				break
			}
		}
	}
	// Tool links across units (a malformed or interleaved history): keep
	// both ends, to a fixed point.
	unitOf := make([]int, len(in.msgs))
	for i := range unitOf {
		unitOf[i] = -1
	}
	for ui, u := range in.units {
		for i := u.start; i < u.end; i++ {
			unitOf[i] = ui
		}
	}
	for changed := true; changed; {
		changed = false
		issued := map[string]int{}
		for i, m := range in.msgs {
			for _, id := range m.uses {
				issued[id] = i
			}
		}
		for i, m := range in.msgs {
			for _, id := range m.results {
				j, ok := issued[id]
				if !ok {
					continue
				}
				a, b := unitOf[i], unitOf[j]
				if a < 0 || b < 0 || a == b {
					continue
				}
				if keepUnit[a] != keepUnit[b] {
					keepUnit[a], keepUnit[b] = true, true
					changed = true
				}
			}
		}
	}
	for ui, u := range in.units {
		if keepUnit[ui] {
			for i := u.start; i < u.end; i++ {
				keep[i] = true
			}
		}
	}
	return keep
}
