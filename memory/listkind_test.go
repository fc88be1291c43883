package memory

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// activitiesChat is Melanie and Caroline over sixteen days. Every session
// has a turn by Melanie in the question's words ("partake") about no
// activity at all; in three sessions she names one activity each, in other
// words and with no proper noun (so the names signal cannot see them).
func activitiesChat() ([]Message, []string) {
	var msgs []Message
	var instances []string
	general := []string{
		"Honestly I do not partake in many activities these days, too tired.",
		"Does anyone really partake in the office newsletter? I doubt it.",
		"I always partake when the family gets together, even if I am tired.",
		"I was asked to partake in a survey about the new bus route.",
	}
	named := map[int]string{
		2:  "Took the kids camping by the lake, we slept in a tent and cooked over the fire.",
		6:  "Played tennis with my sister, she beat me in three sets.",
		10: "Went swimming at the pool this morning, forty laps before breakfast.",
	}
	filler := []string{
		"Work was hectic today, the printer jammed twice.",
		"My neighbour's dog kept barking all night.",
		"The traffic on the way home was terrible.",
		"I finally paid all the bills for this month.",
		"My sister just got engaged, the whole family is thrilled.",
		"The bakery near my flat makes the best croissants.",
		"Our landlord is repainting the hallway this weekend.",
		"My laptop died in the middle of writing a report.",
		"The weather here has been rainy all week.",
		"I started learning German with an app.",
		"My brother is moving to Chicago for a new job.",
		"The dentist says I need a filling, not looking forward to it.",
		"We watched the meteor shower from the rooftop.",
		"I got a new phone, the camera is amazing.",
		"The car needs new tyres before winter.",
		"I am thinking about going back to school for nursing.",
		"Our cat knocked a glass off the table again.",
		"The supermarket was out of eggs, again.",
		"I reorganised the whole kitchen cupboard on Sunday.",
		"My boss finally approved my holiday request.",
		"The heating broke and the repairman comes on Friday.",
		"I have a job interview next Tuesday, fingers crossed.",
		"The new neighbours seem nice, they brought cookies.",
		"I watched a documentary about octopuses last night.",
	}
	for d := range 16 {
		at := time.Date(2024, 3, 1+d, 18, 0, 0, 0, time.UTC)
		add := func(name, text string) {
			msgs = append(msgs, msg("user", name, text, at.Add(time.Duration(len(msgs)%8)*time.Minute)))
		}
		add("Caroline", filler[(2*d)%len(filler)])
		add("Melanie", general[d%len(general)])
		add("Caroline", filler[(2*d+1)%len(filler)])
		add("Caroline", filler[(2*d+3)%len(filler)])
		if s, ok := named[d]; ok {
			add("Melanie", s)
			instances = append(instances, s)
		} else {
			add("Melanie", filler[(2*d+5)%len(filler)])
		}
	}
	return msgs, instances
}

// TestRealKindSignal: "What activities does Melanie partake in?" is a list
// question whose answers name no proper noun (tennis, camping, swimming).
// With the real model, ordering Melanie's first-round turns by cosine to
// "activities" alone (the kind signal) puts each instance turn ahead of
// where the question's own first round puts it among her turns, where the
// turns in the question's words ("partake") come first. A choice question
// ("the wilderness or a spa") does the same for the camping turn, through
// its alternatives.
func TestRealKindSignal(t *testing.T) {
	m := loadRealModel(t)
	msgs, instances := activitiesChat()
	s := openTest(t, Options{Embedder: m})
	ingest(t, s, "act", msgs)
	waitVectors(t, s, "act")
	ctx := context.Background()
	c, err := s.conversation(ctx, "act", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		question string
		kinds    []string
		want     []string
	}{
		{"What activities does Melanie partake in?", []string{"activities"}, instances},
		{"Would Melanie rather partake in a trip to the wilderness or a spa day?", []string{"wilderness", "spa day"}, instances[:1]},
	} {
		q := tagging.ClassifyQuery(tt.question, s.now())
		kinds := kindTexts(q)
		if !reflect.DeepEqual(kinds, tt.kinds) {
			t.Fatalf("%q: kindTexts = %q, want %q", tt.question, kinds, tt.kinds)
		}
		v := s.queryVectors(ctx, append([]string{tt.question}, kinds...)...)
		c.mu.RLock()
		r := s.newRanker([]*conv{c}, tt.question, v[0], q, 200)
		r.kvecs = v[1:]
		lex, err := r.bm25(ctx)
		if err != nil {
			c.mu.RUnlock()
			t.Fatal(err)
		}
		// The first round, with the question's dense list whatever its
		// confidence, so the pool holds Melanie's turns in meaning order.
		seqs, _, _ := denseRank(c, v[0], 200)
		dense := signal{name: "dense", weight: 1}
		for _, seq := range seqs {
			dense.keys = append(dense.keys, rkey{c, seq})
		}
		pool := fuse([]signal{lex, r.tags(), dense})
		sig := r.kind(pool)
		first := pool.ranked()
		var fails []string
		for _, in := range tt.want {
			a, b := melanieRank(t, first, in), melanieRank(t, sig.keys, in)
			t.Logf("%q: %q: first round %d, kind %d among Melanie's turns", tt.question, in, a, b)
			if b < 0 || a >= 0 && b >= a {
				fails = append(fails, fmt.Sprintf("%q: kind signal rank %d, first-round rank %d among Melanie's turns", in, b, a))
			}
		}
		// Without a model there is no kind vector and so no signal.
		r.kvecs = nil
		empty := len(r.kind(pool).keys) == 0
		pool.release()
		c.mu.RUnlock()
		if sig.weight == 0 || len(sig.keys) == 0 {
			t.Errorf("%q: the kind signal is empty (weight %v)", tt.question, sig.weight)
		}
		for _, f := range fails {
			t.Errorf("%q: %s: the kind does not bring it forward", tt.question, f)
		}
		if !empty {
			t.Errorf("%q: without a kind vector the signal still ranked turns", tt.question)
		}
	}
}

// melanieRank is the place of the turn whose text is want among
// Melanie's turns in keys, -1 if absent. The caller holds the read lock.
func melanieRank(t *testing.T, keys []rkey, want string) int {
	t.Helper()
	n := 0
	for _, k := range keys {
		tu := k.c.turn(k.seq)
		if tu.Name != "Melanie" {
			continue
		}
		rec, err := k.c.log.Read(tu.Start, tu.End)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Content == want {
			return n
		}
		n++
	}
	return -1
}
