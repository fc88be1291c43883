package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// keyword is a deterministic stand-in for the keyword tagger: it tags with
// the first word of the text.
type keyword struct{ calls int }

func (k *keyword) Tag(ctx context.Context, in tagging.Input) (tagging.Result, error) {
	k.calls++
	f := strings.Fields(in.Text)
	if len(f) == 0 {
		return tagging.Result{}, errors.New("no words")
	}
	w := strings.ToLower(f[0])
	return tagging.Result{Tags: []string{w}, Primary: w, Source: "keyword"}, nil
}

// firstTurn is a deterministic stand-in for the extractive summariser.
type firstTurn struct{}

func (firstTurn) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	s := strings.Join(in.Segments, " ")
	if len(in.Turns) > 0 {
		s = in.Turns[0].Text
	}
	return summarize.Result{Summary: s, Method: "extractive", Version: "x1"}, nil
}

func testConfig(provider string) Config {
	return Config{Provider: provider, Model: "test-model", MaxRetries: -1, Timeout: 2 * time.Second}
}

func newTestClient(t testing.TB, srv *fakeServer, cfg Config, opts ClientOptions) *Client {
	t.Helper()
	cfg = cfg.WithDefaults()
	o := NewOpenAI(srv.URL, cfg.Model, "", nil, Retry{MaxRetries: cfg.MaxRetries, Timeout: cfg.Timeout, Sleep: func(context.Context, time.Duration) error { return nil }})
	return NewClient(cfg, o, opts)
}

func TestTagger(t *testing.T) {
	answers := []string{
		"```json\n{\"tags\": [\"trip-to-lisbon\", \"flights\"], \"primary\": \"trip-to-lisbon\", \"related\": [\"travel\"], \"temporal\": false}\n```",
	}
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		openAIAnswer(w, "test-model-v2", answers[0], 400, 30)
	})
	fb := &keyword{}
	tg := NewTagger(newTestClient(t, srv, testConfig(ProviderOpenAI), ClientOptions{}), fb)
	got, err := tg.Tag(t.Context(), tagging.Input{
		Text: "Book the 7:40 flight to Lisbon", Role: "user", Speaker: "Caroline",
		Vocabulary: map[string]int{"trip-to-lisbon": 4, "budget": 2, tagging.General: 9},
		Aliases:    map[string]string{"lisbon": "trip-to-lisbon"},
		Previous:   []string{"budget"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := tagging.Result{Tags: []string{"trip-to-lisbon", "flights"}, Primary: "trip-to-lisbon", Related: []string{"travel"}, Source: "llm:openai/test-model-v2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if fb.calls != 0 {
		t.Errorf("got %d fallback calls, want 0", fb.calls)
	}
	if ok, why := tg.Ready(); !ok || why != "" {
		t.Errorf("got ready %v %q, want ready with no reason", ok, why)
	}
	prompt := userText(srv.requests()[0].body)
	for _, s := range []string{"Book the 7:40 flight to Lisbon", "- trip-to-lisbon: 4 (also called lisbon)", "(budget)", "Caroline"} {
		if !strings.Contains(prompt, s) {
			t.Errorf("got prompt without %q:\n%s", s, prompt)
		}
	}
	if strings.Contains(prompt, tagging.General+":") {
		t.Errorf("got prompt listing %s in the vocabulary", tagging.General)
	}
}

// TestTaggerFallbackAndCoolDown: failures fall back, are reported by Ready
// and, after three in a row, put the model on hold until the clock passes
// the hold; the next success clears the state.
func TestTaggerFallbackAndCoolDown(t *testing.T) {
	failing := true
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		if failing {
			writeJSON(w, 429, map[string]any{"error": map[string]any{"message": "Rate limit reached for requests"}})
			return
		}
		openAIAnswer(w, "test-model", `{"tags": ["flights"], "primary": "flights"}`, 10, 5)
	})
	clk := &clock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	fb := &keyword{}
	tg := NewTagger(newTestClient(t, srv, testConfig(ProviderOpenAI), ClientOptions{Now: clk.Now}), fb)
	in := tagging.Input{Text: "Flights are booked", Role: "user"}

	for i := range 5 {
		got, err := tg.Tag(t.Context(), in)
		if err != nil {
			t.Fatalf("call %d: got error %v, want the fallback's answer", i, err)
		}
		if got.Source != "fallback" || got.Primary != "flights" {
			t.Errorf("call %d: got %+v, want the fallback's tags with Source fallback", i, got)
		}
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("got %d model calls, want 3 (then on hold)", n)
	}
	ok, why := tg.Ready()
	wantWhy := "openai/test-model: 3 failures, last: "
	if ok || !strings.HasPrefix(why, wantWhy) || !strings.Contains(why, "429 rate limited") || !strings.Contains(why, "; using keyword tagger until 12:00:30") {
		t.Errorf("got ready %v %q, want not ready, %q... 429 rate limited ...; using keyword tagger until 12:00:30", ok, why, wantWhy)
	}

	failing = false
	clk.advance(31 * time.Second)
	got, err := tg.Tag(t.Context(), in)
	if err != nil || got.Source != "llm:openai/test-model" {
		t.Errorf("after the hold: got %+v, %v; want the model's answer", got, err)
	}
	if ok, why := tg.Ready(); !ok || !strings.Contains(why, "ok (3 earlier failures") {
		t.Errorf("got ready %v %q, want ready noting 3 earlier failures", ok, why)
	}
}

