package index

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Deterministic synthetic conversation turns: short English sentences
// drawn from fixed vocabularies with a seeded generator.
var (
	synthSubjects = []string{"Alice", "Bob", "the team", "our manager", "my sister", "the landlord", "the new intern", "Dr. Patel", "the customer", "everyone"}
	synthVerbs    = []string{"talked about", "planned", "cancelled", "reviewed", "fixed", "forgot", "booked", "discussed", "complained about", "finished"}
	synthObjects  = []string{"the garden party", "a flight to Lisbon", "the database migration", "the quarterly budget", "a dentist appointment", "the kitchen renovation", "the marathon training", "a birthday dinner", "the server outage", "the book club meeting", "the tax return", "a hiking trip", "the job interview", "the wedding plans", "a piano lesson"}
	synthWhens    = []string{"yesterday", "last week", "on Monday", "this morning", "in March", "after lunch", "before the holidays", "at the weekend", "tonight", "next Friday"}
	synthExtras   = []string{"and it went well", "but nobody came", "because of the rain", "with a lot of coffee", "although it was expensive", "so we are late", "and the fox watched", "while the dog slept", "", ""}
	synthSpeakers = []string{"user", "assistant"}
)

// synthDocs returns n turns spread over 10 conversations.
func synthDocs(n int, seed uint64) []Doc {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	docs := make([]Doc, n)
	for i := range docs {
		conv := fmt.Sprintf("c%d", i%10)
		s := []string{
			synthSubjects[r.IntN(len(synthSubjects))],
			synthVerbs[r.IntN(len(synthVerbs))],
			synthObjects[r.IntN(len(synthObjects))],
			synthWhens[r.IntN(len(synthWhens))],
			synthExtras[r.IntN(len(synthExtras))],
		}
		docs[i] = Doc{
			ID:           fmt.Sprintf("%s/s%d/t%07d", conv, seed, i),
			Conversation: conv,
			Kind:         "turn",
			Text:         strings.TrimSpace(strings.Join(s, " ")) + ".",
			Speaker:      synthSpeakers[i%2],
		}
	}
	return docs
}

// synthQueries returns n short free-text queries from the same vocabulary.
func synthQueries(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 7))
	qs := make([]string, n)
	for i := range qs {
		qs[i] = synthObjects[r.IntN(len(synthObjects))] + " " + synthWhens[r.IntN(len(synthWhens))]
	}
	return qs
}
