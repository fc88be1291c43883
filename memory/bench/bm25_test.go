package bench

import (
	"slices"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Running runners ran", []string{"run", "runner", "ran"}},
		{"Caroline's LGBTQ support-group!", []string{"carolin", "s", "lgbtq", "support", "group"}},
		{"  ", nil},
		{"Paintings in 2022", []string{"paint", "in", "2022"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Tokenize(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestBM25Rank(t *testing.T) {
	docs := []string{
		"the cat sat on the mat",
		"dogs and cats are friends",
		"the quick brown fox jumps over the lazy dog",
		"a long document about painting sunsets and sunrises over the lake in the summer of 2022 with friends",
		"painting",
		"nothing relevant here at all",
	}
	idx := NewBM25(docs)
	tests := []struct {
		query string
		want  []int
	}{
		// "cat" matches cat and cats (stemming); the shorter doc (5 tokens
		// against 6) wins.
		{"cat", []int{1, 0}},
		// Length normalisation: the one-word doc beats the long one.
		{"painting", []int{4, 3}},
		// The rarer term dominates: fox only in doc 2.
		{"lazy fox dog", []int{2, 1}},
		{"zebra", []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if got := idx.Rank(tt.query); !slices.Equal(got, tt.want) {
				t.Errorf("Rank(%q) = %v, want %v", tt.query, got, tt.want)
			}
		})
	}
	s := idx.Scores("painting")
	if !(s[4] > s[3] && s[3] > 0 && s[0] == 0) {
		t.Errorf("Scores(painting) = %v, want doc4 > doc3 > 0 = doc0", s)
	}
}

func TestRRF(t *testing.T) {
	got := RRF([]int{3, 1, 2}, []int{1, 4})
	// 1 is ranked by both lists, so it leads; then 3 (rank 1 once), then 4 and 2 tie at rank 2 / rank 3... 4 is rank 2, 2 is rank 3.
	if want := []int{1, 3, 4, 2}; !slices.Equal(got, want) {
		t.Errorf("RRF = %v, want %v", got, want)
	}
}