func TestTaggerInvalidAnswerFallsBack(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		openAIAnswer(w, "test-model", `{"tags": ["a", "b", "c", "d", "e", "f"], "primary": "a"}`, 10, 5)
	})
	tg := NewTagger(newTestClient(t, srv, testConfig(ProviderOpenAI), ClientOptions{}), &keyword{})
	got, err := tg.Tag(t.Context(), tagging.Input{Text: "Dogs everywhere"})
	if err != nil || got.Source != "fallback" || got.Primary != "dogs" {
		t.Errorf("got %+v, %v; want the fallback", got, err)
	}
	if ok, why := tg.Ready(); ok || !strings.Contains(why, "6 tags, at most 5") {
		t.Errorf("got ready %v %q, want the validation failure", ok, why)
	}
}

func TestTaggerNoFallbackReturnsError(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "bad key"}})
	})
	tg := NewTagger(newTestClient(t, srv, testConfig(ProviderOpenAI), ClientOptions{}), nil)
	if _, err := tg.Tag(t.Context(), tagging.Input{Text: "x"}); !errors.Is(err, ErrRejected) {
		t.Errorf("got %v, want ErrRejected", err)
	}
}

func TestTaggerCancelled(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		slow(5*time.Second, w, r, func() {})
	})
	fb := &keyword{}
	tg := NewTagger(newTestClient(t, srv, testConfig(ProviderOpenAI), ClientOptions{}), fb)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := tg.Tag(ctx, tagging.Input{Text: "x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the caller's deadline", err)
	}
	if fb.calls != 0 {
		t.Errorf("got %d fallback calls after cancellation, want 0", fb.calls)
	}
	if ok, _ := tg.Ready(); !ok {
		t.Errorf("got not ready after a caller's cancellation, want no failure recorded")
	}
}

