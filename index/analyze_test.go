package index

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"empty", "", nil},
		{"stop words only", "The and of, a IS it?", nil},
		{"lowercase and stem", "The Quick Brown Foxes jumped!", []string{"quick", "brown", "fox", "jump"}},
		{"possessive", "Alice's cats", []string{"alic", "cat"}},
		{"order and repeats kept", "dogs chase cats, cats chase dogs", []string{"dog", "chase", "cat", "cat", "chase", "dog"}},
		{"numbers kept", "Meeting at 10:30 on 2024-05-01", []string{"meet", "10", "30", "2024", "05", "01"}},
		// UAX #29 keeps letters joined by ':' as one word; nothing is a field prefix.
		{"query syntax is just text", `title:foo AND +bar -baz`, []string{"title:foo", "bar", "baz"}},
		{"invalid utf-8 dropped", "fox\xff\xfe dog", []string{"fox", "dog"}},
		{"punctuation only", `"( ) [ ] { } / \ * ~ ^`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Analyze(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("Analyze(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// TestAnalyzeGolden pins the analyzer on a wider sample, so that a Bleve
// upgrade that changes terms (and so invalidates existing indexes) is noticed.
func TestAnalyzeGolden(t *testing.T) {
	inputs := []string{
		"I'm planning a trip to Lisbon next Friday with my sister.",
		"The database migration failed because the disk was full.",
		"Running, runs, ran and runner are related words.",
		"Dr. Patel's appointment was moved from Tuesday to Thursday.",
		"We can't deploy on weekends; it's against the policy.",
		"Café naïve résumé — Unicode text with accents.",
		"e-mail user@example.com or visit https://example.com/path?q=1",
		"UPPERCASE lowercase MixedCase camelCaseWord snake_case_word",
		"東京に行きました。 Приятно познакомиться.",
		"Version 2.5.7 of the library, PR #1234, cost $19.99 (20% off).",
	}
	var b strings.Builder
	for _, in := range inputs {
		line, err := json.Marshal(map[string]any{"text": in, "terms": Analyze(in)})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	got := b.String()
	path := filepath.Join("testdata", "analyze.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if got != string(want) {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
