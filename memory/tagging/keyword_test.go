package tagging

import (
	"context"
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

func TestKeywordTag(t *testing.T) {
	tests := []struct {
		name        string
		in          Input
		opts        *KeywordOptions
		wantPrimary string
		wantTags    []string // must all be present (order free)
		wantNot     []string // must be absent
		wantSource  string
		broad       bool
		temporal    bool
		rule        bool
	}{
		{
			name:        "mints names and nouns",
			in:          Input{Text: "We need to migrate our Postgres database to a new cluster before the launch."},
			wantPrimary: "postgres",
			wantTags:    []string{"database", "cluster"},
			wantNot:     []string{"need", "new", "we"},
			wantSource:  "keyword",
		},
		{
			name:        "no ordinals",
			in:          Input{Text: "The pottery workshop moved from the 14th to the 27th, and the kiln fires on the 3rd."},
			wantPrimary: "pottery",
			wantTags:    []string{"kiln"},
			wantNot:     []string{"14th", "27th", "3rd"},
			wantSource:  "keyword",
		},
		{
			name:        "reuses vocabulary by plural",
			in:          Input{Text: "The databases are slow again after lunch.", Vocabulary: map[string]int{"database": 4}},
			wantPrimary: "database",
			wantSource:  "keyword",
		},
		{
			name:       "reuses vocabulary by stem",
			in:         Input{Text: "How long will migrating the tables take?", Vocabulary: map[string]int{"migration": 3}},
			wantTags:   []string{"migration"},
			wantNot:    []string{"migrating"},
			wantSource: "keyword",
		},
		{
			name:        "reuses vocabulary through an alias",
			in:          Input{Text: "Is the DB backed up nightly?", Vocabulary: map[string]int{"database": 2}},
			wantPrimary: "database",
			wantSource:  "keyword",
		},
		{
			name:        "explicit alias option",
			in:          Input{Text: "The frontend bundle is huge.", Vocabulary: map[string]int{"web-client": 2}},
			opts:        &KeywordOptions{Aliases: map[string]string{"frontend": "web-client"}},
			wantPrimary: "web-client",
			wantSource:  "keyword",
		},
		{
			name:       "input aliases",
			in:         Input{Text: "Our k8s pods keep restarting.", Aliases: map[string]string{"pods": "kubernetes"}},
			wantTags:   []string{"kubernetes"},
			wantSource: "keyword",
		},
		{
			name:        "previous primary stays primary when mentioned",
			in:          Input{Text: "Rex also chewed the new Nintendo controller.", Vocabulary: map[string]int{"rex": 3}, Previous: []string{"rex", "vet"}},
			wantPrimary: "rex",
			wantSource:  "keyword",
		},
		{
			name:        "pronoun follow-up carries the previous primary",
			in:          Input{Text: "He chewed my slippers this morning.", Vocabulary: map[string]int{"rex": 3}, Previous: []string{"rex"}},
			wantPrimary: "rex",
			wantTags:    []string{"slipper"},
			wantSource:  "keyword",
		},
		{
			name:        "topic shift does not carry",
			in:          Input{Text: "Anyway, it is time to book the flights to Osaka.", Vocabulary: map[string]int{"rex": 3}, Previous: []string{"rex"}},
			wantPrimary: "osaka",
			wantNot:     []string{"rex"},
			wantSource:  "keyword",
		},
		{
			name:        "chit-chat inherits",
			in:          Input{Text: "ok thanks!", Previous: []string{"rex", "vet"}},
			wantPrimary: "rex",
			wantTags:    []string{"vet"},
			wantSource:  "inherited",
		},
		{
			name:        "chit-chat with nothing to inherit",
			in:          Input{Text: "sure"},
			wantPrimary: General,
			wantSource:  "fallback",
		},
		{
			name:       "speaker and greeting names are not topics",
			in:         Input{Text: "Hey Mel! Caroline here, I adopted a kitten named Biscuit.", Speaker: "Caroline"},
			wantTags:   []string{"biscuit", "kitten"},
			wantNot:    []string{"mel", "caroline"},
			wantSource: "keyword",
		},
		{
			name:       "full speaker name and shouted chit-chat",
			in:         Input{Text: "OK so Caroline Smith here. LOL, the Eurovision final was wild.", Speaker: "Caroline Smith"},
			wantTags:   []string{"eurovision"},
			wantNot:    []string{"caroline", "smith", "ok", "lol"},
			wantSource: "keyword",
		},
		{
			name:       "number with unit",
			in:         Input{Text: "The server has 64 GB of memory."},
			wantTags:   []string{"64-gb", "server"},
			wantSource: "keyword",
		},
		{
			name:       "code fences are ignored",
			in:         Input{Text: "The retry loop:\n```\nfor i := 0; i < n; i++ { backoff(i) }\n```"},
			wantTags:   []string{"retry-loop"},
			wantNot:    []string{"backoff"},
			wantSource: "keyword",
		},
		{
			name:       "max tags option",
			in:         Input{Text: "Tokyo, Kyoto, Osaka, Nara and Hiroshima are on the itinerary."},
			opts:       &KeywordOptions{MaxTags: 2},
			wantSource: "keyword",
		},
		{
			name:       "broad request",
			in:         Input{Text: "Can you summarize everything we discussed?"},
			wantSource: "fallback",
			broad:      true,
		},
		{
			name:        "overview of a topic is not broad",
			in:          Input{Text: "Summarize the Japan trip for me"},
			wantPrimary: "japan",
			wantSource:  "keyword",
		},
		{
			name:       "temporal request",
			in:         Input{Text: "What was the very first thing we talked about?"},
			wantSource: "fallback",
			temporal:   true,
		},
		{
			name:       "rule: always",
			in:         Input{Text: "Always answer in British English."},
			wantTags:   []string{"british-english"},
			wantSource: "keyword",
			rule:       true,
		},
		{
			name:       "rule: from now on",
			in:         Input{Text: "From now on, use metric units in recipes."},
			wantSource: "keyword",
			rule:       true,
		},
		{
			name:       "rule: don't ever",
			in:         Input{Text: "Don't ever push to the main branch directly."},
			wantSource: "keyword",
			rule:       true,
		},
		{
			name:       "not a rule: a habit",
			in:         Input{Text: "I never liked sushi, but my sister always orders it."},
			wantSource: "keyword",
		},
		{
			name:       "not a rule: a plan for the future",
			in:         Input{Text: "In the future I want to open my own dance studio downtown."},
			wantSource: "keyword",
		},
		{
			name:       "not a rule: sentence-initial never",
			in:         Input{Text: "Never thought I'd see a meteor shower that bright over the lake!"},
			wantSource: "keyword",
		},
		{
			name:       "not a rule: encouragement",
			in:         Input{Text: "You got this. Never give up, and don't ever forget who is cheering for you!"},
			wantSource: "keyword",
		},
		{
			name:       "rule: going forward with an instruction",
			in:         Input{Text: "Going forward, please use metric units in every recipe."},
			rule:       true,
			wantSource: "keyword",
		},
		{
			name:       "rule: please always",
			in:         Input{Text: "Please always cite the ticket number in commit messages."},
			rule:       true,
			wantSource: "keyword",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewKeyword(tt.opts).Tag(context.Background(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, got, 5)
			if tt.opts != nil && tt.opts.MaxTags > 0 && len(got.Tags) > tt.opts.MaxTags {
				t.Errorf("got %d tags %v, want at most %d", len(got.Tags), got.Tags, tt.opts.MaxTags)
			}
			if tt.wantPrimary != "" && got.Primary != tt.wantPrimary {
				t.Errorf("got primary %q (tags %v), want %q", got.Primary, got.Tags, tt.wantPrimary)
			}
			for _, w := range tt.wantTags {
				if !contains(got.Tags, w) {
					t.Errorf("got tags %v, want them to include %q", got.Tags, w)
				}
			}
			for _, w := range tt.wantNot {
				if contains(got.Tags, w) {
					t.Errorf("got tags %v, want no %q", got.Tags, w)
				}
			}
			if got.Source != tt.wantSource {
				t.Errorf("got source %q, want %q", got.Source, tt.wantSource)
			}
			if got.Broad != tt.broad || got.Temporal != tt.temporal || got.Rule != tt.rule {
				t.Errorf("got broad=%v temporal=%v rule=%v, want %v %v %v", got.Broad, got.Temporal, got.Rule, tt.broad, tt.temporal, tt.rule)
			}
		})
	}
}

// checkResult checks the invariants every Result must hold.
func checkResult(t testing.TB, r Result, maxTags int) {
	t.Helper()
	if len(r.Tags) < 1 || len(r.Tags) > maxTags {
		t.Fatalf("got %d tags %v, want 1..%d", len(r.Tags), r.Tags, maxTags)
	}
	if r.Tags[0] != r.Primary {
		t.Fatalf("Tags[0] = %q, Primary = %q", r.Tags[0], r.Primary)
	}
	seen := map[string]bool{}
	for _, tag := range append(append([]string{}, r.Tags...), r.Related...) {
		if seen[tag] {
			t.Fatalf("tag %q repeated in %v / related %v", tag, r.Tags, r.Related)
		}
		seen[tag] = true
		if tag == General {
			continue
		}
		if tag == "" {
			t.Fatalf("empty tag in %v / %v", r.Tags, r.Related)
		}
		if msg := checkCanonical(tag); msg != "" {
			t.Fatalf("tag %q: %s", tag, msg)
		}
	}
	switch r.Source {
	case "keyword", "inherited", "fallback":
	default:
		t.Fatalf("source %q", r.Source)
	}
}

func TestKeywordCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewKeyword(nil).Tag(ctx, Input{Text: "Postgres"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// TestKeywordScript tags a scripted 40-turn conversation over four topics
// and compares it with testdata/conversation.golden (go test -update).
func TestKeywordScript(t *testing.T) {
	turns := loadScript(t)
	k := NewKeyword(nil)
	rs := runScript(t, k, turns)
	got := renderScript(turns, rs)

	golden := "testdata/conversation.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("script tagging differs from %s (go test -update to accept):\ngot:\n%s\nwant:\n%s", golden, got, want)
	}

	t.Run("invariants", func(t *testing.T) {
		for i, r := range rs {
			checkResult(t, r, 5)
			if turns[i].topic == "-" && r.Source == "keyword" && !contains(rs[i-1].Tags, r.Primary) {
				t.Errorf("turn %d (chit-chat) got primary %q, want it inherited from %v", i+1, r.Primary, rs[i-1].Tags)
			}
		}
	})
	t.Run("deterministic", func(t *testing.T) {
		for range 3 {
			if again := runScript(t, NewKeyword(nil), turns); !reflect.DeepEqual(again, rs) {
				t.Fatal("tagging the same conversation twice gave different results")
			}
		}
	})
	t.Run("same topic shares the primary", func(t *testing.T) {
		same, pairs := 0, 0
		for i := 1; i < len(rs); i++ {
			if turns[i].topic == "-" || turns[i].topic != topicBefore(turns, i) {
				continue
			}
			pairs++
			if rs[i].Primary == rs[i-1].Primary {
				same++
			}
		}
		if pairs == 0 || float64(same) < 0.7*float64(pairs) {
			t.Errorf("got %d of %d consecutive same-topic turns sharing a primary, want at least 70%%", same, pairs)
		}
	})
	t.Run("primaries do not cross topics", func(t *testing.T) {
		owner := map[string]string{}
		for i, r := range rs {
			if turns[i].topic == "-" {
				continue
			}
			if o, ok := owner[r.Primary]; ok && o != turns[i].topic {
				t.Errorf("turn %d (%s) got primary %q, already the primary of topic %s", i+1, turns[i].topic, r.Primary, o)
			}
			owner[r.Primary] = turns[i].topic
		}
	})
	t.Run("mentioned previous primary stays primary", func(t *testing.T) {
		for i := 1; i < len(rs); i++ {
			p := rs[i-1].Primary
			if turns[i].topic == "-" || p == General || !mentions(turns[i].text, p) {
				continue
			}
			if rs[i].Primary != p {
				t.Errorf("turn %d mentions the previous primary %q but got primary %q", i+1, p, rs[i].Primary)
			}
		}
	})
}

// mentions reports whether text names tag as a word of its own; a word
// that is also a common verb ("go") counts only when capitalised ("Go").
func mentions(text, tag string) bool {
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	})
	for _, w := range words {
		if Canonicalize(w, nil) == tag && (!isGeneric(strings.ToLower(w)) || w[0] >= 'A' && w[0] <= 'Z') {
			return true
		}
	}
	return false
}

