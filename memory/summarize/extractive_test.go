package summarize

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

var t0 = time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)

func turns(lines ...string) []Turn {
	out := make([]Turn, 0, len(lines))
	for i, l := range lines {
		sp, text, _ := strings.Cut(l, ": ")
		role := "user"
		if sp == "Assistant" {
			role, sp = "assistant", ""
		}
		out = append(out, Turn{ID: fmt.Sprint(i + 1), Role: role, Speaker: sp, Time: t0.Add(time.Duration(i) * time.Minute), Text: text})
	}
	return out
}

var dbSegment = Input{
	Kind: Segment,
	Tag:  "postgres",
	Tags: []string{"postgres", "database"},
	Turns: turns(
		"Sam: We need to migrate our Postgres database from version 11 to 15 before the end of the quarter.",
		"Assistant: For a Postgres major version upgrade you can use pg_upgrade in link mode, or logical replication if you need near-zero downtime. How big is the database?",
		"Sam: The database is about 800 GB and the downtime window is only 30 minutes.",
		"Assistant: With 800 GB and a 30 minute window, logical replication is safer. Replicate to the new Postgres 15 cluster, then switch the application over.",
		"Sam: ok thanks!",
		"Sam: Let's go with logical replication. I'll set up the replication slots on Tuesday, 16 May 2023.",
		"Assistant: Good plan. Monitor replication lag on the slots, and test the rollback path before the migration day.",
	),
}

var friendsSegment = Input{
	Kind: Segment,
	Tag:  "lgbtq-support",
	Tags: []string{"lgbtq-support"},
	Turns: turns(
		"Caroline: Hey Mel! Good to see you! How have you been?",
		"Melanie: Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you? Anything new?",
		"Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
		"Melanie: Wow, that's cool, Caroline! What happened that was so awesome? Did you hear any inspiring stories?",
		"Caroline: The transgender stories were so inspiring! I was so happy and thankful for all the support.",
		"Melanie: Wow, love that painting! So cool you found such a helpful group. What's it done for you?",
		"Caroline: The support group has made me feel accepted and given me courage to embrace myself. I'm going to research adoption agencies next month because I want to be a mom.",
		"Melanie: That's amazing, Caroline! I ran a charity race for mental health last Saturday, on 20 May 2023.",
	),
}

func golden(t *testing.T, name string, r Result) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "method: %s %s\ntags: %s\nentities: %s\ndates: %q\ndecisions: %q\naction items: %q\n",
		r.Method, r.Version, strings.Join(r.Tags, ", "), strings.Join(r.Entities, ", "), r.Dates, r.Decisions, r.ActionItems)
	if r.Description != "" {
		fmt.Fprintf(&b, "description: %s\n", r.Description)
	}
	fmt.Fprintf(&b, "summary:\n%s\n", r.Summary)
	got := b.String()
	path := "testdata/" + name + ".golden"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update to accept):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// charCount is a stricter, non-additive counter, like a real tokenizer.
func charCount(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }

