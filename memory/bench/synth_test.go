package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(1000, 1), Generate(1000, 1)
	if a.Hash() != b.Hash() {
		t.Fatalf("same size and seed gave different conversations")
	}
	if Generate(1000, 2).Hash() == a.Hash() {
		t.Errorf("different seeds gave the same conversation")
	}
	golden := filepath.Join("testdata", "synth-1000-seed1.sha256")
	if *update {
		if err := os.WriteFile(golden, []byte(a.Hash()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if got := a.Hash(); got != strings.TrimSpace(string(want)) {
		t.Errorf("Generate(1000, 1).Hash() = %s, want %s (the generator changed; rerun with -update if intended)", got, want)
	}
}

func TestGenerateShape(t *testing.T) {
	tests := []struct {
		n       int
		needles []int
	}{
		{2000, []int{12, 250, 500, 750, 1000, 1250, 1500, 1750}},
		{100, []int{12, 25, 37, 50, 62, 75, 87}},
		{10, nil},
	}
	for _, tt := range tests {
		s := Generate(tt.n, 7)
		if got := len(s.Turns); got != tt.n {
			t.Errorf("Generate(%d): %d turns", tt.n, got)
		}
		var at []int
		for _, nd := range s.Needles {
			at = append(at, nd.Turn)
			turn := s.Turns[nd.Turn]
			if turn.Content != nd.Fact || turn.Role != "user" {
				t.Errorf("n=%d needle at %d: turn %q (%s), want the fact %q from the user", tt.n, nd.Turn, turn.Content, turn.Role, nd.Fact)
			}
			if !strings.Contains(nd.Fact, nd.Answer) {
				t.Errorf("needle fact %q lacks its answer %q", nd.Fact, nd.Answer)
			}
			// The answer appears nowhere else.
			for i, other := range s.Turns {
				if i != nd.Turn && strings.Contains(other.Content, nd.Answer) {
					t.Errorf("answer %q also at turn %d", nd.Answer, i)
				}
			}
		}
		if !slices.Equal(at, tt.needles) {
			t.Errorf("Generate(%d) needles at %v, want %v", tt.n, at, tt.needles)
		}
		for i := 1; i < len(s.Turns); i++ {
			if !s.Turns[i].Time.After(s.Turns[i-1].Time) {
				t.Fatalf("turn %d time %v not after %v", i, s.Turns[i].Time, s.Turns[i-1].Time)
			}
		}
	}
	s := Generate(1000, 3)
	topics := map[string]bool{}
	for _, tr := range s.Turns {
		topics[tr.Topic] = true
	}
	if len(topics) < 15 {
		t.Errorf("1000 turns cover %d topics, want many (>= 15)", len(topics))
	}
	recall, quote := s.Queries(50)
	if len(recall) != 50 || len(quote) != 50 || recall[0] != s.Needles[0].Question {
		t.Errorf("Queries(50): %d recall, %d quote, first %q", len(recall), len(quote), recall[0])
	}
	msgs := s.Messages(0, 4)
	if len(msgs) != 4 || msgs[0].Role != "user" || msgs[1].Role != "assistant" || msgs[0].Timestamp == "" {
		t.Errorf("Messages(0,4) = %+v", msgs)
	}
}
