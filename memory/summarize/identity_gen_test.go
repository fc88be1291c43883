//go:build identitygen

// The generator of the identity corpus (see identity_test.go). It ran once,
// on the summariser as it was before the corpus was committed; run it again
// only to make a new corpus for a new Version:
//
//	go test -tags identitygen -run TestGenerateIdentity ./memory/summarize

package summarize_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/bench"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

func TestGenerateIdentity(t *testing.T) {
	var cases []summarize.IdentityCase
	cases = append(cases, storeCases(t)...)
	cases = append(cases, randomCases()...)
	if err := summarize.WriteIdentity("testdata/identity.golden.gz", cases); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d cases", len(cases))
}

// recorder keeps every input the store asks the extractive summariser for.
type recorder struct {
	sum *summarize.Extractive
	mu  sync.Mutex
	ins [][]byte
}

func (r *recorder) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return summarize.Result{}, err
	}
	r.mu.Lock()
	r.ins = append(r.ins, b)
	r.mu.Unlock()
	return r.sum.Summarize(ctx, in)
}

// storeCases are the inputs a real store makes while it ingests synthetic
// conversations two messages per call, as a client drives it.
func storeCases(t *testing.T) []summarize.IdentityCase {
	var msgs [][]memory.Message
	syn := bench.Generate(1200, 7)
	msgs = append(msgs, syn.Messages(0, len(syn.Turns)))
	for _, c := range bench.GenerateAssistant(bench.AssistantOptions{Conversations: 1, Filler: 40, Seed: 3}) {
		var ms []memory.Message
		for _, tr := range c.Turns() {
			content, _ := json.Marshal(tr.Content)
			ms = append(ms, memory.Message{Role: tr.Role, Name: tr.Speaker, Content: content, Timestamp: tr.Time.Format(time.RFC3339)})
		}
		msgs = append(msgs, ms)
	}
	rec := &recorder{sum: summarize.NewExtractive(nil)}
	for _, ms := range msgs {
		s, err := memory.Open(context.Background(), memory.Options{Dir: t.TempDir(), Summarizer: rec, SummaryConcurrency: 1, ContextWindow: 6000})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(ms); i += 2 {
			if _, err := s.Ingest(context.Background(), memory.IngestRequest{Messages: ms[i:min(i+2, len(ms))]}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	byKind := map[summarize.Kind][]summarize.Input{}
	for _, b := range rec.ins {
		var in summarize.Input
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		byKind[in.Kind] = append(byKind[in.Kind], in)
	}
	var out []summarize.IdentityCase
	for _, k := range []summarize.Kind{summarize.Segment, summarize.Single, summarize.Tag, summarize.Conversation} {
		ins := byKind[k]
		t.Logf("store: %d inputs of kind %s", len(ins), k)
		// An even sample of at most 80 of each kind.
		n := min(len(ins), 80)
		for j := range n {
			in := ins[j*len(ins)/n]
			counter := "estimate"
			if j%4 == 3 {
				counter = "chars"
			}
			out = append(out, summarize.IdentityCase{Name: fmt.Sprintf("store-%s-%d", k, j), Counter: counter, Input: in})
		}
	}
	return out
}

// Word pools for random text.
var (
	genWords = strings.Fields(`the a an and or but so because then it this that these those is was are were be been
		have has had do did does can could should would will we i you they he she our my your their its on in at
		to for from with about over under into after before again very really just also only still never always
		database query index migration server deploy cluster bike garden recipe trip flight hotel budget plan
		meeting project report issue bug fix test release version backup schedule weekend morning evening team
		kids dog cat painting music guitar book running race charity group support adoption agencies stories
		agreement agreeable decisions decisional going-to planner todos deadlines worker lived mysterious ourselves
		approvedly prefers likes loves hates named called moved born chose opted settled final answer step item`)
	genCues = []string{"we decided", "decided to", "decided on", "decision", "let's go with", "lets go with", "go with",
		"going with", "agreed", "agree", "settled on", "we chose", "i chose", "opted", "the plan is", "we'll use",
		"we will use", "final answer", "approved", "i'll", "i will", "we'll", "we will", "todo", "to-do", "action item",
		"next step", "need to", "needs to", "going to", "plan to", "planning to", "have to", "has to", "must",
		"remember to", "follow up", "deadline", "by tomorrow", "by monday", "by friday", "by the end of", "i prefer",
		"i like", "i love", "i hate", "i don't like", "i dislike", "i enjoy", "my favorite", "my favourite", "i'd rather",
		"i want", "i'm allergic", "i am allergic", "i'm vegetarian", "i am vegetarian", "prefers", "likes", "loves",
		"hates", "i am", "i'm", "i have", "i've", "my", "i work", "i live", "we have", "our", "is a", "was born",
		"moved to", "named", "called", "We Decided", "I'LL", "I’ll", "İ prefer", "agreedly", "todos", "deadlines",
		"i workout", "i lived", "my-favorite", "go  with", "decided\tto", "final answers", "i enjoyed", "i'm", "our's"}
	genNames = []string{"Sam", "Caroline", "Melanie", "Priya", "Marcus", "Zoë", "Łukasz", "İsmail", "Ångström", "O'Brien",
		"McDonald", "Jean-Luc", "Postgres", "Kubernetes", "LGBTQ", "AWS", "NASA", "Kyoto", "Fushimi Inari", "New York",
		"Dr. Okafor", "Mr. Jones", "I", "OK", "Ok", "Monday", "May", "The", "My", "Let's"}
	genIdents = []string{"pg_upgrade", "fooBar", "v1.2.3", "main.go", "Foo()", "`code`", "`x := 1`", "http://example.com/a.b",
		"user@example.com", "snake_case_name", "HTTPServer", "iPhone", "e.g.", "i.e.", "etc.", "vs.", "k8s", "S3", "3.5",
		"1,600", "800 GB", "30 minute", "16GB", "200ms", "$1,200", "50%", "#42", "A1", "x86_64", "__init__", "foo.bar()"}
	genDates = []string{"16 May 2023", "on Tuesday", "next month", "yesterday", "last Saturday", "tomorrow", "2023-05-16",
		"May 8th", "in two weeks", "12/05/2024", "last week", "this morning", "on 20 May 2023", "8 May, 2023",
		"next Friday", "two days ago", "in March", "on the 3rd", "at 5 pm", "by the end of the quarter", "in 2019",
		"Christmas", "tonight", "earlier today", "a year ago"}
	genChit = []string{"ok", "Ok", "okay", "Thanks!", "thanks", "Thank you.", "Sure.", "great", "Cool!", "nice", "Awesome!",
		"lol", "haha", "Haha,", "yes", "Yeah", "no", "Hi", "Hey Mel!", "Hello!", "Sounds good.", "Perfect.", "Wow,",
		"oh", "Good", "glad", "aw", "aww", "OK thanks!", "ok thanks!"}
	genUnicode = []string{"café", "naïve", "straße", "ǅemal", "ﬁle", "Kelvin", "İstanbul", "ΣΑΣ", "日本語", "😀", "🎉",
		"—", "…", "“quoted”", "‘single’", "’s", "Ⅻ", "ǈ", "\u00a0", "\u200b", "a\u0301", "ÉCOLE", "İİ"}
	genPunct = []string{",", ";", ":", " -", " (", ")", "\"", "'", "!", "?", "...", ".", "?!", " &", " /", "*", "`"}
	genTags  = []string{"postgres", "database", "lgbtq-support", "kitchen-remodel", "machine-learning", "travel-japan",
		"go", "a", "running", "budget", "music", "garden", "my-favorite", "going-to", "support-group", "x"}
	genLabels = []string{"Sam", "Caroline", "Melanie", "Assistant", "User", "Zoë", "Dr. Who", "sam", "Jean Luc Picard",
		"A very long speaker label that is over forty bytes", "Tool", "Priya Raman"}
	genZones = []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("", -7*3600), time.FixedZone("", 5*3600+1800)}
)

// genPools are the pools a sentence's words come from, by weight in 100;
// the rest are numbers.
var genPools = []struct {
	weight int
	words  []string
}{{50, genWords}, {12, genCues}, {10, genNames}, {8, genIdents}, {6, genDates}, {6, genUnicode}}

type gen struct{ r *rand.Rand }

func (g gen) pick(list []string) string { return list[g.r.IntN(len(list))] }
func (g gen) chance(p float64) bool     { return g.r.Float64() < p }

// sentence is a random sentence of mixed content.
func (g gen) sentence() string {
	if g.chance(0.08) {
		return g.pick(genChit)
	}
	n := 2 + g.r.IntN(20)
	if g.chance(0.05) {
		n = 46 + g.r.IntN(20)
	}
	var parts []string
	if g.chance(0.2) {
		parts = append(parts, g.pick(genChit))
	}
	for range n {
		x := g.r.IntN(100)
		for _, p := range genPools {
			if x -= p.weight; x < 0 {
				parts = append(parts, g.pick(p.words))
				break
			}
		}
		switch {
		case x >= 0: // past the pools
			parts = append(parts, fmt.Sprint(g.r.IntN(3000)))
		case g.chance(0.15):
			parts[len(parts)-1] += g.pick(genPunct)
		}
	}
	s := strings.Join(parts, " ")
	switch x := g.r.IntN(10); {
	case x < 1:
		s = strings.ToUpper(s)
	case x < 7:
		r, n := utf8.DecodeRuneInString(s)
		s = string(unicode.ToUpper(r)) + s[n:]
	}
	return s + g.pick([]string{".", ".", ".", "!", "?", "", "?", "...", ".\"", "!)", " :)"})
}

// text is a random turn: sentences, lines, list items, code.
func (g gen) text(maxSentences int) string {
	var b strings.Builder
	n := 1 + g.r.IntN(maxSentences)
	for i := range n {
		if i > 0 {
			switch x := g.r.IntN(20); {
			case x < 13:
				b.WriteString(" ")
			case x < 16:
				b.WriteString("\n")
			case x < 17:
				b.WriteString("\n\n- ")
			case x < 18:
				b.WriteString(fmt.Sprintf("\n%d. ", i))
			case x < 19:
				b.WriteString("\n```go\nx := foo(1). Y\n```\n")
			default:
				b.WriteString("  \r\n\t")
			}
		}
		b.WriteString(g.sentence())
	}
	return b.String()
}

func (g gen) when() time.Time {
	if g.chance(0.05) {
		return time.Time{}
	}
	t := time.Date(2020+g.r.IntN(6), time.Month(1+g.r.IntN(12)), 1+g.r.IntN(28), g.r.IntN(24), g.r.IntN(60), 0, 0, time.UTC)
	return t.In(genZones[g.r.IntN(len(genZones))])
}

func (g gen) turn(at time.Time, maxSentences int) summarize.Turn {
	t := summarize.Turn{ID: fmt.Sprint(g.r.IntN(1e6)), Time: at, Text: g.text(maxSentences)}
	switch x := g.r.IntN(6); {
	case x < 2:
		t.Role, t.Speaker = "user", g.pick(genLabels[:7])
	case x < 4:
		t.Role = "assistant"
	case x < 5:
		t.Role = g.pick([]string{"user", "tool", "système"})
	default:
		t.Speaker = g.pick(genLabels)
	}
	return t
}

func (g gen) tags() (string, []string) {
	tag := ""
	if !g.chance(0.1) {
		tag = g.pick(genTags)
	}
	var tags []string
	for range g.r.IntN(4) {
		tags = append(tags, g.pick(genTags))
	}
	if tag != "" && g.chance(0.7) {
		tags = append([]string{tag}, tags...)
	}
	return tag, tags
}

func (g gen) budget() int {
	switch x := g.r.IntN(10); {
	case x < 4:
		return 0
	case x < 5:
		return 1 + g.r.IntN(10)
	default:
		return 10 + g.r.IntN(390)
	}
}

func (g gen) turns(n, maxSentences int) []summarize.Turn {
	at := g.when()
	out := make([]summarize.Turn, 0, n)
	for range n {
		out = append(out, g.turn(at, maxSentences))
		at = at.Add(time.Duration(g.r.IntN(600)) * time.Second)
	}
	return out
}

// note is a multi-line summary-like text: "Label: sentences" lines.
func (g gen) note(lines int) string {
	var ls []string
	for range lines {
		l := g.text(3)
		l = strings.ReplaceAll(l, "\n", " ")
		if g.chance(0.8) {
			l = g.pick(genLabels) + ": " + l
		}
		ls = append(ls, l)
	}
	return strings.Join(ls, "\n")
}

// randomCases are seeded random inputs of every kind, with the package's
// own fixtures among them.
func randomCases() []summarize.IdentityCase {
	g := gen{rand.New(rand.NewPCG(2024, 11))}
	sum := summarize.NewExtractive(nil)
	var out []summarize.IdentityCase
	add := func(name string, in summarize.Input) {
		counter := "estimate"
		if g.chance(0.3) {
			counter = "chars"
		}
		out = append(out, summarize.IdentityCase{Name: fmt.Sprintf("%s-%d", name, len(out)), Counter: counter, Input: in})
	}
	var segSummaries []string
	for range 130 {
		tag, tags := g.tags()
		in := summarize.Input{Kind: summarize.Segment, Tag: tag, Tags: tags, Turns: g.turns(1+g.r.IntN(12), 5), MaxTokens: g.budget()}
		add("segment", in)
		if r, err := sum.Summarize(context.Background(), in); err == nil {
			segSummaries = append(segSummaries, r.Summary)
		}
	}
	for range 70 {
		tag, tags := g.tags()
		in := summarize.Input{Kind: summarize.Single, Tag: tag, Tags: tags, Turns: g.turns(1, 14), MaxTokens: g.budget()}
		if g.chance(0.8) {
			in.Previous = g.text(2)
		}
		if g.chance(0.7) {
			in.Next = g.text(2)
		}
		if g.chance(0.05) {
			in.Turns = g.turns(2, 2) // invalid
		}
		if g.chance(0.03) {
			in.Turns = nil // empty
		}
		add("single", in)
	}
	for range 80 {
		tag, tags := g.tags()
		in := summarize.Input{Kind: summarize.Tag, Tag: tag, Tags: tags, MaxTokens: g.budget()}
		for range 1 + g.r.IntN(10) {
			if len(segSummaries) > 0 && g.chance(0.6) {
				in.Segments = append(in.Segments, segSummaries[g.r.IntN(len(segSummaries))])
			} else {
				in.Segments = append(in.Segments, g.note(1+g.r.IntN(5)))
			}
		}
		add("tag", in)
	}
	for range 50 {
		tag, tags := g.tags()
		in := summarize.Input{Kind: summarize.Conversation, Tag: tag, Tags: tags, Turns: g.turns(g.r.IntN(10), 4), MaxTokens: g.budget()}
		if g.chance(0.7) {
			in.Previous = g.note(1 + g.r.IntN(6))
		}
		add("conversation", in)
	}
	// Edge cases.
	for _, in := range []summarize.Input{
		{Kind: summarize.Segment},
		{Kind: summarize.Segment, MaxTokens: -1, Turns: []summarize.Turn{{Text: "a"}}},
		{Kind: "chapter", Turns: []summarize.Turn{{Text: "a"}}},
		{Kind: summarize.Segment, Turns: []summarize.Turn{{Text: "```\ncode\n```"}}},
		{Kind: summarize.Tag, Segments: []string{"", "\n\n"}},
		{Kind: summarize.Segment, Turns: []summarize.Turn{{Text: "İ. ’s. …"}}},
		{Kind: summarize.Segment, Turns: []summarize.Turn{{Text: "I'll"}, {Text: "we decided"}, {Text: "my"}}},
		{Kind: summarize.Single, Turns: []summarize.Turn{{Text: strings.Repeat("Supercalifragilistic", 40)}}, MaxTokens: 3},
	} {
		add("edge", in)
	}
	for i, in := range summarize.IdentityFixtures() {
		add(fmt.Sprintf("fixture%d", i), in)
	}
	return out
}
