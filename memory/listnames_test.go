package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// readingChat is Tim and John over twelve days. Both talk about reading in
// general in every session, in the question's own words; Tim names the
// three books he read in three sessions, in other words ("finished",
// "started"), once with the word "read".
func readingChat() ([]Message, []string) {
	var msgs []Message
	var titles []string
	general := []string{
		"I read books every night, reading books is how I relax. Do you read books too?",
		"Reading books is the best, I read a few pages of my books before bed.",
		"Books and reading keep me sane, I try to read books on the train every day.",
		"I have read so many books this year, reading is my favourite hobby.",
	}
	named := map[int]string{
		2:  `Just finished reading "The Name of the Wind" on the train, what a ride!`,
		6:  `Started reading The Hobbit again, Bilbo never gets old.`,
		10: `I read Dune over the weekend, the desert chapters were stunning.`,
	}
	filler := []string{
		"Practice went well, coach had us running drills for two hours.",
		"My knee is a bit sore after the game, icing it now.",
		"We are planning a barbecue for Saturday, you should come.",
		"The new sneakers arrived, they fit perfectly.",
	}
	for d := range 12 {
		at := time.Date(2024, 3, 1+d, 18, 0, 0, 0, time.UTC)
		add := func(name, text string) {
			msgs = append(msgs, msg("user", name, text, at.Add(time.Duration(len(msgs)%8)*time.Minute)))
		}
		add("John", fmt.Sprintf("Hey Tim! %s", filler[d%len(filler)]))
		add("Tim", general[d%len(general)])
		add("John", general[(d+1)%len(general)])
		if s, ok := named[d]; ok {
			add("Tim", s)
			titles = append(titles, s)
		} else {
			add("Tim", filler[(d+2)%len(filler)])
		}
	}
	return msgs, titles
}

// TestNamesSignal: "What books has Tim read?" is a list question; the turns
// that answer it name a book each and rank below the general talk about
// reading. With the names signal all three are recalled; without it (the
// same store, Names 0) fewer are.
func TestNamesSignal(t *testing.T) {
	msgs, titles := readingChat()
	recalled := func(r Ranking) int {
		s := openTest(t, Options{Ranking: &r})
		ingest(t, s, "rd", msgs)
		res, err := s.Recall(context.Background(), RecallRequest{ConversationID: "rd", Message: "What books has Tim read?", MaxTokens: 400})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ti := range titles {
			if strings.Contains(res.Text, ti) {
				n++
			}
		}
		t.Logf("names=%v: %d of %d titles; signals %v\n%s", r.Names, n, len(titles), res.Signals, res.Text)
		return n
	}
	with := recalled(DefaultRanking())
	off := DefaultRanking()
	off.Names = 0
	without := recalled(off)
	if with != len(titles) {
		t.Errorf("with the names signal: %d of %d book turns recalled, want all", with, len(titles))
	}
	if without >= with {
		t.Errorf("without the names signal: %d book turns recalled, with it %d: the fixture does not show the signal's effect", without, with)
	}
}

// TestNamesSignalScope: the signal stays out of questions that are not
// lists, and of lists that name no speaker (a role-only chat has none).
func TestNamesSignalScope(t *testing.T) {
	msgs, _ := readingChat()
	s := openTest(t, Options{})
	ingest(t, s, "rd", msgs)
	for _, q := range []string{"Did Tim like reading on the train?", "What books have we read?", "What books has Alice read?"} {
		res, err := s.Recall(context.Background(), RecallRequest{ConversationID: "rd", Message: q, MaxTokens: 400})
		if err != nil {
			t.Fatal(err)
		}
		for _, sig := range res.Signals {
			if sig == "names" {
				t.Errorf("%q: the names signal applied (signals %v)", q, res.Signals)
			}
		}
	}
}

// BenchmarkNamesSignal times a list question's recall with the names signal
// and without it (Names 0), on the reading chat repeated to 576 turns, so
// the signal scans its full listScan turns.
func BenchmarkNamesSignal(b *testing.B) {
	one, _ := readingChat()
	var msgs []Message
	for rep := range 12 {
		for _, m := range one {
			var body string
			if err := json.Unmarshal(m.Content, &body); err != nil {
				b.Fatal(err)
			}
			at, _ := time.Parse(time.RFC3339, m.Timestamp)
			msgs = append(msgs, msg(m.Role, m.Name, fmt.Sprintf("%s (%d)", body, rep), at.AddDate(0, 0, 12*rep)))
		}
	}
	for _, names := range []float64{1, 0} {
		b.Run(fmt.Sprintf("names=%v", names), func(b *testing.B) {
			r := DefaultRanking()
			r.Names = names
			s := openTest(b, Options{Ranking: &r})
			ingest(b, s, "rd", msgs)
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Recall(context.Background(), RecallRequest{ConversationID: "rd", Message: "What books has Tim read?", MaxTokens: 2000}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
