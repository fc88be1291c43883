package prompts

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func vocab() []VocabEntry {
	return []VocabEntry{
		{Tag: "dog-adoption", Count: 12, Aliases: []string{"pet-adoption"}},
		{Tag: "trip-to-lisbon", Count: 7},
		{Tag: "budget", Count: 3},
	}
}

func segmentTurns() []Turn {
	return []Turn{
		{Role: "user", Speaker: "Caroline", Time: "2026-03-02T09:15:00Z", Text: "I adopted Biscuit from the shelter on 28 February. The fee was $150."},
		{Role: "assistant", Time: "2026-03-02T09:15:20Z", Text: "Congratulations! Do you want a checklist for the first vet visit?"},
		{Role: "user", Speaker: "Caroline", Time: "2026-03-02T09:16:05Z", Text: "Yes. I decided to book Dr Alvarez next Friday; I'll call them tomorrow."},
	}
}

// TestGolden renders every template in both modes and compares the result
// with testdata/<name>.<mode>.golden.
func TestGolden(t *testing.T) {
	type render func(Mode) (Prompt, error)
	cases := []struct {
		name    string
		version string
		render  render
	}{
		{"tag", TagVersion, func(m Mode) (Prompt, error) {
			return Tag(TagData{Mode: m, Role: "user", Speaker: "Caroline", Text: "We should pick the flight to Lisbon before prices go up: the 7:40 one is €212.", Vocabulary: vocab(), Previous: []string{"trip-to-lisbon"}})
		}},
		{"tag-empty-vocab", TagVersion, func(m Mode) (Prompt, error) {
			return Tag(TagData{Mode: m, Role: "user", Text: "From now on, always answer in British English."})
		}},
		{"segment", SegmentVersion, func(m Mode) (Prompt, error) {
			return Segment(SegmentData{Mode: m, Tag: "dog-adoption", Tags: []string{"dog-adoption", "vet-visit"}, Turns: segmentTurns()})
		}},
		{"segment-custom", SegmentVersion, func(m Mode) (Prompt, error) {
			return Segment(SegmentData{Mode: m, Tag: "dog-adoption", Tags: []string{"dog-adoption"}, Turns: segmentTurns(), MaxWords: 60, Instructions: "List every cost in a table-like sentence."})
		}},
		{"rollup", RollupVersion, func(m Mode) (Prompt, error) {
			return Rollup(RollupData{Mode: m, Tag: "dog-adoption", Tags: []string{"dog-adoption", "vet-visit"}, Segments: []string{
				"Caroline adopted Biscuit on 28 February for $150.",
				"Caroline booked Dr Alvarez for next Friday; later moved it to Monday 9 March.",
			}})
		}},
		{"split", SplitVersion, func(m Mode) (Prompt, error) {
			return Split(SplitData{Mode: m, Tag: "budget", Count: 61, Total: 180, MinTurns: 40, MaxShare: 0.25, Vocabulary: vocab(), Samples: []Sample{
				{N: 1, Text: "The flights came to €424 for both of us."},
				{N: 2, Text: "Dog food is about $60 a month."},
				{N: 3, Text: "Can we keep the hotel under €90 a night?"},
			}})
		}},
		{"turn-user", TurnVersion, func(m Mode) (Prompt, error) {
			return TurnSummary(TurnData{Mode: m, Role: "user", Speaker: "Caroline", PreviousRole: "assistant", NextRole: "assistant",
				Previous: "Which vet did you settle on?",
				Text:     "I went with Dr Alvarez in the end, because she is five minutes from my flat and my neighbour swears by her. The first appointment is next Friday at 10:30, and I need to bring the shelter's papers. Should I also bring a stool sample?",
				Next:     "Yes, bring a fresh stool sample in a clean container; most vets test for parasites at the first visit."})
		}},
		{"turn-assistant-first", TurnVersion, func(m Mode) (Prompt, error) {
			return TurnSummary(TurnData{Mode: m, Role: "assistant", Text: "Here is a long explanation of three hosting options: A at $5/month, B at $12/month, and C self-hosted.", NextRole: "user", Next: "Let's take the second one.", MaxWords: 40})
		}},
	}
	cases = append(cases, []struct {
		name    string
		version string
		render  render
	}{
		{"replace", ReplaceVersion, func(m Mode) (Prompt, error) {
			return Replace(ReplaceData{Mode: m, Messages: segmentTurns(), MaxWords: 120})
		}},
		{"replace-previous-custom", ReplaceVersion, func(m Mode) (Prompt, error) {
			return Replace(ReplaceData{Mode: m, Messages: segmentTurns()[1:], Previous: "Caroline adopted Biscuit on 28 February for $150.",
				Instructions: "Summarise as a bullet list of facts."})
		}},
	}...)
	for _, tc := range cases {
		for _, mode := range []Mode{Detailed, Simple} {
			t.Run(tc.name+"/"+string(mode), func(t *testing.T) {
				p, err := tc.render(mode)
				if err != nil {
					t.Fatalf("render: %v", err)
				}
				if want := tc.version + "+" + string(mode); p.Version != want {
					t.Errorf("got version %q, want %q", p.Version, want)
				}
				got := "=== system\n" + p.System + "=== user\n" + p.User
				path := filepath.Join("testdata", tc.name+"."+string(mode)+".golden")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("read golden (run with -update to create): %v", err)
				}
				if got != string(want) {
					t.Errorf("render differs from %s (run go test ./prompts -update and review the diff)\ngot:\n%s", path, got)
				}
			})
		}
	}
}

// TestModesDiffer guards against the mode switch silently doing nothing.
func TestModesDiffer(t *testing.T) {
	d, err := Segment(SegmentData{Mode: Detailed, Tag: "x", Turns: segmentTurns()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Segment(SegmentData{Mode: Simple, Tag: "x", Turns: segmentTurns()})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.User) >= len(d.User) {
		t.Errorf("got simple prompt of %d bytes, want shorter than detailed (%d bytes)", len(s.User), len(d.User))
	}
}

func TestInvalid(t *testing.T) {
	cases := []struct {
		name string
		err  func() error
	}{
		{"tag empty text", func() error { _, err := Tag(TagData{Text: "  "}); return err }},
		{"segment no turns", func() error { _, err := Segment(SegmentData{Tag: "x"}); return err }},
		{"rollup no segments", func() error { _, err := Rollup(RollupData{Tag: "x"}); return err }},
		{"rollup no tag", func() error { _, err := Rollup(RollupData{Segments: []string{"s"}}); return err }},
		{"split no samples", func() error { _, err := Split(SplitData{Tag: "x"}); return err }},
		{"turn empty", func() error { _, err := TurnSummary(TurnData{}); return err }},
		{"replace nothing", func() error { _, err := Replace(ReplaceData{}); return err }},
		{"bad mode", func() error { _, err := Tag(TagData{Text: "x", Mode: "fancy"}); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	cases := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"", Detailed, false},
		{"simple", Simple, false},
		{" Detailed ", Detailed, false},
		{"verbose", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMode(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParseMode(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestTextVerbatim: turn text reaches the model unaltered (no HTML escaping).
func TestTextVerbatim(t *testing.T) {
	text := `if a < b && c > "d" { return 'x' }`
	p, err := Tag(TagData{Text: text, Role: "user"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.User, text) {
		t.Errorf("got user prompt without the verbatim text %q", text)
	}
}
