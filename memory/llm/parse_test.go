package llm

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

func TestExtractJSON(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    string
		wantErr bool
	}{
		{"bare", `{"a":1}`, `{"a":1}`, false},
		{"fenced", "Here you go:\n```json\n{\"a\": [1, 2]}\n```\nHope that helps!", `{"a": [1, 2]}`, false},
		{"fence without info", "```\n{\"a\":1}\n```", `{"a":1}`, false},
		{"unterminated fence", "```json\n{\"a\":1}\n", `{"a":1}`, false},
		{"think block", "<think>maybe {\"a\":0}? no.</think>\n{\"a\":1}", `{"a":1}`, false},
		{"stray closing think", "reasoning about {x}...</think>{\"a\":1}", `{"a":1}`, false},
		{"prose around", `Sure! The tags are {"tags": ["x"]} as requested.`, `{"tags": ["x"]}`, false},
		{"trailing commas", "{\"a\": [1, 2,], \"b\": 3,\n}", "{\"a\": [1, 2], \"b\": 3\n}", false},
		{"comma inside string kept", `{"a": "x,}"}`, `{"a": "x,}"}`, false},
		{"braces in strings", `{"s": "a } b { c", "n": 1}`, `{"s": "a } b { c", "n": 1}`, false},
		{"escaped quote", `{"s": "say \"}\" now"}`, `{"s": "say \"}\" now"}`, false},
		{"first invalid, second valid", `{not json} then {"a":1}`, `{"a":1}`, false},
		{"nested", `x {"a": {"b": {"c": []}}} y`, `{"a": {"b": {"c": []}}}`, false},
		{"unclosed think only", "<think>still thinking {\"a\":", "", true},
		{"cut off", `{"summary": "Caroline adopted`, "", true},
		{"no object", "I cannot help with that.", "", true},
		{"empty", "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := extractJSON(tc.in)
			if tc.wantErr {
				if err == nil || !errors.Is(err, errNoJSON) {
					t.Errorf("got %q, %v; want errNoJSON", got, err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{\"a\": [1,]}\n```", "<think>x</think>{}", `{"s":"\"}"}`, "{{{", "}}{", "```", "<think>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := extractJSON(s)
		if err == nil && !json.Valid(got) {
			t.Errorf("extractJSON(%q) = %q: not valid JSON", s, got)
		}
		// The answer parsers must never panic on any model output.
		in := tagging.Input{Aliases: map[string]string{"db": "database"}}
		if res, err := parseTags(s, in); err == nil {
			if len(res.Tags) < 1 || len(res.Tags) > 5 || res.Tags[0] != res.Primary {
				t.Errorf("parseTags(%q) = %+v: violates the contract", s, res)
			}
		}
		base := []string{"keep-me", "and-me"}
		if res, err := parseSummary(s, summarize.Input{Kind: summarize.Segment, Tags: base}); err == nil {
			if len(res.Tags) < 2 || res.Tags[0] != "keep-me" || res.Tags[1] != "and-me" {
				t.Errorf("parseSummary(%q) dropped input tags: %v", s, res.Tags)
			}
		}
		_, _ = parseSplit(s, SplitInput{Tag: "budget", Samples: []string{"a", "b"}}, 5)
	})
}

func TestNormalizeTag(t *testing.T) {
	cases := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"database-migration", "database-migration", true},
		{"Database Migration", "database-migration", true},
		{"#trip_to_lisbon", "trip-to-lisbon", true},
		{" \"q3--budget\" ", "q3-budget", true},
		{"ci/cd", "ci-cd", true},
		{"_general", "_general", true},
		{"café", "café", false},
		{"a+b", "a+b", false},
		{"", "", false},
		{strings.Repeat("x", 60), strings.Repeat("x", 60), false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := normalizeTag(tc.in)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestParseTags(t *testing.T) {
	in := tagging.Input{Aliases: map[string]string{"pet-adoption": "dog-adoption"}}
	cases := []struct {
		name    string
		answer  string
		want    tagging.Result
		wantErr bool
	}{
		{"full", `{"tags": ["vet-visit", "dog-adoption"], "primary": "dog-adoption", "related": ["veterinarian", "vet-visit", "Pet Care"], "broad": false, "temporal": true, "rule": false}`,
			tagging.Result{Tags: []string{"dog-adoption", "vet-visit"}, Primary: "dog-adoption", Related: []string{"veterinarian", "pet-care"}, Temporal: true}, false},
		{"alias canonicalised and deduplicated", `{"tags": ["pet-adoption", "dog-adoption"], "primary": "pet-adoption"}`,
			tagging.Result{Tags: []string{"dog-adoption"}, Primary: "dog-adoption"}, false},
		{"primary defaults to first", `{"tags": ["Lisbon Trip", "flights"]}`,
			tagging.Result{Tags: []string{"lisbon-trip", "flights"}, Primary: "lisbon-trip"}, false},
		{"loose types", `{"tags": "budget, flights", "primary": "budget", "rule": "yes", "broad": "false"}`,
			tagging.Result{Tags: []string{"budget", "flights"}, Primary: "budget", Rule: true}, false},
		{"general dropped beside real tags", `{"tags": ["_general", "budget"], "primary": "_general"}`,
			tagging.Result{Tags: []string{"budget"}, Primary: "budget"}, false},
		{"general alone", `{"tags": ["_general"], "primary": "_general"}`,
			tagging.Result{Tags: []string{"_general"}, Primary: "_general"}, false},
		{"invalid related dropped", `{"tags": ["budget"], "related": ["€uro", "money"]}`,
			tagging.Result{Tags: []string{"budget"}, Primary: "budget", Related: []string{"money"}}, false},
		{"primary not among tags", `{"tags": ["budget"], "primary": "flights"}`, tagging.Result{}, true},
		{"six tags", `{"tags": ["a", "b", "c", "d", "e", "f"]}`, tagging.Result{}, true},
		{"no tags", `{"tags": [], "primary": ""}`, tagging.Result{}, true},
		{"not kebab", `{"tags": ["naïve-tag"]}`, tagging.Result{}, true},
		{"not JSON", `budget, flights`, tagging.Result{}, true},
		{"wrong type", `{"tags": {"a": 1}}`, tagging.Result{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTags(tc.answer, in)
			if tc.wantErr {
				if !errors.Is(err, ErrBadResponse) {
					t.Errorf("got %+v, %v; want ErrBadResponse", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseSummary(t *testing.T) {
	seg := summarize.Input{Kind: summarize.Segment, Tag: "dog-adoption", Tags: []string{"dog-adoption", "vet-visit"}}
	cases := []struct {
		name    string
		in      summarize.Input
		answer  string
		want    summarize.Result
		wantErr bool
	}{
		{"segment", seg, `{"summary": " Caroline adopted Biscuit. ", "entities": ["Caroline", " "], "key_decisions": ["adopt"], "action_items": [], "date_references": ["28 February"], "refined_tags": ["vet-visit", "shelter", "Bad Tag!"], "related_tags": ["pets"]}`,
			summarize.Result{Summary: "Caroline adopted Biscuit.", Entities: []string{"Caroline"}, Decisions: []string{"adopt"}, Dates: []string{"28 February"}, Tags: []string{"dog-adoption", "vet-visit", "shelter"}}, false},
		{"model dropped a tag: kept anyway", seg, `{"summary": "s", "refined_tags": []}`,
			summarize.Result{Summary: "s", Tags: []string{"dog-adoption", "vet-visit"}}, false},
		{"too many additions capped", seg, `{"summary": "s", "refined_tags": ["a", "b", "c", "d", "e", "f", "g"]}`,
			summarize.Result{Summary: "s", Tags: []string{"dog-adoption", "vet-visit", "a", "b", "c", "d", "e"}}, false},
		{"rollup description capped at 80 words", summarize.Input{Kind: summarize.Tag, Tag: "x", Tags: []string{"x"}},
			`{"summary": "s", "description": "` + strings.Repeat("word ", 100) + `"}`,
			summarize.Result{Summary: "s", Description: strings.TrimSpace(strings.Repeat("word ", 80)), Tags: []string{"x"}}, false},
		{"rollup description repaired from summary", summarize.Input{Kind: summarize.Tag, Tag: "x"},
			`{"summary": "Plans for the trip. Flights were booked."}`,
			summarize.Result{Summary: "Plans for the trip. Flights were booked.", Description: "Plans for the trip."}, false},
		{"turn as plain prose", summarize.Input{Kind: summarize.Single}, "<think>hm</think>Caroline asked whether to bring a stool sample.",
			summarize.Result{Summary: "Caroline asked whether to bring a stool sample."}, false},
		{"empty summary", seg, `{"summary": "  "}`, summarize.Result{}, true},
		{"segment as prose rejected", seg, "Caroline adopted a dog.", summarize.Result{}, true},
		{"cut off", seg, `{"summary": "Caroline ado`, summarize.Result{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSummary(tc.answer, tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrBadResponse) {
					t.Errorf("got %+v, %v; want ErrBadResponse", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseSplit(t *testing.T) {
	in := SplitInput{
		Tag: "budget", Vocabulary: map[string]int{"budget": 60, "budget-travel": 2, "flights": 9},
		Aliases: map[string]string{"money": "budget"}, Samples: []string{"a", "b", "c"},
	}
	cases := []struct {
		name    string
		answer  string
		want    SplitResult
		wantErr bool
	}{
		{"split", `{"split": true, "subtags": [
			{"tag": "budget-trip-costs", "description": "travel spending", "aliases": ["trip-money", "money", "budget-travel", "flights"]},
			{"tag": "Budget Pet Costs", "description": "pet spending", "aliases": ["pet-money"]}],
			"assignments": {"1": "budget-trip-costs", "2": "budget-pet-costs", "3": "nonexistent", "9": "budget-trip-costs", "x": "budget-pet-costs"}}`,
			SplitResult{Split: true, Subtags: []Subtag{
				{Tag: "budget-trip-costs", Description: "travel spending", Aliases: []string{"trip-money"}},
				{Tag: "budget-pet-costs", Description: "pet spending", Aliases: []string{"pet-money"}},
			}, Assignments: map[int]string{0: "budget-trip-costs", 1: "budget-pet-costs"}}, false},
		{"no split", `{"split": false, "subtags": [], "assignments": {}}`, SplitResult{Split: false}, false},
		{"reuses an existing tag", `{"split": true, "subtags": [{"tag": "budget-travel"}, {"tag": "budget-pets"}]}`, SplitResult{}, true},
		{"reuses the parent", `{"split": true, "subtags": [{"tag": "budget"}, {"tag": "budget-pets"}]}`, SplitResult{}, true},
		{"not compound", `{"split": true, "subtags": [{"tag": "travel-costs"}, {"tag": "budget-pets"}]}`, SplitResult{}, true},
		{"duplicate", `{"split": true, "subtags": [{"tag": "budget-pets"}, {"tag": "budget pets"}]}`, SplitResult{}, true},
		{"only one", `{"split": true, "subtags": [{"tag": "budget-pets"}]}`, SplitResult{}, true},
		{"too many", `{"split": true, "subtags": [{"tag": "budget-a"}, {"tag": "budget-b"}, {"tag": "budget-c"}, {"tag": "budget-d"}, {"tag": "budget-e"}, {"tag": "budget-f"}]}`, SplitResult{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSplit(tc.answer, in, 5)
			if tc.wantErr {
				if !errors.Is(err, ErrBadResponse) {
					t.Errorf("got %+v, %v; want ErrBadResponse", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestShouldSplit(t *testing.T) {
	cases := []struct {
		name         string
		count, total int
		want         bool
	}{
		{"over both thresholds", 50, 100, true},
		{"too few turns", 30, 50, false},
		{"small share", 45, 1000, false},
		{"empty conversation", 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShouldSplit(tc.count, tc.total, 0, 0); got != tc.want {
				t.Errorf("ShouldSplit(%d, %d) = %v, want %v", tc.count, tc.total, got, tc.want)
			}
		})
	}
}
