package index

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSearchHighlight(t *testing.T) {
	long := strings.Repeat("Filler words about nothing in particular go here. ", 10) +
		"Then the deployment of the payments service failed at noon. " +
		strings.Repeat("More filler text follows without anything useful. ", 10)
	docs := append(corpus(), Doc{ID: "long", Conversation: "c9", Kind: "turn", Text: long})
	texts := map[string]string{}
	for _, d := range docs {
		texts[d.ID] = d.Text
	}
	ix := openTemp(t, docs)
	tests := []struct {
		name string
		q    Query
		want []string // fragments of the top hit
	}{
		{"whole short text, stemmed match", Query{Text: "foxes", Conversations: []string{"c1"}, Kinds: []string{"turn"}, Highlight: true},
			[]string{"The quick brown **fox** jumps over the lazy dog"}},
		{"several terms", Query{Text: "lazy dog fox", Conversations: []string{"c1"}, Kinds: []string{"turn"}, Highlight: true},
			[]string{"The quick brown **fox** jumps over the **lazy** **dog**"}},
		{"possessive", Query{Text: "alice", Conversations: []string{"c1"}, Highlight: true},
			[]string{"**Alice's** cat sleeps on the warm windowsill all afternoon"}},
		{"phrase only", Query{Phrases: []string{"warm windowsill"}, Highlight: true},
			[]string{"Alice's cat sleeps on the **warm** **windowsill** all afternoon"}},
		{"excerpt of long text", Query{Text: "deployment payments", Conversations: []string{"c9"}, Highlight: true},
			[]string{"…Filler words about nothing in particular go here. Then the **deployment** of the **payments** service failed at noon. More filler text follows without anything useful. More filler text follows without…"}},
		{"off", Query{Text: "fox", Conversations: []string{"c1"}, Kinds: []string{"turn"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := search(t, ix, tt.q)
			if len(hits) == 0 {
				t.Fatal("got no hits")
			}
			var got []string
			if tt.q.Highlight {
				got = Fragments(texts[hits[0].ID], hits[0].Matches)
			} else if len(hits[0].Matches) > 0 {
				t.Errorf("got matches %v without Highlight", hits[0].Matches)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFragments(t *testing.T) {
	text := strings.Repeat("a", 100) + " alpha " + strings.Repeat("b", 400) + " omega " + strings.Repeat("c", 50)
	alpha := strings.Index(text, "alpha")
	omega := strings.Index(text, "omega")
	tests := []struct {
		name  string
		text  string
		spans []span
		want  []string
	}{
		{"no spans", "hello", nil, nil},
		{"out of range spans ignored", "hello", []span{{-1, 2}, {3, 99}, {4, 2}}, nil},
		{"whole text", "hello world", []span{{6, 11}}, []string{"hello **world**"}},
		{"overlapping spans merge", "hello world", []span{{0, 5}, {2, 4}, {5, 11}}, []string{"**hello world**"}},
		{"unsorted spans", "one two three", []span{{8, 13}, {0, 3}}, []string{"**one** two **three**"}},
		{"two windows", text, []span{{alpha, alpha + 5}, {omega, omega + 5}}, []string{
			// alpha-fragmentLead .. +fragmentSize bytes; no spaces to snap to.
			"…" + strings.Repeat("a", 59) + " **alpha** " + strings.Repeat("b", 134) + "…",
			"…" + strings.Repeat("b", 59) + " **omega** " + strings.Repeat("c", 50),
		}},
		{"split rune ignored", "héllo", []span{{2, 4}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fragments(tt.text, tt.spans); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFragmentsAtMostThree(t *testing.T) {
	var sb strings.Builder
	var spans []span
	for i := range 10 {
		sb.WriteString(strings.Repeat("x", 300))
		sb.WriteString(" hit ")
		n := 1
		if i == 2 || i == 5 || i == 7 {
			n = 3 // these windows hold more matches and must be chosen
		}
		for range n {
			start := sb.Len()
			sb.WriteString("key")
			spans = append(spans, span{start, start + 3})
			sb.WriteString(" ")
		}
	}
	got := fragments(sb.String(), spans)
	if len(got) != maxFragments {
		t.Fatalf("got %d fragments, want %d", len(got), maxFragments)
	}
	for i, f := range got {
		if n := strings.Count(f, "**key**"); n != 3 {
			t.Errorf("fragment %d has %d marks, want 3: %q", i, n, f)
		}
	}
}

func FuzzFragments(f *testing.F) {
	f.Add("hello world", 0, 5, 6, 11)
	f.Add("héllo wörld", 1, 3, 7, 9)
	f.Fuzz(func(t *testing.T, text string, a, b, c, d int) {
		got := fragments(text, []span{{a, b}, {c, d}})
		if len(got) > maxFragments {
			t.Errorf("got %d fragments", len(got))
		}
		if utf8.ValidString(text) {
			for _, f := range got {
				if !utf8.ValidString(f) {
					t.Errorf("invalid UTF-8 fragment %q from valid text", f)
				}
			}
		}
	})
}
