package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes one table per budget: a row per method, recall
// percentages with the bootstrap 95% CI of the overall mean.
func (r *LoCoMoReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "LoCoMo-R: %d conversations (%s), %d turns, %d questions (%d excluded: no evidence).\n",
		len(r.Conversations), strings.Join(r.Conversations, ", "), r.Turns, r.Questions, r.Excluded)
	fmt.Fprintf(&b, "Evidence recall in %% (macro mean over questions); overall with a percentile bootstrap 95%% CI (%d resamples, seed %d).\n",
		r.Resamples, r.Seed)
	for _, budget := range r.Budgets {
		fmt.Fprintf(&b, "\n### Budget %d tokens\n\n", budget)
		b.WriteString("| method | overall (95% CI) | w/o adversarial |")
		for _, c := range categoryOrder {
			fmt.Fprintf(&b, " %s |", CategoryName(c))
		}
		b.WriteString(" all-evidence hit | mean tokens | over budget | p50 ms |\n|---|---|---|")
		b.WriteString(strings.Repeat("---|", len(categoryOrder)))
		b.WriteString("---|---|---|---|\n")
		for _, m := range r.Methods {
			res, ok := r.Result(m, budget)
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "| %s | %.1f (%.1f-%.1f) | %.1f |", m, res.Overall, res.OverallCILow, res.OverallCIHigh, res.OverallNoAdversarial)
			for _, c := range res.Categories {
				if c.N == 0 {
					b.WriteString(" - |")
					continue
				}
				fmt.Fprintf(&b, " %.1f |", c.Recall)
			}
			over := fmt.Sprint(res.OverBudget)
			if res.OverBudget > 0 {
				over = "**" + over + " FAIL**"
			}
			fmt.Fprintf(&b, " %.1f | %.0f | %s | %.2f |\n", res.AllEvidenceHit, res.MeanTokens, over, res.LatencyP50Ms)
		}
	}
	if len(r.Results) > 0 {
		b.WriteString("\nQuestions per category:")
		for _, c := range r.Results[0].Categories {
			fmt.Fprintf(&b, " %s %d,", c.Name, c.N)
		}
		s := strings.TrimSuffix(b.String(), ",")
		b.Reset()
		b.WriteString(s)
		b.WriteString(".\n")
	}
	if len(r.PrepareSecs) > 0 {
		b.WriteString("Preparation time (index/ingest, all conversations):")
		for _, m := range r.Methods {
			fmt.Fprintf(&b, " %s %.1fs;", m, r.PrepareSecs[m])
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as indented JSON.
func (r *LoCoMoReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