func TestSegment(t *testing.T) {
	tests := []struct {
		name      string
		in        Input
		max       int
		count     func(string) int
		keep      []string // must appear in the summary
		decisions int      // at least
		actions   int      // at least
		entities  []string
		dates     []string
	}{
		{
			name: "database", in: dbSegment, max: 120,
			keep:      []string{"Sam:", "800 GB", "30 minute", "Let's go with logical replication", "16 May 2023"},
			decisions: 1, actions: 1,
			entities: []string{"Postgres", "pg_upgrade"},
			dates:    []string{"Tuesday", "16 May 2023"},
		},
		{
			name: "friends", in: friendsSegment, max: 120,
			keep:     []string{"Caroline:", "LGBTQ support group yesterday", "adoption agencies", "20 May 2023"},
			actions:  1,
			entities: []string{"LGBTQ"},
			dates:    []string{"yesterday", "next month", "last Saturday", "20 May 2023"},
		},
		{
			name: "database-char-counter", in: dbSegment, max: 90, count: charCount,
			keep: []string{"Let's go with logical replication"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewExtractive(&ExtractiveOptions{Count: tt.count})
			in := tt.in
			in.MaxTokens = tt.max
			r, err := e.Summarize(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			count := tt.count
			if count == nil {
				count = EstimateTokens
			}
			if n := count(r.Summary); n > tt.max || n == 0 {
				t.Errorf("got a %d-token summary, want 1..%d", n, tt.max)
			}
			for _, k := range tt.keep {
				if !strings.Contains(r.Summary, k) {
					t.Errorf("summary lacks %q:\n%s", k, r.Summary)
				}
			}
			if len(r.Decisions) < tt.decisions || len(r.ActionItems) < tt.actions {
				t.Errorf("got decisions %q and action items %q, want at least %d and %d", r.Decisions, r.ActionItems, tt.decisions, tt.actions)
			}
			for _, x := range tt.entities {
				if !contains(r.Entities, x) {
					t.Errorf("got entities %q, want %q among them", r.Entities, x)
				}
			}
			for _, d := range tt.dates {
				if !contains(r.Dates, d) {
					t.Errorf("got dates %q, want %q among them", r.Dates, d)
				}
			}
			for _, tag := range tt.in.Tags {
				if !contains(r.Tags, tag) {
					t.Errorf("got tags %q, dropped input tag %q", r.Tags, tag)
				}
			}
			if r.Method != "extractive" || r.Version != "extractive-v1" {
				t.Errorf("got method %q version %q", r.Method, r.Version)
			}
			checkOrder(t, r.Summary, tt.in)
			golden(t, "segment-"+tt.name, r)
		})
	}
}

// checkOrder checks that the summary's lines keep the turns' order.
func checkOrder(t *testing.T, summary string, in Input) {
	t.Helper()
	last := -1
	for line := range strings.SplitSeq(summary, "\n") {
		_, text := splitLabel(line)
		first := splitSentences(text)[0]
		at := -1
		for i, tr := range in.Turns {
			if strings.Contains(tr.Text, strings.TrimSuffix(first, " …")) {
				at = i
				break
			}
		}
		if at < 0 {
			t.Errorf("summary line %q comes from no turn", line)
			continue
		}
		if at < last {
			t.Errorf("summary line %q is out of order", line)
		}
		last = at
	}
}

func TestBudgets(t *testing.T) {
	e := NewExtractive(nil)
	for _, max := range []int{1, 2, 5, 10, 20, 40, 80, 200, 1000} {
		for _, in := range []Input{dbSegment, friendsSegment} {
			t.Run(fmt.Sprintf("%s/%d", in.Tag, max), func(t *testing.T) {
				in.MaxTokens = max
				r, err := e.Summarize(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				if r.Summary == "" || EstimateTokens(r.Summary) > max {
					t.Errorf("got %d tokens %q, want 1..%d", EstimateTokens(r.Summary), r.Summary, max)
				}
			})
		}
	}
	t.Run("default budget", func(t *testing.T) {
		long := dbSegment
		for range 5 {
			long.Turns = append(long.Turns, dbSegment.Turns...)
		}
		r, err := e.Summarize(context.Background(), long)
		if err != nil {
			t.Fatal(err)
		}
		if n := EstimateTokens(r.Summary); n > 200 || n < 100 {
			t.Errorf("got %d tokens, want 100..200 (the default budget, well used)", n)
		}
	})
}

func TestTagRollup(t *testing.T) {
	e := NewExtractive(nil)
	var segs []string
	for _, in := range []Input{dbSegment, dbSegment, friendsSegment} {
		in.MaxTokens = 80
		r, err := e.Summarize(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, r.Summary)
	}
	r, err := e.Summarize(context.Background(), Input{Kind: Tag, Tag: "postgres", Tags: []string{"database"}, Segments: segs})
	if err != nil {
		t.Fatal(err)
	}
	if n := EstimateTokens(r.Summary); n > 300 || n == 0 {
		t.Errorf("got %d tokens, want 1..300", n)
	}
	if strings.Count(r.Summary, "Let's go with logical replication") != 1 {
		t.Errorf("want the repeated decision exactly once:\n%s", r.Summary)
	}
	if !strings.Contains(r.Summary, "Sam: ") {
		t.Errorf("want speaker labels kept:\n%s", r.Summary)
	}
	if r.Description == "" || len(strings.Fields(r.Description)) > 80 || strings.Contains(r.Description, "\n") {
		t.Errorf("got description %q, want one line of 1..80 words", r.Description)
	}
	if !reflect.DeepEqual(r.Tags, []string{"postgres", "database"}) {
		t.Errorf("got tags %q", r.Tags)
	}
	golden(t, "tag-postgres", r)
}

func TestSingle(t *testing.T) {
	e := NewExtractive(nil)
	long := "Yes, Kyoto is worth two nights at least. " +
		"The city has more than 1,600 temples, and Fushimi Inari is best before 8 am when the gates are empty. " +
		"Kinkaku-ji gets crowded by noon, so go in the late afternoon instead. " +
		"For food, try shojin ryori at a temple, which is fully vegetarian. " +
		"Nishiki Market is good for snacks, but it closes around 6 pm. " +
		"The bus network is dense but slow, so buy a one-day subway pass for 800 yen. " +
		"If you have time, Arashiyama's bamboo grove is a short train ride away. " +
		"Many ryokan serve kaiseki dinners, which you should book at least a week ahead. " +
		"Finally, remember that many shrines close at dusk."
	in := Input{Kind: Single, Turns: []Turn{{Role: "assistant", Text: long}}, Previous: "Is Kyoto worth two nights?", Next: "What about vegetarian food?"}
	r, err := e.Summarize(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Summary, "Yes, Kyoto is worth two nights") {
		t.Errorf("want the answering first sentence kept:\n%s", r.Summary)
	}
	if EstimateTokens(r.Summary) >= EstimateTokens(long)/2 {
		t.Errorf("got %d of %d tokens, want it condensed", EstimateTokens(r.Summary), EstimateTokens(long))
	}
	golden(t, "single-kyoto", r)
}

func TestErrors(t *testing.T) {
	e := NewExtractive(nil)
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		in   Input
		want error
	}{
		{"no turns", ctx, Input{Kind: Segment, Tag: "x"}, ErrEmpty},
		{"blank turns", ctx, Input{Kind: Segment, Turns: []Turn{{Text: "  \n "}}}, ErrEmpty},
		{"only code", ctx, Input{Kind: Segment, Turns: []Turn{{Text: "```\nx := 1\n```"}}}, ErrEmpty},
		{"no segments", ctx, Input{Kind: Tag, Tag: "x"}, ErrEmpty},
		{"single without turn", ctx, Input{Kind: Single}, ErrEmpty},
		{"single with two turns", ctx, Input{Kind: Single, Turns: []Turn{{Text: "a"}, {Text: "b"}}}, ErrInvalid},
		{"unknown kind", ctx, Input{Kind: "chapter", Turns: []Turn{{Text: "a"}}}, ErrInvalid},
		{"negative budget", ctx, Input{Kind: Segment, MaxTokens: -1, Turns: []Turn{{Text: "a"}}}, ErrInvalid},
		{"canceled", canceled, dbSegment, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Summarize(tt.ctx, tt.in)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSplitSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"One. Two! Three? four. five", []string{"One.", "Two!", "Three?", "four.", "five"}},
		{"Dr. Smith met Mr. Jones, e.g. at 3.5 pm. Then left.", []string{"Dr. Smith met Mr. Jones, e.g. at 3.5 pm.", "Then left."}},
		{"- first item\n- second item\n1. third", []string{"first item", "second item", "third"}},
		{"Code:\n```go\nx := 1. Y\n```\nDone.", []string{"Code:", "Done."}},
		{"He said \"Stop.\" Then he left.", []string{"He said \"Stop.\"", "Then he left."}},
		{"J. R. R. Tolkien wrote it.", []string{"J. R. R. Tolkien wrote it."}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := splitSentences(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzSummarize(f *testing.F) {
	f.Add("We decided to use Postgres 15 on 8 May 2023. I'll migrate it.", "ok", 50, 0)
	f.Add("```\ncode\n```", "Caroline: Hey Mel! Good to see you.", 1, 1)
	f.Add("İ. ’s. …", "a: b: c", 3, 2)
	e := NewExtractive(nil)
	f.Fuzz(func(t *testing.T, a, b string, max, kind int) {
		max = max % 400
		in := Input{Tag: "t", Tags: []string{"t", "u"}, MaxTokens: max}
		switch (kind%3 + 3) % 3 {
		case 0:
			in.Kind, in.Turns = Segment, []Turn{{Speaker: "A", Text: a}, {Role: "assistant", Text: b}}
		case 1:
			in.Kind, in.Segments = Tag, []string{a, b}
		default:
			in.Kind, in.Turns, in.Previous = Single, []Turn{{Text: a}}, b
		}
		r, err := e.Summarize(context.Background(), in)
		if max < 0 {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("negative budget: got %v", err)
			}
			return
		}
		if err != nil {
			if errors.Is(err, ErrEmpty) || errors.Is(err, ErrInvalid) {
				return
			}
			t.Fatal(err)
		}
		budget := max
		if budget == 0 {
			budget = 300
		}
		if r.Summary == "" || EstimateTokens(r.Summary) > budget {
			t.Fatalf("got %q (%d tokens), budget %d", r.Summary, EstimateTokens(r.Summary), budget)
		}
		for _, tag := range in.Tags {
			if !contains(r.Tags, tag) {
				t.Fatalf("dropped tag %q: %q", tag, r.Tags)
			}
		}
	})
}

func BenchmarkSegment(b *testing.B) {
	e := NewExtractive(nil)
	in := friendsSegment
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Summarize(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(in.Turns))*float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}
