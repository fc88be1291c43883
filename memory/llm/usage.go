package llm

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"text/tabwriter"
	"time"
)

// UsageFile is the usage log's name inside the data directory.
const UsageFile = "llm-usage.jsonl"

// UsagePath is the usage log's path for a data directory.
func UsagePath(dataDir string) string { return filepath.Join(dataDir, UsageFile) }

// UsageRecord is one model call, one JSON line in the usage log.
type UsageRecord struct {
	Time         time.Time `json:"time"`
	Conversation string    `json:"conversation,omitempty"`
	Provider     string    `json:"provider"`
	// Model is the configured model; Served the name the provider answered
	// with, when different.
	Model        string `json:"model"`
	Served       string `json:"served,omitempty"`
	Purpose      string `json:"purpose,omitempty"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	// Estimated: the provider reported no token counts (sampling).
	Estimated bool `json:"estimated,omitempty"`
	// CostUSD is estimated from the price table; Priced is false when the
	// model has no known price (local models, sampling).
	CostUSD    float64 `json:"cost_usd"`
	Priced     bool    `json:"priced,omitempty"`
	DurationMS int64   `json:"duration_ms"`
	OK         bool    `json:"ok"`
	Error      string  `json:"error,omitempty"`
}

// UsageLog appends records to the usage log. Each record is one write of
// one line to a file opened with O_APPEND, so concurrent writers never
// interleave and a reader in another process sees whole lines (plus, at
// worst, a partial last line it skips).
type UsageLog struct {
	mu sync.Mutex
	f  *os.File
}

// OpenUsageLog opens (creating if needed) the usage log in dataDir.
func OpenUsageLog(dataDir string) (*UsageLog, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("usage log: %w", err)
	}
	f, err := os.OpenFile(UsagePath(dataDir), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("usage log: %w", err)
	}
	return &UsageLog{f: f}, nil
}

// Append writes one record.
func (l *UsageLog) Append(r UsageRecord) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("usage log: encode: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("usage log: %w", os.ErrClosed)
	}
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("usage log: %w", err)
	}
	return nil
}

// Close closes the log. Later Appends fail.
func (l *UsageLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("usage log: %w", err)
	}
	return nil
}

// UsageTotal sums the usage of one conversation with one provider/model.
type UsageTotal struct {
	Conversation string  `json:"conversation"`
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	Calls        int     `json:"calls"`
	Failures     int     `json:"failures"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	// Unpriced counts calls whose model had no known price; Estimated those
	// whose token counts were estimated.
	Unpriced  int       `json:"unpriced"`
	Estimated int       `json:"estimated"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
}

// ReadUsage sums the usage log of dataDir per conversation and model,
// sorted by conversation then provider/model. A missing log is no usage.
// Lines that do not parse (a write in progress) are skipped.
func ReadUsage(dataDir string) ([]UsageTotal, error) {
	f, err := os.Open(UsagePath(dataDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read usage: %w", err)
	}
	defer f.Close()
	type key struct{ conv, provider, model string }
	totals := map[key]*UsageTotal{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var r UsageRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		k := key{r.Conversation, r.Provider, r.Model}
		t := totals[k]
		if t == nil {
			t = &UsageTotal{Conversation: r.Conversation, Provider: r.Provider, Model: r.Model, First: r.Time}
			totals[k] = t
		}
		t.Calls++
		if !r.OK {
			t.Failures++
		}
		t.InputTokens += r.InputTokens
		t.OutputTokens += r.OutputTokens
		t.CostUSD += r.CostUSD
		if !r.Priced {
			t.Unpriced++
		}
		if r.Estimated {
			t.Estimated++
		}
		if r.Time.Before(t.First) {
			t.First = r.Time
		}
		if r.Time.After(t.Last) {
			t.Last = r.Time
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read usage: %w", err)
	}
	out := make([]UsageTotal, 0, len(totals))
	for _, t := range totals {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Conversation != b.Conversation {
			return a.Conversation < b.Conversation
		}
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		return a.Model < b.Model
	})
	return out, nil
}

// CostReport prints the usage of dataDir as a table: one row per
// conversation and model, then a total. Costs marked "~" include calls
// with no known price (counted as 0) or estimated token counts.
func CostReport(dataDir string, w io.Writer) error {
	totals, err := ReadUsage(dataDir)
	if err != nil {
		return err
	}
	if len(totals) == 0 {
		_, err := fmt.Fprintf(w, "no model usage recorded in %s\n", UsagePath(dataDir))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conversation\tprovider/model\tcalls\tfailed\tinput tok\toutput tok\tcost USD\t")
	var sum UsageTotal
	for _, t := range totals {
		conv := t.Conversation
		if conv == "" {
			conv = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%d\t%d\t%d\t%d\t%s\t\n", conv, t.Provider, t.Model, t.Calls, t.Failures,
			t.InputTokens, t.OutputTokens, cost(t))
		sum.Calls += t.Calls
		sum.Failures += t.Failures
		sum.InputTokens += t.InputTokens
		sum.OutputTokens += t.OutputTokens
		sum.CostUSD += t.CostUSD
		sum.Unpriced += t.Unpriced
		sum.Estimated += t.Estimated
	}
	fmt.Fprintf(tw, "total\t\t%d\t%d\t%d\t%d\t%s\t\n", sum.Calls, sum.Failures, sum.InputTokens, sum.OutputTokens, cost(sum))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cost report: %w", err)
	}
	if sum.Unpriced > 0 || sum.Estimated > 0 {
		if _, err := fmt.Fprintf(w, "~ %d calls had no known price (counted as $0), %d had estimated token counts\n", sum.Unpriced, sum.Estimated); err != nil {
			return fmt.Errorf("cost report: %w", err)
		}
	}
	return nil
}

func cost(t UsageTotal) string {
	s := fmt.Sprintf("%.6f", t.CostUSD)
	if t.Unpriced > 0 || t.Estimated > 0 {
		s = "~" + s
	}
	return s
}