// topicBefore is the topic of the last non-chit-chat turn before i.
func topicBefore(turns []scriptTurn, i int) string {
	for j := i - 1; j >= 0; j-- {
		if turns[j].topic != "-" {
			return turns[j].topic
		}
	}
	return ""
}

func FuzzTag(f *testing.F) {
	f.Add("We need to migrate our Postgres database to 15.", "database", "postgres")
	f.Add("ok thanks!", "", "rex")
	f.Add("Hey Mel! ```go\nx := 1\n``` `cfg.Client` İstanbul 64GB 2023-05-08", "go", "")
	f.Add("", "", "")
	f.Add("'s -- ... '' ’s", "a-b-c", "-")
	k := NewKeyword(nil)
	f.Fuzz(func(t *testing.T, text, vocabTag, prev string) {
		in := Input{Text: text, Vocabulary: map[string]int{vocabTag: 2, "a-b": 1}}
		if prev != "" {
			in.Previous = []string{prev}
		}
		r1, err := k.Tag(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(r1.Tags) < 1 || len(r1.Tags) > 5 || r1.Tags[0] != r1.Primary {
			t.Fatalf("bad result %+v", r1)
		}
		for _, tag := range r1.Tags {
			if tag == "" {
				t.Fatalf("empty tag in %+v", r1)
			}
			if r1.Source == "keyword" && tag != vocabTag && checkCanonical(tag) != "" {
				t.Fatalf("minted tag %q is not canonical", tag)
			}
		}
		r2, _ := k.Tag(context.Background(), in)
		if !reflect.DeepEqual(r1, r2) {
			t.Fatalf("not deterministic: %+v then %+v", r1, r2)
		}
	})
}

// benchVocab is a vocabulary of n tags, as a long conversation builds.
func benchVocab(n int) map[string]int {
	words := strings.Fields(`database migration postgres replication cluster schema index backup japan tokyo kyoto
	ramen temple sister flight hotel rex vet dog carprofen sprain go panic handler race test cache service
	client config deploy kubernetes pod node budget invoice tax garden tomato recipe bread marathon knee`)
	v := make(map[string]int, n)
	for i := 0; len(v) < n; i++ {
		w := words[i%len(words)]
		if i >= len(words) {
			w = w + "-" + words[(i/len(words))%len(words)]
			if i >= len(words)*len(words) {
				w += "-" + strings.Repeat("x", i/(len(words)*len(words)))
			}
		}
		v[w] = 1 + i%9
	}
	return v
}

const benchTurn = "The database migration to Postgres 15 finished, but replication lag on the new cluster is about 40 seconds and the nightly backups to S3 are failing again."

func benchmarkTag(b *testing.B, vocab int) {
	k := NewKeyword(nil)
	in := Input{Text: benchTurn, Vocabulary: benchVocab(vocab), Previous: []string{"database", "postgres"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Tag(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(strings.Fields(benchTurn))), "words/turn")
}

func BenchmarkTag(b *testing.B) {
	b.Run("vocab=0", func(b *testing.B) { benchmarkTag(b, 0) })
	b.Run("vocab=100", func(b *testing.B) { benchmarkTag(b, 100) })
	b.Run("vocab=1000", func(b *testing.B) { benchmarkTag(b, 1000) })
}

// BenchmarkTagScript tags the whole 40-turn script, as Ingest would.
func BenchmarkTagScript(b *testing.B) {
	turns := loadScript(b)
	k := NewKeyword(nil)
	b.ReportAllocs()
	for b.Loop() {
		runScript(b, k, turns)
	}
	b.ReportMetric(float64(len(turns))*float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}

// TestKeywordLargeVocabulary checks that reuse by stem also works past
// vocabScan, where Tag looks forms up instead of scanning.
func TestKeywordLargeVocabulary(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"stem", "Migrating the tables took all night.", "migration"},
		{"plural", "The caches were cold after the restart.", "cache"},
		{"doubled consonant", "Is the planning done?", "plan"},
	}
	for _, tt := range tests {
		for _, size := range []int{10, 1000} {
			t.Run(tt.name, func(t *testing.T) {
				vocab := benchVocab(size)
				vocab[tt.want] = 3
				if size > vocabScan && len(vocab) <= vocabScan {
					t.Fatalf("vocabulary of %d is not large", len(vocab))
				}
				got, err := NewKeyword(nil).Tag(context.Background(), Input{Text: tt.text, Vocabulary: vocab})
				if err != nil {
					t.Fatal(err)
				}
				if got.Primary != tt.want {
					t.Errorf("vocabulary of %d: got tags %v, want primary %q", len(vocab), got.Tags, tt.want)
				}
			})
		}
	}
}

// TestKeywordMinMaxTags: MinTags keeps weaker candidates a turn would
// otherwise drop, MaxTags bounds them, and user aliases map keywords to a
// tag of the user's choosing.
func TestKeywordMinMaxTags(t *testing.T) {
	in := Input{Text: "Kubernetes ran out of memory on the staging cluster again."}
	count := func(o *KeywordOptions) int {
		res, err := NewKeyword(o).Tag(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Tags)
	}
	def, most := count(nil), count(&KeywordOptions{MinTags: 5})
	if most < def || most > 5 {
		t.Errorf("MinTags 5: %d tags, default %d; want at least the default, at most 5", most, def)
	}
	if n := count(&KeywordOptions{MinTags: 5, MaxTags: 2}); n != 2 {
		t.Errorf("MinTags 5 MaxTags 2: %d tags, want 2", n)
	}
	res, err := NewKeyword(&KeywordOptions{Aliases: map[string]string{"kubernetes": "container-platform"}}).Tag(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(res.Tags, "container-platform") {
		t.Errorf("alias kubernetes -> container-platform: tags %v", res.Tags)
	}
}
