package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

// Bootstrap settings of every reported confidence interval.
const (
	BootstrapResamples = 1000
	BootstrapSeed      = 20260101
)

// LoCoMoConfig configures RunLoCoMo.
type LoCoMoConfig struct {
	Conversations []*Conversation
	Methods       []Method
	Budgets       []int
	Counter       *tokens.Counter
	// Progress receives a progress bar and warnings (nil = silent).
	Progress io.Writer
	// KeepQuestions keeps per-question scores in the report.
	KeepQuestions bool
}

// QuestionScore is one question's outcome for one method and budget.
type QuestionScore struct {
	Conversation string  `json:"conversation"`
	Index        int     `json:"index"`
	Category     int     `json:"category"`
	Score        float64 `json:"score"`
	Tokens       int     `json:"tokens"`
	OverBudget   bool    `json:"over_budget,omitempty"`
}

// CategoryScore is a method's mean recall on one category.
type CategoryScore struct {
	Category int     `json:"category"`
	Name     string  `json:"name"`
	N        int     `json:"n"`
	Recall   float64 `json:"recall"`
}

// MethodResult is one method at one budget. Recall figures are percentages.
type MethodResult struct {
	Method               string          `json:"method"`
	Budget               int             `json:"budget"`
	N                    int             `json:"n"`
	Overall              float64         `json:"overall"`
	OverallCILow         float64         `json:"overall_ci_low"`
	OverallCIHigh        float64         `json:"overall_ci_high"`
	OverallNoAdversarial float64         `json:"overall_no_adversarial"`
	Categories           []CategoryScore `json:"categories"`
	AllEvidenceHit       float64         `json:"all_evidence_hit"`
	// OverBudget counts contexts longer than the budget; each scored 0.
	OverBudget int     `json:"over_budget"`
	MeanTokens float64 `json:"mean_tokens"`
	// LatencyP50Ms and LatencyP95Ms time one Context call.
	LatencyP50Ms float64         `json:"latency_p50_ms"`
	LatencyP95Ms float64         `json:"latency_p95_ms"`
	Questions    []QuestionScore `json:"questions,omitempty"`
}

// LoCoMoReport is a whole LoCoMo-R run.
type LoCoMoReport struct {
	Conversations []string           `json:"conversations"`
	Turns         int                `json:"turns"`
	Questions     int                `json:"questions"`
	Excluded      int                `json:"excluded"`
	Budgets       []int              `json:"budgets"`
	Methods       []string           `json:"methods"`
	Results       []MethodResult     `json:"results"`
	PrepareSecs   map[string]float64 `json:"prepare_seconds"`
	Resamples     int                `json:"bootstrap_resamples"`
	Seed          uint64             `json:"bootstrap_seed"`
	Started       time.Time          `json:"started"`
	Seconds       float64            `json:"seconds"`
}

// Result returns the result of method at budget.
func (r *LoCoMoReport) Result(method string, budget int) (MethodResult, bool) {
	for _, m := range r.Results {
		if m.Method == method && m.Budget == budget {
			return m, true
		}
	}
	return MethodResult{}, false
}

// OverBudget is the total number of contexts that exceeded their budget.
func (r *LoCoMoReport) OverBudget() int {
	n := 0
	for _, m := range r.Results {
		n += m.OverBudget
	}
	return n
}

type cell struct {
	scores  []QuestionScore
	latency []float64
}