func TestSummarizer(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		p := userText(b)
		switch {
		case strings.Contains(p, "Merge these notes"):
			openAIAnswer(w, "test-model", `{"summary": "Biscuit's story.", "description": "Caroline's dog Biscuit, adopted 28 February."}`, 50, 20)
		case strings.Contains(p, "Shorten the CURRENT message"):
			openAIAnswer(w, "test-model", `{"summary": "Caroline asked about the stool sample."}`, 50, 10)
		default:
			openAIAnswer(w, "test-model", `{"summary": "Caroline adopted Biscuit on 28 February.", "entities": ["Biscuit"], "refined_tags": ["shelter"], "date_references": ["28 February"]}`, 80, 25)
		}
	})
	cfg := testConfig(ProviderOpenAI)
	cfg.PromptMode = "simple"
	cfg.TagRules = []TagRule{{Pattern: "dog-*", Priority: 1, SummaryPrompt: "Always name the dog."}, {Pattern: "*", Priority: 0, SummaryPrompt: "generic"}}
	s := NewSummarizer(newTestClient(t, srv, cfg, ClientOptions{}), firstTurn{})
	turns := []summarize.Turn{{Role: "user", Speaker: "Caroline", Time: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), Text: "I adopted Biscuit on 28 February."}}

	cases := []struct {
		name        string
		in          summarize.Input
		wantSummary string
		wantDesc    string
		wantTags    []string
		wantVersion string
		wantPrompt  []string
	}{
		{"segment", summarize.Input{Kind: summarize.Segment, Tag: "dog-adoption", Tags: []string{"dog-adoption"}, Turns: turns},
			"Caroline adopted Biscuit on 28 February.", "", []string{"dog-adoption", "shelter"}, "segment/v1+simple",
			[]string{"Always name the dog.", `time="2026-03-02T09:00:00Z"`, "I adopted Biscuit"}},
		{"rollup", summarize.Input{Kind: summarize.Tag, Tag: "dog-adoption", Tags: []string{"dog-adoption"}, Segments: []string{"one", "two"}},
			"Biscuit's story.", "Caroline's dog Biscuit, adopted 28 February.", []string{"dog-adoption"}, "rollup/v1+simple",
			[]string{"<note n=\"1\">\ntwo\n</note>"}},
		{"turn", summarize.Input{Kind: summarize.Single, Tag: "vet", Turns: turns, Previous: "Which vet?", Next: "Bring a sample.", Prompt: "Custom override."},
			"Caroline asked about the stool sample.", "", nil, "turn/v1+simple",
			[]string{"Custom override.", "PREVIOUS (assistant)", "Which vet?", "NEXT (assistant)", "Bring a sample."}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Summarize(t.Context(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Summary != tc.wantSummary || got.Description != tc.wantDesc || !slices.Equal(got.Tags, tc.wantTags) {
				t.Errorf("got %+v, want summary %q description %q tags %v", got, tc.wantSummary, tc.wantDesc, tc.wantTags)
			}
			if got.Method != "llm:openai/test-model" || got.Version != tc.wantVersion {
				t.Errorf("got method %q version %q, want llm:openai/test-model and %q", got.Method, got.Version, tc.wantVersion)
			}
			prompt := userText(srv.requests()[i].body)
			for _, s := range tc.wantPrompt {
				if !strings.Contains(prompt, s) {
					t.Errorf("got prompt without %q:\n%s", s, prompt)
				}
			}
		})
	}
}

