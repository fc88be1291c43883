package memory_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/bench"
)

// TestTuneLoCoMo evaluates rank-fusion weight variants on the LoCoMo dev
// split in one process (ingest once, recall per variant). It is a
// development tool: set VC_TUNE_LOCOMO to the data file to run it.
func TestTuneLoCoMo(t *testing.T) {
	path := os.Getenv("VC_TUNE_LOCOMO")
	if path == "" {
		t.Skip("set VC_TUNE_LOCOMO=path/to/locomo-dev.json")
	}
	convs, err := bench.LoadLoCoMo(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stores := make([]*memory.Store, len(convs))
	convIDs := make([]string, len(convs))
	for i, c := range convs {
		s, err := memory.Open(ctx, memory.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		reqs, err := bench.IngestRequests(c)
		if err != nil {
			t.Fatal(err)
		}
		convIDs[i] = reqs[0].ConversationID
		for _, r := range reqs {
			if _, err := s.Ingest(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		stores[i] = s
	}
	base := *memory.Weights
	variants := map[string]func(w *memory.Tuning){"base": func(w *memory.Tuning) {}}
	for _, v := range strings.Split(os.Getenv("VC_TUNE_VARIANTS"), ";") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		variants[v] = parseVariant(t, v)
	}
	names := make([]string, 0, len(variants))
	for n := range variants {
		names = append(names, n)
	}
	sort.Strings(names)
	budgets := []int{1000, 2000}
	for _, name := range names {
		*memory.Weights = base
		variants[name](memory.Weights)
		for _, b := range budgets {
			cat := map[int][]float64{}
			var all []float64
			for i, c := range convs {
				for _, q := range c.Questions {
					if len(q.Evidence) == 0 {
						continue
					}
					r, err := stores[i].Recall(ctx, memory.RecallRequest{ConversationID: convIDs[i], Message: q.Text, MaxTokens: b})
					if err != nil {
						t.Fatal(err)
					}
					var gold []string
					for _, id := range q.Evidence {
						turn, _ := c.Turn(id)
						gold = append(gold, turn.Content)
					}
					sc := bench.EvidenceScore(r.Text, gold)
					if os.Getenv("VC_TUNE_MISSES") != "" && b == 2000 && sc < 1 && name == "base" {
						t.Logf("MISS [%s] %s", bench.CategoryName(q.Category), q.Text)
						for gi, g := range gold {
							if !strings.Contains(bench.NormalizeText(r.Text), bench.NormalizeText(g)) {
								t.Logf("   gold %s: %.160s", q.Evidence[gi], g)
							}
						}
					}
					cat[q.Category] = append(cat[q.Category], sc)
					all = append(all, sc)
				}
			}
			line := fmt.Sprintf("%-40s @%d overall %.1f", name, b, 100*bench.Mean(all))
			for k := 1; k <= 5; k++ {
				line += fmt.Sprintf(" | %s %.1f", bench.CategoryName(k), 100*bench.Mean(cat[k]))
			}
			t.Log(line)
		}
	}
}

func parseVariant(t *testing.T, v string) func(w *memory.Tuning) {
	return func(w *memory.Tuning) {
		for _, kv := range strings.Split(v, ",") {
			var k string
			var f float64
			if _, err := fmt.Sscanf(strings.Replace(kv, "=", " ", 1), "%s %g", &k, &f); err != nil {
				t.Fatalf("variant %q: %v", kv, err)
			}
			switch k {
			case "lex":
				w.Lexical = f
			case "tags":
				w.Tags = f
			case "time":
				w.Time = f
			case "rec":
				w.Recency = f
			case "nb":
				w.Neighbor = f
			case "ans":
				w.Answer = f
			case "nb2":
				w.Neighbor2 = f
			case "sp":
				w.Speaker = f
			default:
				t.Fatalf("unknown knob %q", k)
			}
		}
	}
}
