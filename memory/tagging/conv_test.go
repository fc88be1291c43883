package tagging

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// scriptTurn is one line of testdata/conversation.tsv.
type scriptTurn struct {
	topic, role, text string
}

func loadScript(t testing.TB) []scriptTurn {
	t.Helper()
	f, err := os.Open("testdata/conversation.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []scriptTurn
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := strings.SplitN(line, "\t", 3)
		if len(p) != 3 {
			t.Fatalf("bad script line %q", line)
		}
		out = append(out, scriptTurn{p[0], p[1], p[2]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// runScript tags the script in order, building the vocabulary as the
// memory engine does.
func runScript(t testing.TB, k *Keyword, turns []scriptTurn) []Result {
	t.Helper()
	vocab := map[string]int{}
	var prev []string
	out := make([]Result, len(turns))
	for i, tr := range turns {
		r, err := k.Tag(context.Background(), Input{Text: tr.text, Role: tr.role, Vocabulary: vocab, Previous: prev})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = r
		for _, tag := range r.Tags {
			vocab[tag]++
		}
		prev = r.Tags
	}
	return out
}

func renderScript(turns []scriptTurn, rs []Result) string {
	var b strings.Builder
	for i, r := range rs {
		flags := ""
		if r.Broad {
			flags += " broad"
		}
		if r.Temporal {
			flags += " temporal"
		}
		if r.Rule {
			flags += " rule"
		}
		fmt.Fprintf(&b, "%02d %-6s %-9s %s | related=%s |%s\n", i+1, turns[i].topic, r.Source, strings.Join(r.Tags, ","), strings.Join(r.Related, ","), flags)
	}
	return b.String()
}
