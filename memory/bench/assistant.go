package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The assistant-style set: conversations between one user and an AI
// assistant (roles only, no speaker names), over coding, planning and
// personal admin, with tool calls rendered as text, and vocabulary that
// drifts ("materialized views" later called "that caching trick"). It is
// generated deterministically by the code below (same seed, same
// conversations), so that vc-mcp is measured on a shape LoCoMo does not
// have: LoCoMo's speakers are two named friends, one session per date.
//
// The questions reuse LoCoMo's category numbers so one report serves both:
// single-hop = a fact stated in one turn; multi-hop = two turns in
// different sessions; temporal = "at the beginning", "most recently",
// "last week"; open-domain = vocabulary drift (the question uses the later
// name of a thing whose gold turn uses the first); adversarial is unused.

// AssistantOptions shapes the generated set.
type AssistantOptions struct {
	// Conversations is how many to generate (default 4).
	Conversations int
	// Filler is how many filler sessions are woven between the scripted
	// ones in each conversation (default 150, about 12k tokens in all):
	// distractors that reuse the
	// scripted topics' words.
	Filler int
	// Seed picks the slot values and the filler (default 1).
	Seed uint64
}

// slots are the values one conversation's script is filled with.
type slots struct {
	app, db1, db2, feed, minutes, city, sister, hotel, flight, date1, dentist, day, hour, test, fn, insurer, premium string
}

var (
	apps      = []string{"inventory", "booking", "invoicing", "recipe", "fleet", "ticketing"}
	cities    = []string{"Porto", "Lyon", "Kraków", "Valencia", "Ghent", "Bologna"}
	sisters   = []string{"Marta", "Ines", "Clara", "Zofia", "Elena", "Nora"}
	hotels    = []string{"Casa do Rio", "Hotel Lumière", "Villa Serena", "Pension Adler", "Hotel Ambra", "Maison Verte"}
	dentists  = []string{"Dr. Okafor", "Dr. Lindqvist", "Dr. Moreau", "Dr. Haddad", "Dr. Novak", "Dr. Brennan"}
	insurers  = []string{"Allianz", "Aviva", "Zurich", "Generali", "AXA", "Ageas"}
	tests     = []string{"TestOrderCache", "TestRefundFlow", "TestSlotLease", "TestInvoiceTotals", "TestRouteSync", "TestBadgeScan"}
	funcs     = []string{"newOrderCache", "applyRefund", "leaseSlot", "sumInvoice", "syncRoutes", "scanBadge"}
	weekdays  = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}
	secondDBs = []string{"Postgres", "MySQL", "CockroachDB"}
)

