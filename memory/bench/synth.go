package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

// SynthTurn is one turn of a synthetic conversation.
type SynthTurn struct {
	Role    string
	Speaker string
	Content string
	Topic   string
	Time    time.Time
}

// Needle is a fact planted at a known turn, with a question whose answer is
// in the fact and nowhere else.
type Needle struct {
	// Turn is the 0-based index of the turn that states the fact.
	Turn     int
	Fact     string
	Question string
	Answer   string
	// Keywords is a find_quote query that should find the fact.
	Keywords string
}

// Synthetic is a deterministic long conversation.
type Synthetic struct {
	Seed    uint64
	Turns   []SynthTurn
	Needles []Needle
}

type synthTopic struct {
	name  string
	words []string
}

// The topics recur across the whole conversation, so tag vocabularies and
// BM25 statistics look like a long-lived project chat rather than noise.
var synthTopics = []synthTopic{
	{"garden", []string{"tomatoes", "compost", "raised beds", "seedlings", "mulch", "aphids", "watering schedule", "basil"}},
	{"cycling", []string{"gravel bike", "cadence", "chain lube", "tubeless tyres", "climb", "saddle height", "group ride", "headwind"}},
	{"kitchen-remodel", []string{"cabinets", "countertop", "backsplash tiles", "plumber", "quote", "island", "range hood", "permits"}},
	{"database", []string{"postgres", "index", "query plan", "vacuum", "replica", "migration", "connection pool", "materialized view"}},
	{"frontend", []string{"react", "bundle size", "hydration", "css grid", "lighthouse score", "form validation", "dark mode", "router"}},
	{"travel-japan", []string{"kyoto", "rail pass", "ryokan", "osaka", "temples", "itinerary", "shinkansen", "onsen"}},
	{"running", []string{"tempo run", "marathon plan", "shin splints", "intervals", "long run", "pace", "trail shoes", "taper"}},
	{"budget", []string{"savings rate", "index funds", "emergency fund", "rent", "grocery spending", "spreadsheet", "tax return", "mortgage"}},
	{"photography", []string{"aperture", "prime lens", "golden hour", "raw files", "lightroom", "tripod", "long exposure", "portraits"}},
	{"music", []string{"guitar", "chord progression", "metronome", "fingerpicking", "open mic", "capo", "scales", "recording"}},
	{"kubernetes", []string{"pods", "helm chart", "ingress", "autoscaler", "node pool", "liveness probe", "configmap", "rollout"}},
	{"baking", []string{"sourdough", "starter", "hydration ratio", "proofing", "dutch oven", "crumb", "croissants", "lamination"}},
	{"reading", []string{"novel", "book club", "audiobook", "chapter", "reading list", "library", "memoir", "science fiction"}},
	{"health", []string{"sleep", "blood pressure", "physiotherapy", "vitamin d", "checkup", "stretching", "hydration", "posture"}},
	{"machine-learning", []string{"embeddings", "fine-tuning", "learning rate", "validation set", "overfitting", "tokenizer", "batch size", "gradient"}},
	{"home-network", []string{"router", "mesh wifi", "vlan", "nas", "firewall", "dns", "ethernet", "port forwarding"}},
	{"parenting", []string{"bedtime routine", "school run", "homework", "screen time", "swimming lessons", "playdate", "allowance", "lunchbox"}},
	{"woodworking", []string{"dovetail", "chisel", "walnut", "table saw", "sanding", "finish oil", "workbench", "jig"}},
	{"climbing", []string{"bouldering", "crimps", "belay", "chalk", "overhang", "route setting", "finger strength", "top rope"}},
	{"car", []string{"oil change", "winter tyres", "brake pads", "mileage", "insurance", "battery", "service interval", "charging"}},
	{"language-learning", []string{"spanish", "flashcards", "verb tenses", "conversation partner", "podcast", "vocabulary", "grammar", "accent"}},
	{"job-search", []string{"resume", "interview", "recruiter", "offer", "salary", "portfolio", "cover letter", "references"}},
	{"coffee", []string{"espresso", "grinder", "pour over", "beans", "roast", "milk frothing", "extraction", "descaling"}},
	{"chess", []string{"opening", "endgame", "sicilian", "blitz", "tactics", "rating", "time control", "puzzles"}},
}

var synthPeople = []string{"Priya", "Marcus", "Elena", "Tomasz", "Aiko", "Jonas", "Fatima", "Diego", "Nora", "Kwame",
	"Ingrid", "Rahul", "Sofia", "Liam", "Mei", "Oskar"}

var synthPlaces = []string{"Lisbon", "the community centre", "Riverside Park", "the office", "Hamburg", "the cabin",
	"Brighton", "the climbing gym", "Toronto", "the farmers market"}

var userTemplates = []string{
	"I spent the weekend on the %[1]s with %[3]s, and the %[2]s still needs work.",
	"Quick question about %[2]s: %[3]s suggested trying it differently at %[4]s.",
	"Update on %[1]s: the %[2]s went better than expected, maybe %[5]d%% better.",
	"Can you remind me what we said about %[2]s? I want to tell %[3]s before Friday.",
	"%[3]s and I talked about %[2]s at %[4]s again; we think %[5]d is the right number.",
	"I'm worried the %[2]s will take another %[5]d days. Any ideas for the %[1]s plan?",
}

var assistantTemplates = []string{
	"For the %[1]s, I'd focus on the %[2]s first and keep notes so you can compare after %[5]d days.",
	"That sounds like progress. With %[2]s, small changes add up; ask %[3]s to check it with you at %[4]s.",
	"A good rule for %[2]s is to change one thing at a time. Since %[3]s has done this before, start there.",
	"Here is a simple plan: review the %[2]s, then the %[6]s, then decide by day %[5]d.",
	"Many people find the %[2]s hardest at the start of a %[1]s project; it gets easier after about %[5]d tries.",
}

