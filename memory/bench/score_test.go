package bench

import (
	"testing"
)

func TestNormalizeText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Hello  World", "hello world"},
		{"  Tabs\tand\nnewlines\r\n ", "tabs and newlines"},
		{"ÄÖÜ Straße", "äöü straße"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := NormalizeText(tt.in); got != tt.want {
				t.Errorf("NormalizeText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEvidenceScore(t *testing.T) {
	tests := []struct {
		name    string
		context string
		gold    []string
		want    float64
	}{
		{"verbatim", "Ann: I adopted a dog named Pickle.", []string{"I adopted a dog named Pickle."}, 1},
		{"case and whitespace", "ann:   i ADOPTED a\n dog named pickle.", []string{"I adopted a dog  named Pickle."}, 1},
		{"partial text is not a hit", "Ann: I adopted a dog", []string{"I adopted a dog named Pickle."}, 0},
		{"paraphrase is not a hit", "Ann adopted Pickle the dog.", []string{"I adopted a dog named Pickle."}, 0},
		{"half of two", "x\nBob: Lisbon next week.\ny", []string{"Lisbon next week.", "The tiles were amazing."}, 0.5},
		{"caption suffix required", "Ann: Show me!", []string{"Show me! [shares a photo of blue tiles]"}, 0},
		{"caption suffix present", "Ann: Show me! [shares a photo of blue tiles]", []string{"Show me! [shares a photo of blue tiles]"}, 1},
		{"punctuation matters", "Ann: Show me", []string{"Show me!"}, 0},
		{"no gold", "anything", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EvidenceScore(tt.context, tt.gold); got != tt.want {
				t.Errorf("EvidenceScore(%q, %q) = %v, want %v", tt.context, tt.gold, got, tt.want)
			}
		})
	}
}

func TestBootstrapCI(t *testing.T) {
	xs := make([]float64, 300)
	for i := range xs {
		xs[i] = float64(i%7) / 6
	}
	lo1, hi1 := BootstrapCI(xs, 1000, 0.95, 42)
	lo2, hi2 := BootstrapCI(xs, 1000, 0.95, 42)
	if lo1 != lo2 || hi1 != hi2 {
		t.Errorf("same seed: got (%v,%v) then (%v,%v), want identical", lo1, hi1, lo2, hi2)
	}
	m := Mean(xs)
	if !(lo1 < m && m < hi1) {
		t.Errorf("CI (%v,%v) does not contain the mean %v", lo1, hi1, m)
	}
	if hi1-lo1 > 0.1 || hi1-lo1 <= 0 {
		t.Errorf("CI width %v, want in (0, 0.1] for 300 samples", hi1-lo1)
	}
	lo3, hi3 := BootstrapCI(xs, 1000, 0.95, 43)
	if lo3 == lo1 && hi3 == hi1 {
		t.Errorf("different seeds gave the same interval (%v,%v)", lo3, hi3)
	}
	if lo, hi := BootstrapCI([]float64{1, 1, 1}, 1000, 0.95, 1); lo != 1 || hi != 1 {
		t.Errorf("constant sample: got (%v,%v), want (1,1)", lo, hi)
	}
	if lo, hi := BootstrapCI(nil, 1000, 0.95, 1); lo != 0 || hi != 0 {
		t.Errorf("empty sample: got (%v,%v), want (0,0)", lo, hi)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	tests := []struct {
		p    float64
		want float64
	}{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {0, 1}, {10, 1}}
	for _, tt := range tests {
		if got := Percentile(xs, tt.p); got != tt.want {
			t.Errorf("Percentile(p=%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
}