// GenerateAssistant returns the assistant-style conversations, each with
// its questions and gold turns. The same options give the same set.
func GenerateAssistant(o AssistantOptions) []*Conversation {
	if o.Conversations <= 0 {
		o.Conversations = 4
	}
	if o.Filler <= 0 {
		o.Filler = 150
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	out := make([]*Conversation, o.Conversations)
	for i := range out {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
		out[i] = assistantConversation(fmt.Sprintf("assist-%d", i+1), rng, o.Filler)
	}
	return out
}

func pick(rng *rand.Rand, list []string) string { return list[rng.IntN(len(list))] }

// scripted is one session of the script: its turns (user first, then
// alternating) and the labels of the turns questions point at.
type scripted struct {
	turns  []string
	labels map[string]int // label -> index in turns
}

func assistantConversation(id string, rng *rand.Rand, filler int) *Conversation {
	s := slots{
		app: pick(rng, apps), db1: "SQLite", db2: pick(rng, secondDBs), feed: "activity feed",
		minutes: fmt.Sprint(5 + 5*rng.IntN(4)), city: pick(rng, cities), sister: pick(rng, sisters),
		hotel: pick(rng, hotels), flight: fmt.Sprintf("TP%d", 1000+rng.IntN(9000)),
		dentist: pick(rng, dentists), day: pick(rng, weekdays), hour: fmt.Sprint(8 + rng.IntN(9)),
		insurer: pick(rng, insurers), premium: fmt.Sprint(300 + 10*rng.IntN(60)),
	}
	ti := rng.IntN(len(tests))
	s.test, s.fn = tests[ti], funcs[ti]
	script := []scripted{
		{turns: []string{ // 0: the database choice, at the beginning
			fmt.Sprintf("I'm starting the %s app. Which database should we begin with?", s.app),
			fmt.Sprintf("Begin with %s: one file, no server to run, and the app has a single writer for now.", s.db1),
			fmt.Sprintf("Fine, %s it is. Keep the schema in migrations from day one.", s.db1),
			"Agreed. I'll add a migrations folder and a make target that applies them in order.",
		}, labels: map[string]int{"db-q": 0, "db-a": 1}},
		{turns: []string{ // 1: the feed query and materialized views
			fmt.Sprintf("The %s page takes four seconds to load; the query joins five tables.", s.feed),
			fmt.Sprintf("Precompute it: a materialized view over the join, refreshed every %s minutes, and the page reads the view.", s.minutes),
			"Do it. Stale by a few minutes is fine for the feed.",
			fmt.Sprintf("Done: the view refreshes every %s minutes with REFRESH CONCURRENTLY, so reads never block.", s.minutes),
		}, labels: map[string]int{"mv": 1, "mv-done": 3}},
		{turns: []string{ // 2: family: the sister's city
			fmt.Sprintf("Personal thing: my sister %s lives in %s and we want to visit her in the spring.", s.sister, s.city),
			fmt.Sprintf("Nice. Spring in %s is mild; shall I keep an eye on flights?", s.city),
		}, labels: map[string]int{"sister": 0}},
		{turns: []string{ // 3: a failing test, with a tool call
			"Run the test suite, something broke after the refactor.",
			"Running the tests. [tool call: shell] go test ./...",
			fmt.Sprintf("[tool result] --- FAIL: %s (0.02s) panic: assignment to entry in nil map", s.test),
			fmt.Sprintf("%s fails: %s writes to its map before initialising it. I'll initialise the map in the constructor.", s.test, s.fn),
		}, labels: map[string]int{"tool": 2, "fix": 3}},
		{turns: []string{ // 4: the dentist
			fmt.Sprintf("Remind me: the dentist, %s, moved my check-up to %s at %s:00.", s.dentist, s.day, s.hour),
			fmt.Sprintf("Noted: check-up with %s, %s at %s:00. Bring the X-rays from last year.", s.dentist, s.day, s.hour),
		}, labels: map[string]int{"dentist": 0}},
		{turns: []string{ // 5: the trip booking
			fmt.Sprintf("We booked the trip: flight %s, and three nights at the %s in %s.", s.flight, s.hotel, s.city),
			fmt.Sprintf("Got it: flight %s, %s, three nights. It's a short tram ride from the old town.", s.flight, s.hotel),
		}, labels: map[string]int{"trip": 0}},
		{turns: []string{ // 6: the caching trick, by its later name
			"That caching trick for the feed shows stale counts right after a deploy.",
			"Trigger one refresh at the end of the deploy script, so the counts are current when traffic returns.",
		}, labels: map[string]int{"trick": 0}},
		{turns: []string{ // 7: car insurance
			fmt.Sprintf("The car insurance renewal came in: %s wants %s euros a year.", s.insurer, s.premium),
			"Compare two other quotes before the renewal date; loyalty rarely gets the best price.",
		}, labels: map[string]int{"insurance": 0}},
		{turns: []string{ // 8: the database move, most recently
			fmt.Sprintf("We now have several writers, so the %s app's database has to move off %s.", s.app, s.db1),
			fmt.Sprintf("Then move to %s: migrate with a dump and load, and keep %s only for the offline cache.", s.db2, s.db1),
			fmt.Sprintf("Decided: %s for the server, %s stays on the devices.", s.db2, s.db1),
		}, labels: map[string]int{"db2-q": 0, "db2-a": 1, "db2-d": 2}},
		{turns: []string{ // 9: the sprint demo, in the last week
			fmt.Sprintf("Plan the sprint demo for %s: the %s and the new search.", s.day, s.feed),
			"Demo order: search first, then the feed, ten minutes each, questions at the end.",
		}, labels: map[string]int{"demo": 0, "demo-a": 1}},
	}

	// Interleave: the scripted sessions in order, fillers between, spread
	// evenly; one session a day or two, the last scripted one in the final
	// week.
	start := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	conv := &Conversation{ID: id, SpeakerA: "", SpeakerB: "", turns: map[string]*Turn{}}
	ids := map[string]string{} // "session/label" -> turn id
	when := start
	n := 0
	addSession := func(texts []string) int {
		n++
		sess := Session{N: n, Time: when}
		for i, text := range texts {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			if strings.HasPrefix(text, "[tool result]") {
				role = "user" // a tool result comes back on the user's side
			}
			t := Turn{ID: fmt.Sprintf("D%d:%d", n, i+1), Session: n, Pos: i, Role: role, Text: text, Content: text,
				Time: when.Add(time.Duration(i) * time.Minute)}
			sess.Turns = append(sess.Turns, t)
		}
		conv.Sessions = append(conv.Sessions, sess)
		when = when.Add(time.Duration(24+rng.IntN(24)) * time.Hour)
		return n
	}
	per := filler / len(script)
	for si, sc := range script {
		if si == len(script)-1 {
			when = when.Add(10 * 24 * time.Hour) // the demo: the latest week
		}
		sn := addSession(sc.turns)
		for label, i := range sc.labels {
			ids[fmt.Sprint(si)+"/"+label] = fmt.Sprintf("D%d:%d", sn, i+1)
		}
		if si < len(script)-1 {
			for range per {
				addSession(fillerSession(rng, s))
			}
		}
	}
	// One more exchange a week after the demo: "last week" (read against
	// the conversation's latest session) is then the demo's week.
	when = conv.Sessions[len(conv.Sessions)-1].Time.Add(7 * 24 * time.Hour)
	addSession(fillerSession(rng, s))
	for i := range conv.Sessions {
		for j := range conv.Sessions[i].Turns {
			t := &conv.Sessions[i].Turns[j]
			conv.turns[t.ID] = t
		}
	}
	g := func(keys ...string) []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = ids[k]
		}
		return out
	}
	qs := []Question{
		{Text: "At the beginning, which database did we pick for the app?", Category: CategoryTemporal, Evidence: g("0/db-q", "0/db-a")},
		{Text: "Most recently, what did we decide about the database?", Category: CategoryTemporal, Evidence: g("8/db2-a", "8/db2-d")},
		{Text: "What did we plan for the sprint demo last week?", Category: CategoryTemporal, Evidence: g("9/demo", "9/demo-a")},
		{Text: "How often does the feed view refresh?", Category: CategorySingleHop, Evidence: g("1/mv")},
		{Text: "Which test failed after the refactor?", Category: CategorySingleHop, Evidence: g("3/tool")},
		{Text: "When is my dentist check-up?", Category: CategorySingleHop, Evidence: g("4/dentist")},
		{Text: "What is our flight number?", Category: CategorySingleHop, Evidence: g("5/trip")},
		{Text: "How much does the car insurance renewal cost?", Category: CategorySingleHop, Evidence: g("7/insurance")},
		{Text: "Which hotel did we book in the city where my sister lives?", Category: CategoryMultiHop, Evidence: g("2/sister", "5/trip")},
		{Text: "Why did the test fail, and how did we fix it?", Category: CategoryMultiHop, Evidence: g("3/tool", "3/fix")},
		{Text: "Why did we leave the first database, and what replaced it?", Category: CategoryMultiHop, Evidence: g("0/db-a", "8/db2-q", "8/db2-a")},
		{Text: "What exactly is that caching trick for the feed?", Category: CategoryOpenDomain, Evidence: g("1/mv", "6/trick")},
		{Text: "How did we make the slow activity feed page fast?", Category: CategoryOpenDomain, Evidence: g("1/mv", "1/mv-done")},
		{Text: "What was the problem with the precomputed feed after deploys?", Category: CategoryOpenDomain, Evidence: g("6/trick")},
		{Text: "What did the shell command show when we ran the suite?", Category: CategoryOpenDomain, Evidence: g("3/tool")},
	}
	for i := range qs {
		qs[i].Index = i
	}
	conv.Questions = qs
	return conv
}