// RunLoCoMo runs the LoCoMo-R measurement: every method, every conversation,
// every question, every budget.
func RunLoCoMo(ctx context.Context, cfg LoCoMoConfig) (*LoCoMoReport, error) {
	if cfg.Counter == nil {
		return nil, errors.New("locomo: no token counter")
	}
	if len(cfg.Budgets) == 0 || len(cfg.Methods) == 0 {
		return nil, errors.New("locomo: need at least one method and one budget")
	}
	rep := &LoCoMoReport{
		Budgets:     slices.Clone(cfg.Budgets),
		PrepareSecs: map[string]float64{},
		Resamples:   BootstrapResamples,
		Seed:        BootstrapSeed,
		Started:     time.Now().UTC(),
	}
	total := 0
	for _, c := range cfg.Conversations {
		rep.Conversations = append(rep.Conversations, c.ID)
		rep.Questions += len(c.Questions)
		rep.Excluded += c.Excluded
		rep.Turns += len(c.Turns())
		total += len(c.Questions) * len(cfg.Methods)
	}
	for _, m := range cfg.Methods {
		rep.Methods = append(rep.Methods, m.Name())
	}
	bar := newProgressBar(cfg.Progress, total)
	cells := map[string]map[int]*cell{}
	for _, m := range cfg.Methods {
		cells[m.Name()] = map[int]*cell{}
		for _, b := range cfg.Budgets {
			cells[m.Name()][b] = &cell{}
		}
	}
	for _, conv := range cfg.Conversations {
		for _, m := range cfg.Methods {
			bar.label(conv.ID + " " + m.Name() + " (preparing)")
			start := time.Now()
			ans, err := m.Prepare(ctx, conv)
			if err != nil {
				bar.done()
				return nil, fmt.Errorf("%s on %s: %w", m.Name(), conv.ID, err)
			}
			rep.PrepareSecs[m.Name()] += time.Since(start).Seconds()
			bar.label(conv.ID + " " + m.Name())
			err = askAll(ctx, cfg, conv, m.Name(), ans, cells[m.Name()], bar)
			if cerr := ans.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("close: %w", cerr)
			}
			if err != nil {
				bar.done()
				return nil, fmt.Errorf("%s on %s: %w", m.Name(), conv.ID, err)
			}
		}
	}
	bar.done()
	for _, m := range cfg.Methods {
		for _, b := range cfg.Budgets {
			c := cells[m.Name()][b]
			res := summarize(m.Name(), b, c)
			if cfg.KeepQuestions {
				res.Questions = c.scores
			}
			rep.Results = append(rep.Results, res)
		}
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	return rep, nil
}

func askAll(ctx context.Context, cfg LoCoMoConfig, conv *Conversation, method string, ans Answerer, cells map[int]*cell, bar *progressBar) error {
	for _, q := range conv.Questions {
		gold := make([]string, 0, len(q.Evidence))
		for _, id := range q.Evidence {
			t, _ := conv.Turn(id)
			gold = append(gold, t.Content)
		}
		for _, b := range cfg.Budgets {
			if err := ctx.Err(); err != nil {
				return err
			}
			start := time.Now()
			text, err := ans.Context(ctx, q.Text, b)
			elapsed := time.Since(start)
			if err != nil {
				return fmt.Errorf("question %d at %d tokens: %w", q.Index, b, err)
			}
			qs := QuestionScore{Conversation: conv.ID, Index: q.Index, Category: q.Category, Tokens: cfg.Counter.Count(text)}
			if qs.Tokens > b {
				qs.OverBudget = true
				bar.warn(fmt.Sprintf("BUDGET VIOLATION: %s %s question %d: %d tokens > budget %d (scored 0)", method, conv.ID, q.Index, qs.Tokens, b))
			} else {
				qs.Score = EvidenceScore(text, gold)
			}
			c := cells[b]
			c.scores = append(c.scores, qs)
			c.latency = append(c.latency, float64(elapsed.Microseconds())/1000)
		}
		bar.add(1)
	}
	return nil
}

func summarize(method string, budget int, c *cell) MethodResult {
	res := MethodResult{Method: method, Budget: budget, N: len(c.scores)}
	var all, noAdv []float64
	byCat := map[int][]float64{}
	hits, tokens := 0, 0
	for _, s := range c.scores {
		all = append(all, s.Score)
		if s.Category != CategoryAdversarial {
			noAdv = append(noAdv, s.Score)
		}
		byCat[s.Category] = append(byCat[s.Category], s.Score)
		if s.Score == 1 {
			hits++
		}
		if s.OverBudget {
			res.OverBudget++
		}
		tokens += s.Tokens
	}
	res.Overall = 100 * Mean(all)
	lo, hi := BootstrapCI(all, BootstrapResamples, 0.95, BootstrapSeed)
	res.OverallCILow, res.OverallCIHigh = 100*lo, 100*hi
	res.OverallNoAdversarial = 100 * Mean(noAdv)
	for _, cat := range categoryOrder {
		res.Categories = append(res.Categories, CategoryScore{Category: cat, Name: CategoryName(cat), N: len(byCat[cat]), Recall: 100 * Mean(byCat[cat])})
	}
	if n := len(c.scores); n > 0 {
		res.AllEvidenceHit = 100 * float64(hits) / float64(n)
		res.MeanTokens = float64(tokens) / float64(n)
	}
	res.LatencyP50Ms = Percentile(c.latency, 50)
	res.LatencyP95Ms = Percentile(c.latency, 95)
	return res
}
