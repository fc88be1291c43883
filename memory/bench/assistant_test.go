package bench

import (
	"reflect"
	"strings"
	"testing"
)

func TestGenerateAssistant(t *testing.T) {
	o := AssistantOptions{Conversations: 3, Filler: 30, Seed: 7}
	a, b := GenerateAssistant(o), GenerateAssistant(o)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same options gave different conversations")
	}
	if other := GenerateAssistant(AssistantOptions{Conversations: 3, Filler: 30, Seed: 8}); reflect.DeepEqual(a, other) {
		t.Fatal("a different seed gave the same conversations")
	}
	for _, c := range a {
		seen := map[string]string{}
		tool := false
		for _, tr := range c.Turns() {
			if tr.Speaker != "" {
				t.Fatalf("%s %s: speaker name %q (the set is role-only)", c.ID, tr.ID, tr.Speaker)
			}
			if tr.Role != "user" && tr.Role != "assistant" {
				t.Fatalf("%s %s: role %q", c.ID, tr.ID, tr.Role)
			}
			tool = tool || strings.HasPrefix(tr.Content, "[tool result]")
			seen[tr.Content] = tr.ID
		}
		if !tool {
			t.Errorf("%s: no tool result turn", c.ID)
		}
		if len(c.Questions) == 0 {
			t.Fatalf("%s: no questions", c.ID)
		}
		for _, q := range c.Questions {
			if len(q.Evidence) == 0 {
				t.Errorf("%s %q: no evidence", c.ID, q.Text)
			}
			for _, id := range q.Evidence {
				tr, ok := c.Turn(id)
				if !ok {
					t.Fatalf("%s %q: gold %q is not a turn", c.ID, q.Text, id)
				}
				// Scoring is verbatim: a gold turn's text must not repeat.
				if seen[tr.Content] != id {
					t.Errorf("%s %q: gold %s's text also appears as %s", c.ID, q.Text, id, seen[tr.Content])
				}
			}
		}
		// The drift question names the feed trick by its later name only.
		for _, q := range c.Questions {
			if strings.Contains(q.Text, "caching trick") {
				gold, _ := c.Turn(q.Evidence[0])
				if strings.Contains(gold.Content, "trick") || !strings.Contains(gold.Content, "materialized view") {
					t.Errorf("drift question's first gold turn: %q", gold.Content)
				}
			}
		}
	}
}
