package summarize

import (
	"strings"
	"testing"
)

// containsCues is what findCues must answer: the kinds of which a phrase is
// in the lowercased text with a space on either side, by strings.Contains.
func containsCues(text string) cueKind {
	low := " " + strings.ToLower(text) + " "
	var found cueKind
	for _, l := range []struct {
		cues []string
		kind cueKind
	}{{decisionCues, cueDecision}, {actionCues, cueAction}, {preferenceCues, cuePreference}, {factCues, cueFact}} {
		for _, c := range l.cues {
			if strings.Contains(low, c) {
				found |= l.kind
			}
		}
	}
	return found
}

var cueSeeds = []string{
	"", " ", "I", "we decided", "We Decided to go", "Let's go with logical replication.", "agreed", "I agreedly nodded",
	"todos: deadlines by friday", "I workout and I lived", "my", "My favorite!", "i'm", "I’ll", "İ prefer tea",
	"KELVIN \u212a", "go  with", "decided\tto", "is a", "this is a test", "our", "ours", "Our plan is a plan",
	"the plan is", "x the plan isn't", "I'll\nI will", "a\u00a0we'll", "by the end of", "final answer", "must",
}

func TestFindCues(t *testing.T) {
	for _, s := range cueSeeds {
		if got, want := findCues(s), containsCues(s); got != want {
			t.Errorf("findCues(%q) = %04b, want %04b", s, got, want)
		}
	}
}

func FuzzFindCues(f *testing.F) {
	for _, s := range cueSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := findCues(s), containsCues(s); got != want {
			t.Fatalf("findCues(%q) = %04b, want %04b", s, got, want)
		}
	})
}
