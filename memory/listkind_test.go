package memory

import (
	"context"
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
// turns in the question's words ("partake") come first.
func TestRealKindSignal(t *testing.T) {
	m := loadRealModel(t)
	msgs, instances := activitiesChat()
	const question = "What activities does Melanie partake in?"
	s := openTest(t, Options{Embedder: m})
	ingest(t, s, "act", msgs)
	waitVectors(t, s, "act")
	ctx := context.Background()
	c, err := s.conversation(ctx, "act", false)
	if err != nil {
		t.Fatal(err)
	}
	q := tagging.ClassifyQuery(question, s.now())
	kind := listKindText(q)
	if kind != "activities" {
		t.Fatalf("listKindText = %q, want activities", kind)
	}
	v := s.queryVectors(ctx, question, kind)
	c.mu.RLock()
	defer c.mu.RUnlock()
	r := s.newRanker([]*conv{c}, question, v[0], q, 200)
	r.kvec = v[1]
	lex, err := r.bm25(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pool := fuse(append([]signal{lex, r.tags()}, r.dense()...))
	defer pool.release()
	sig := r.kind(pool)
	if len(sig.keys) == 0 || sig.weight == 0 {
		t.Fatalf("the kind signal is empty (weight %v)", sig.weight)
	}
	text := func(k rkey) string {
		tu := k.c.turn(k.seq)
		rec, err := k.c.log.read(tu.Start, tu.End)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Content
	}
	rankIn := func(keys []rkey, want string) int {
		n := 0
		for _, k := range keys {
			if tu := k.c.turn(k.seq); tu.Name != "Melanie" {
				continue
			}
			if text(k) == want {
				return n
			}
			n++
		}
		return -1
	}
	first := pool.ranked()
	for _, in := range instances {
		a, b := rankIn(first, in), rankIn(sig.keys, in)
		t.Logf("%q: first round %d, kind %d among Melanie's turns", in, a, b)
		if b < 0 || a >= 0 && b >= a {
			t.Errorf("%q: kind signal rank %d, first-round rank %d among Melanie's turns: the kind does not bring it forward", in, b, a)
		}
	}
	// Without a model there is no kind vector and so no signal.
	r.kvec = nil
	if sig := r.kind(pool); len(sig.keys) != 0 {
		t.Errorf("without a kind vector the signal ranked %d turns", len(sig.keys))
	}
}