func TestSummarizerFallback(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		openAIAnswer(w, "test-model", "I'd rather not.", 10, 5)
	})
	s := NewSummarizer(newTestClient(t, srv, testConfig(ProviderOpenAI), ClientOptions{}), firstTurn{})
	got, err := s.Summarize(t.Context(), summarize.Input{Kind: summarize.Segment, Tag: "a", Tags: []string{"a", "b"}, Turns: []summarize.Turn{{Role: "user", Text: "hello there"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Method != "extractive" || got.Summary != "hello there" || !slices.Equal(got.Tags, []string{"a", "b"}) {
		t.Errorf("got %+v, want the extractive fallback keeping tags a, b", got)
	}
	if ok, why := s.Ready(); ok || !strings.Contains(why, "using extractive summaries") || !strings.Contains(why, "no JSON object") {
		t.Errorf("got ready %v %q, want the parse failure and the fallback named", ok, why)
	}
}

// TestTagsOnlyGrow is the property that summarising never loses a tag:
// whatever the model answers (dropping, renaming, adding, garbage), the
// result's tags start with every input tag, in order.
func TestTagsOnlyGrow(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	words := []string{"budget", "flights", "dog-adoption", "vet-visit", "Lisbon Trip", "bad tag!", "_general", "x"}
	pick := func(n int) []string {
		var out []string
		for range n {
			out = append(out, words[rng.IntN(len(words))])
		}
		return out
	}
	var answer string
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		openAIAnswer(w, "test-model", answer, 10, 10)
	})
	s := NewSummarizer(newTestClient(t, srv, testConfig(ProviderOpenAI), ClientOptions{}), firstTurn{})
	for i := range 200 {
		var before []string
		for _, w := range pick(rng.IntN(4)) {
			if tag, ok := normalizeTag(w); ok && !slices.Contains(before, tag) {
				before = append(before, tag)
			}
		}
		refined := fmt.Sprintf("%q", pick(rng.IntN(8)))
		refined = strings.ReplaceAll(strings.Trim(refined, "[]"), `" "`, `", "`)
		switch rng.IntN(4) {
		case 0:
			answer = `{"summary": "s", "refined_tags": [` + refined + `]}`
		case 1:
			answer = `{"summary": "s", "refined_tags": "` + strings.ReplaceAll(refined, `"`, "") + `"}`
		case 2:
			answer = "not json at all" // falls back
		default:
			answer = `{"summary": "s"}`
		}
		got, err := s.Summarize(t.Context(), summarize.Input{Kind: summarize.Segment, Tags: before, Turns: []summarize.Turn{{Text: "t"}}})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(got.Tags) < len(before) || !slices.Equal(got.Tags[:len(before)], before) {
			t.Fatalf("case %d: answer %s: got tags %v, want them to start with %v", i, answer, got.Tags, before)
		}
		for _, tag := range got.Tags[len(before):] {
			if _, ok := normalizeTag(tag); !ok || slices.Contains(before, tag) || tag == tagging.General {
				t.Fatalf("case %d: got added tag %q, want new valid kebab-case tags only", i, tag)
			}
		}
	}
}

func TestSplitThroughTagger(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		openAIAnswer(w, "test-model", `{"split": true, "subtags": [{"tag": "budget-travel-costs", "description": "trips", "aliases": ["trip-money"]}, {"tag": "budget-pet-costs", "description": "pets"}], "assignments": {"1": "budget-travel-costs", "2": "budget-pet-costs"}}`, 100, 40)
	})
	tg := NewTagger(newTestClient(t, srv, testConfig(ProviderOpenAI), ClientOptions{}), &keyword{})
	got, err := tg.Split(t.Context(), SplitInput{Tag: "budget", Count: 61, Total: 180, Vocabulary: map[string]int{"budget": 61}, Samples: []string{"flights €424", "dog food $60"}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Split || len(got.Subtags) != 2 || got.Assignments[1] != "budget-pet-costs" || got.Version != "split/v1+detailed" {
		t.Errorf("got %+v, want a two-way split with sample 2 on budget-pet-costs", got)
	}
	if p := userText(srv.requests()[0].body); !strings.Contains(p, "is on 61 of 180 turns (34%)") || !strings.Contains(p, `<turn n="2">`) {
		t.Errorf("got prompt without counts or numbered samples:\n%s", p)
	}
}

// TestEmptyInputNotAFailure: input with nothing to ask the model about goes
// to the fallback without a call and without counting against the model.
func TestEmptyInputNotAFailure(t *testing.T) {
	srv := newFakeServer(t, func(n int, b map[string]any, w http.ResponseWriter, r *http.Request) {
		openAIAnswer(w, "test-model", `{}`, 1, 1)
	})
	c := newTestClient(t, srv, testConfig(ProviderOpenAI), ClientOptions{})
	tg, sm := NewTagger(c, &keyword{}), NewSummarizer(c, firstTurn{})
	if got, err := tg.Tag(t.Context(), tagging.Input{Text: "  \n"}); err == nil {
		t.Errorf("got %+v from the fallback for blank text, want its error (it has no word to tag with)", got)
	}
	if got, err := sm.Summarize(t.Context(), summarize.Input{Kind: summarize.Segment, Tags: []string{"a"}}); err != nil || got.Method != "extractive" {
		t.Errorf("got %+v, %v; want the fallback", got, err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("got %d model calls, want 0", n)
	}
	for name, r := range map[string]interface{ Ready() (bool, string) }{"tagger": tg, "summarizer": sm} {
		if ok, why := r.Ready(); !ok || why != "" {
			t.Errorf("%s: got ready %v %q, want ready with no failure", name, ok, why)
		}
	}
}
