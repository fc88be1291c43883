package memory

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

// topicalChat is a long chat between two named friends about the same few
// things (a LoCoMo-like crowd: half the turns are by the person the
// question names, on his everyday life), with one turn that answers a
// question in other words.
func topicalChat(answer string) []Message {
	tim := []string{
		"I love reading, it takes me to other worlds.",
		"Studying for exams left me little time for anything this week.",
		"I have been writing articles for a small blog.",
		"We are planning a trip to Ireland next summer.",
		"I cooked a big pasta dinner for my roommates.",
		"My piano lessons are going well, I can play two songs now.",
		"I read a lot on the train to university.",
		"The weather here has been rainy all week.",
		"I went to a concert downtown with my cousin.",
		"I started learning German with an app.",
		"My sister just got engaged, the whole family is thrilled.",
		"I adopted a kitten from the shelter, she is tiny.",
		"The bakery near my flat makes the best croissants.",
		"I finally fixed my bike and rode to the lake.",
		"Our landlord is repainting the hallway this weekend.",
		"I volunteered at the food bank on Sunday morning.",
		"My laptop died in the middle of writing an essay.",
		"I tried rock climbing for the first time, my arms hurt.",
		"We watched the meteor shower from the rooftop.",
		"I got a part-time job at the campus cafe.",
	}
	john := []string{
		"Practice was intense today, we ran drills for two hours.",
		"Our team won the game last night by six points.",
		"I have been working on my three-point shot.",
		"The coach wants me to lead the team as captain this season.",
		"We have an away game in Seattle next week.",
		"My ankle is sore after the last game, resting it today.",
		"I watched the finals with my teammates, what a game.",
		"Basketball camp for kids starts next month, I am volunteering.",
		"We lost a close one on Saturday, but we played well.",
		"I signed up for a charity basketball tournament.",
		"My brother is moving to Chicago for a new job.",
		"I bought new running shoes, they feel great.",
		"We had a barbecue at my parents' place on Sunday.",
		"The gym near my house is closed for renovation.",
		"I have been learning to cook Thai curries.",
		"My car broke down on the highway, had to get it towed.",
		"I visited my old high school and talked to the students.",
		"Got a new puppy, he chews everything in sight.",
		"I am thinking about going back to school for business.",
		"We went fishing at the lake, caught nothing at all.",
	}
	var out []Message
	at := t0
	for i := range 120 {
		at = at.Add(time.Minute)
		if i%2 == 0 {
			out = append(out, msg("user", "Tim", fmt.Sprintf("%s (%d)", tim[(i/2)%len(tim)], i), at))
		} else {
			out = append(out, msg("assistant", "John", fmt.Sprintf("%s (%d)", john[(i/2)%len(john)], i), at))
		}
		if i == 77 {
			at = at.Add(time.Minute)
			out = append(out, msg("user", "Tim", answer, at))
		}
	}
	return out
}

// TestRealRecallTopicalCrowd: on the real model, in a chat whose every turn
// is by the same two named people about their everyday lives, a question
// worded apart from its answer ("which fantasy trilogy did Tim finish?" for
// "finally done with the last volume of The Lord of the Rings") finds it
// first in the dense ranking, and recall gives the dense signal a say. The
// z-score gate the dense signal had before read such a crowd as chance
// (z 3.1 among 121 turns) and gave it none; the margin gate
// (marginConfidence) does. Whether the answer then makes the context is
// the fusion's call: in this repetitive chat the neighbours and second
// round of the many look-alike turns still outrank a match of confidence
// 0.33 (BENCHMARKS.md, LoCoMo-R, real model: left open).
func TestRealRecallTopicalCrowd(t *testing.T) {
	m := loadRealModel(t)
	const answer = "Finally done with the last volume of The Lord of the Rings, Frodo's journey is over."
	const question = "Which fantasy trilogy did Tim finish?"
	s := openTest(t, Options{Embedder: m})
	ingest(t, s, "c", topicalChat(answer))
	waitVectors(t, s, "c")
	ctx := context.Background()

	c, err := s.conversation(ctx, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	qv, err := m.Embed(ctx, []string{question})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	seqs, sims, st := denseRank(c, qv[0], 3)
	zc := zConfidence(float64(sims[0]), st.sum, st.sumSq, st.n)
	mc := marginConfidence(float64(sims[0]), st.sum, st.sumSq, st.n, len(qv[0]))
	mean := st.sum / float64(st.n)
	std := math.Sqrt(st.sumSq/float64(st.n) - mean*mean)
	top := c.turn(seqs[0])
	rec, err := c.log.Read(top.Start, top.End)
	c.mu.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("best %.3f mean %.3f std %.3f z %.2f: z-gate confidence %.2f, margin-gate confidence %.2f; dense first: %q",
		sims[0], mean, std, (float64(sims[0])-mean)/std, zc, mc, rec.Content)
	if rec.Content != answer {
		t.Fatalf("the dense ranking put %q first, want the answer", rec.Content)
	}
	if mc <= 0 {
		t.Errorf("the margin gate gives the dense signal no say (best %.3f over mean %.3f)", sims[0], mean)
	}

	r, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: question, MaxTokens: 150})
	if err != nil {
		t.Fatal(err)
	}
	if !contains(r.Signals, "dense") {
		t.Errorf("signals %v lack dense", r.Signals)
	}
}
