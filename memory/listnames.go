package memory

import (
	"strings"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// How far the names signal looks: the best listScan turns of the first
// round by the people the question names, of which the first listTake
// that name something are ranked.
const (
	listScan = 200
	listTake = 60
)

// names serves list questions about a person ("What books has Tim read?",
// "Which cities has Jon visited?", tagging.Query.List). Their answer is
// many turns in many sessions, each naming one instance (a title, a place,
// a person), and those turns rank far down the first round: they share
// few words with the question and are less like it, in meaning, than the
// turns that talk about the kind in general ("I love reading"). Among the
// first round's turns by the people the question names, in their
// first-round order, this list keeps those that name something (proper
// nouns, quoted titles: tagging.Names), so the instances come before the
// generalities. Scoped like the speaker boost: only when the question
// names a speaker of a conversation whose turns carry names.
func (r *ranker) names(pool *board) signal {
	if !r.q.List || r.w.Names == 0 || pool.len() == 0 {
		return signal{name: "names"}
	}
	want := r.listSpeakers()
	if len(want) == 0 {
		return signal{name: "names"}
	}
	skip := map[*conv]map[string]bool{}
	for c := range want {
		m := make(map[string]bool, len(c.speakers))
		for name := range c.speakers {
			m[name] = true
		}
		skip[c] = m
	}
	var keys []rkey
	scanned := 0
	for _, k := range pool.ranked() {
		if scanned >= listScan || len(keys) >= listTake {
			break
		}
		t := k.c.turn(k.seq)
		if t == nil || t.Empty || t.Name == "" || !want[k.c][strings.ToLower(t.Name)] || k.c.log == nil {
			continue
		}
		scanned++
		content, err := k.c.log.ReadContent(t.Start, t.End)
		if err != nil {
			continue
		}
		if len(tagging.Names(content, skip[k.c])) > 0 {
			keys = append(keys, k)
		}
	}
	return signal{name: "names", keys: keys, weight: r.w.Names}
}

// listSpeakers are the speakers the message names, by conversation: the
// people whose turns a list question is about.
func (r *ranker) listSpeakers() map[*conv]map[string]bool {
	want := map[*conv]map[string]bool{}
	for _, sp := range r.q.Speakers {
		low := strings.ToLower(sp)
		for _, c := range r.convs {
			if c.speakers[low] > 0 {
				if want[c] == nil {
					want[c] = map[string]bool{}
				}
				want[c][low] = true
			}
		}
	}
	return want
}