// fillerSession is a short exchange on one of the everyday subjects the
// script also touches, with other details: the distractors.
func fillerSession(rng *rand.Rand, s slots) []string {
	n := rng.IntN(1000)
	switch rng.IntN(8) {
	case 0:
		return []string{
			fmt.Sprintf("Can you add an index on the orders table of the %s app? Lookups by customer are slow.", s.app),
			fmt.Sprintf("Added an index on orders(customer_id); the lookup went from %d ms to 3 ms.", 200+n%700),
		}
	case 1:
		return []string{
			fmt.Sprintf("Write a unit test for the date parser, case %d.", n),
			fmt.Sprintf("Added a table test for case %d with leap years and time zones; it passes.", n),
			fmt.Sprintf("Thanks. Also bump the Go version in the CI config of job %d.", n%40),
			fmt.Sprintf("Bumped; pipeline %d is green.", n),
		}
	case 2:
		return []string{
			fmt.Sprintf("Draft an email to the landlord about the heating, flat %d.", n%90+1),
			fmt.Sprintf("Here is a short, polite draft for flat %d asking for a repair date this week.", n%90+1),
		}
	case 3:
		return []string{
			fmt.Sprintf("What should I cook tonight with rice, peppers and %s?", pick(rng, []string{"tofu", "chicken", "beans", "eggs"})),
			fmt.Sprintf("A quick stir-fry: rice first, then peppers, soy and garlic; %d minutes.", 15+n%20),
		}
	case 4:
		return []string{
			fmt.Sprintf("The feed page shows avatars at the wrong size on mobile, issue #%d.", n),
			fmt.Sprintf("The CSS sets a fixed width of %dpx; use max-width with aspect-ratio instead.", 32+n%64),
		}
	case 5:
		return []string{
			fmt.Sprintf("Any ideas for a weekend in %s? Not the trip, just a day out.", pick(rng, []string{"the mountains", "the coast", "the countryside"})),
			fmt.Sprintf("A morning hike of %d km, lunch at a market, and back before dark.", 5+n%15),
		}
	case 6:
		return []string{
			fmt.Sprintf("The database backup job failed again last night, run %d.", n),
			fmt.Sprintf("The disk was %d%% full; I rotated old backups and the job passed on retry.", 90+n%10),
		}
	default:
		return []string{
			fmt.Sprintf("Pay the electricity bill, %d euros, before Friday.", 40+n%120),
			fmt.Sprintf("Added to your list for Thursday (reminder %d), so it's done before the deadline.", n),
		}
	}
}