type needleItem struct {
	item     string
	question string
	keywords string
}

var needleItems = []needleItem{
	{"the code for my bike lock", "What is the code for my bike lock?", "bike lock code"},
	{"my passport number", "What is my passport number?", "passport number"},
	{"the name of my sister's cat", "What is the name of my sister's cat?", "sister's cat name"},
	{"the gate code at the allotment", "What is the gate code at the allotment?", "allotment gate code"},
	{"my library card number", "What is my library card number?", "library card number"},
	{"the hotel confirmation number for Kyoto", "What is the hotel confirmation number for Kyoto?", "hotel confirmation Kyoto"},
	{"the serial number of the old amplifier", "What is the serial number of the old amplifier?", "amplifier serial number"},
	{"my dentist's phone extension", "What is my dentist's phone extension?", "dentist phone extension"},
}

var needleWords = []string{"saffron", "marble", "juniper", "cobalt", "thistle", "quartz", "heron", "ember", "willow", "cinder"}

const (
	synthUser      = "Robin"
	synthAssistant = "assistant"
	turnsPerDay    = 40
)

var synthStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// NeedleTurns returns where Generate plants needles in an n-turn
// conversation: turn 12, then every eighth of the way, as long as n allows.
func NeedleTurns(n int) []int {
	if n <= 13 {
		return nil
	}
	out := []int{12}
	for k := 1; k < len(needleItems); k++ {
		t := n * k / len(needleItems)
		if t > out[len(out)-1]+1 && t < n {
			out = append(out, t)
		}
	}
	return out
}

// Generate makes an n-turn conversation between a user and an assistant:
// runs of 4 to 12 turns on one topic, recurring people and places, and
// needles at NeedleTurns(n). The same n and seed always give the same turns.
func Generate(n int, seed uint64) *Synthetic {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	s := &Synthetic{Seed: seed, Turns: make([]SynthTurn, 0, n)}
	needleAt := map[int]int{}
	for k, t := range NeedleTurns(n) {
		needleAt[t] = k
	}
	topic := synthTopics[rng.IntN(len(synthTopics))]
	left := 4 + rng.IntN(9)
	for i := range n {
		if left == 0 {
			topic = synthTopics[rng.IntN(len(synthTopics))]
			left = 4 + rng.IntN(9)
		}
		left--
		role, speaker, tmpl := "user", synthUser, userTemplates
		if i%2 == 1 {
			role, speaker, tmpl = "assistant", synthAssistant, assistantTemplates
		}
		at := synthStart.Add(time.Duration(i/turnsPerDay)*24*time.Hour + time.Duration(i%turnsPerDay)*90*time.Second)
		var content string
		if k, ok := needleAt[i]; ok {
			it := needleItems[k]
			answer := fmt.Sprintf("%s-%04d", needleWords[rng.IntN(len(needleWords))], rng.IntN(10000))
			// A needle is said by the user, whatever the turn's parity.
			role, speaker = "user", synthUser
			content = fmt.Sprintf("Please remember this: %s is %s.", it.item, answer)
			s.Needles = append(s.Needles, Needle{Turn: i, Fact: content, Question: it.question, Answer: answer, Keywords: it.keywords})
		} else {
			w := topic.words
			content = fmt.Sprintf(tmpl[rng.IntN(len(tmpl))], topic.name, w[rng.IntN(len(w))],
				synthPeople[rng.IntN(len(synthPeople))], synthPlaces[rng.IntN(len(synthPlaces))], 2+rng.IntN(60), w[rng.IntN(len(w))])
			content = strings.ReplaceAll(content, "-", " ")
		}
		s.Turns = append(s.Turns, SynthTurn{Role: role, Speaker: speaker, Content: content, Topic: topic.name, Time: at})
	}
	return s
}

// Messages returns turns [from, to) as client messages.
func (s *Synthetic) Messages(from, to int) []memory.Message {
	out := make([]memory.Message, 0, to-from)
	for _, t := range s.Turns[from:to] {
		c, _ := json.Marshal(t.Content) // a string always marshals
		out = append(out, memory.Message{Role: t.Role, Name: t.Speaker, Content: c, Timestamp: t.Time.Format(time.RFC3339)})
	}
	return out
}

// Queries returns n deterministic recall/find_quote queries: the needles'
// questions first, then topic questions naming people.
func (s *Synthetic) Queries(n int) (recall, quote []string) {
	rng := rand.New(rand.NewPCG(s.Seed, 0x9e1))
	for i := 0; len(recall) < n; i++ {
		if i < len(s.Needles) {
			recall = append(recall, s.Needles[i].Question)
			quote = append(quote, s.Needles[i].Keywords)
			continue
		}
		t := synthTopics[rng.IntN(len(synthTopics))]
		w := t.words[rng.IntN(len(t.words))]
		p := synthPeople[rng.IntN(len(synthPeople))]
		recall = append(recall, fmt.Sprintf("What did %s say about the %s?", p, w))
		quote = append(quote, w+" "+p)
	}
	return recall, quote
}

// Hash is a hex SHA-256 over every turn and needle: a golden value for
// determinism tests.
func (s *Synthetic) Hash() string {
	h := sha256.New()
	for _, t := range s.Turns {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\n", t.Role, t.Speaker, t.Topic, t.Time.Format(time.RFC3339), t.Content)
	}
	for _, nd := range s.Needles {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00%s\n", nd.Turn, nd.Fact, nd.Question, nd.Answer)
	}
	return hex.EncodeToString(h.Sum(nil))
}
