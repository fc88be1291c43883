package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/embed"
	"github.com/vc-mcp/vc-mcp/internal/realmodel"
)

// The semantic thresholds (semanticTagMin, bleedMin, the dense margin gate)
// are set from the real all-MiniLM-L6-v2's scores on the hand-made pairs of
// testdata/calibration.json; these tests measure the distributions again
// and fail if a threshold no longer separates them as its comment says.

type calibrationData struct {
	Sentences map[string][][2]string `json:"sentences"`
	Tags      map[string][][2]string `json:"tags"`
	Followups map[string][][2]string `json:"followups"`
	Recall    struct {
		Turns      []string        `json:"turns"`
		Answered   []answeredQuery `json:"answered"`
		Unanswered []string        `json:"unanswered"`
	} `json:"recall"`
}

// answeredQuery is ["query", index of the turn that answers it].
type answeredQuery struct {
	Query string
	Turn  int
}

func (a *answeredQuery) UnmarshalJSON(b []byte) error {
	var raw [2]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw[0], &a.Query); err != nil {
		return err
	}
	return json.Unmarshal(raw[1], &a.Turn)
}

var (
	realOnce  sync.Once
	realModel *embed.Model
	realErr   error
)

// loadRealModel loads the real model once for the package's tests.
func loadRealModel(t testing.TB) *embed.Model {
	t.Helper()
	dir := realmodel.Dir(t)
	realOnce.Do(func() { realModel, realErr = embed.Load(context.Background(), dir, nil) })
	if realErr != nil {
		t.Fatalf("load the real model: %v", realErr)
	}
	return realModel
}

func readCalibration(t testing.TB) calibrationData {
	t.Helper()
	b, err := os.ReadFile("testdata/calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	var d calibrationData
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("parse calibration.json: %v", err)
	}
	return d
}

// pairCosines embeds each pair (tag names with hyphens as spaces, as
// embedTags does) and returns their cosines.
func pairCosines(t testing.TB, m *embed.Model, pairs [][2]string) []float64 {
	t.Helper()
	var texts []string
	for _, p := range pairs {
		texts = append(texts, p[0], strings.ReplaceAll(p[1], "-", " "))
	}
	vecs, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(pairs))
	for i := range pairs {
		out[i] = float64(dot(vecs[2*i], vecs[2*i+1]))
	}
	return out
}

// describe gives min, 5th, 25th, 50th, 75th, 95th percentile and max.
func describe(xs []float64) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 { return s[int(math.Round(p*float64(len(s)-1)))] }
	return fmt.Sprintf("n=%2d min %.3f p5 %.3f p25 %.3f p50 %.3f p75 %.3f p95 %.3f max %.3f",
		len(s), s[0], q(0.05), q(0.25), q(0.5), q(0.75), q(0.95), s[len(s)-1])
}

func countAtLeast(xs []float64, th float64) int {
	n := 0
	for _, x := range xs {
		if x >= th {
			n++
		}
	}
	return n
}

func TestRealCalibrationDistributions(t *testing.T) {
	m := loadRealModel(t)
	d := readCalibration(t)
	medians := map[string]float64{}
	for _, group := range []struct {
		name string
		sets map[string][][2]string
		keys []string
	}{
		{"sentences", d.Sentences, []string{"paraphrase", "drift", "topic", "unrelated"}},
		{"tags", d.Tags, []string{"related", "unrelated"}},
		{"followups", d.Followups, []string{"continues", "switches"}},
	} {
		for _, k := range group.keys {
			cs := pairCosines(t, m, group.sets[k])
			t.Logf("%-9s %-10s %s", group.name, k, describe(cs))
			sorted := slices.Sorted(slices.Values(cs))
			medians[group.name+"/"+k] = sorted[len(sorted)/2]
		}
	}
	logSweeps(t, m, d)
	// The data must say what it claims: closer meanings score higher.
	for _, pair := range [][2]string{{"sentences/paraphrase", "sentences/drift"}, {"sentences/drift", "sentences/unrelated"},
		{"sentences/topic", "sentences/unrelated"}, {"tags/related", "tags/unrelated"}, {"followups/continues", "followups/switches"}} {
		if medians[pair[0]] <= medians[pair[1]] {
			t.Errorf("median of %s (%.3f) is not above %s's (%.3f)", pair[0], medians[pair[0]], pair[1], medians[pair[1]])
		}
	}
}

// sweep logs, for thresholds th, how many of pos and neg score >= th.
func sweep(t *testing.T, name string, pos, neg []float64) {
	for th := 0.05; th <= 0.5001; th += 0.01 {
		tp, fp := countAtLeast(pos, th), countAtLeast(neg, th)
		t.Logf("%s th %.2f: related >= th %2d/%d, unrelated >= th %2d/%d, J=%.2f", name, th, tp, len(pos), fp, len(neg),
			float64(tp)/float64(len(pos))-float64(fp)/float64(len(neg)))
	}
}

// logSweeps logs how each threshold would split the pairs (go test -v).
func logSweeps(t *testing.T, m *embed.Model, d calibrationData) {
	sweep(t, "tags", pairCosines(t, m, d.Tags["related"]), pairCosines(t, m, d.Tags["unrelated"]))
	sweep(t, "quotes(drift/unrelated)", pairCosines(t, m, d.Sentences["drift"]), pairCosines(t, m, d.Sentences["unrelated"]))
	sweep(t, "quotes(drift/topic)", pairCosines(t, m, d.Sentences["drift"]), pairCosines(t, m, d.Sentences["topic"]))
	sweep(t, "followups", pairCosines(t, m, d.Followups["continues"]), pairCosines(t, m, d.Followups["switches"]))
	turns := calibrationTurns(d)
	zs := queryZ(t, m, d, turns)
	for off := 0.0; off <= 2.0001; off += 0.25 {
		var ans, un int
		for _, z := range zs {
			if z.z-z.chance > off {
				if z.kind == "answered" {
					ans++
				} else {
					un++
				}
			}
		}
		t.Logf("confidence offset %.2f: answered with confidence %d/%d, unanswered %d/%d", off, ans, len(d.Recall.Answered), un, len(d.Recall.Unanswered))
	}
	for _, z := range zs {
		t.Logf("z %-9s n=%d best %.3f margin %.3f z %.2f chance %.2f top1ok %v %q", z.kind, len(turns), z.best, z.best-z.mean, z.z, z.chance, z.top1, z.query)
	}
}

// calibrationTurns is the recall conversation plus every distinct sentence
// of the other sets but the recall queries themselves: about 150 turns, so
// the z-scores see a crowd.
func calibrationTurns(d calibrationData) []string {
	seen := map[string]bool{}
	for _, a := range d.Recall.Answered {
		seen[a.Query] = true
	}
	for _, q := range d.Recall.Unanswered {
		seen[q] = true
	}
	var turns []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			turns = append(turns, s)
		}
	}
	for _, s := range d.Recall.Turns {
		add(s)
	}
	for _, set := range []map[string][][2]string{d.Sentences, d.Followups} {
		for _, k := range slices.Sorted(mapsKeys(set)) {
			for _, p := range set[k] {
				add(p[0])
				add(p[1])
			}
		}
	}
	return turns
}

func mapsKeys(m map[string][][2]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

type queryScore struct {
	kind, query                 string
	best, mean, z, chance, conf float64
	top1                        bool
}

// queryZ scores each recall query against the turns as denseScores does.
func queryZ(t testing.TB, m *embed.Model, d calibrationData, turns []string) []queryScore {
	t.Helper()
	tv, err := m.Embed(context.Background(), turns)
	if err != nil {
		t.Fatal(err)
	}
	var out []queryScore
	score := func(kind, q string, gold string) {
		qv, err := m.Embed(context.Background(), []string{q})
		if err != nil {
			t.Fatal(err)
		}
		var sum, sumSq, best float64
		bi := -1
		for i, v := range tv {
			c := float64(dot(qv[0], v))
			sum += c
			sumSq += c * c
			if bi < 0 || c > best {
				best, bi = c, i
			}
		}
		n := float64(len(tv))
		mean := sum / n
		std := math.Sqrt(sumSq/n - mean*mean)
		out = append(out, queryScore{kind: kind, query: q, best: best, mean: mean, z: (best - mean) / std,
			chance: math.Sqrt(2 * math.Log(n)), conf: marginConfidence(best, sum, sumSq, len(tv), len(qv[0])),
			top1: gold != "" && (turns[bi] == gold || paraphrase(t, m, turns[bi], gold))})
	}
	for _, a := range d.Recall.Answered {
		score("answered", a.Query, d.Recall.Turns[a.Turn])
	}
	for _, q := range d.Recall.Unanswered {
		score("unanswered", q, "")
	}
	return out
}

// paraphrase: the two say the same (cosine >= 0.6, the bottom of the
// paraphrase pairs' distribution).
func paraphrase(t testing.TB, m *embed.Model, a, b string) bool {
	v, err := m.Embed(context.Background(), []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	return dot(v[0], v[1]) >= 0.6
}

// TestRealCalibrationThresholds holds the thresholds to the separations
// their comments state, on the real model and testdata/calibration.json.
func TestRealCalibrationThresholds(t *testing.T) {
	m := loadRealModel(t)
	d := readCalibration(t)

	rel, unrel := pairCosines(t, m, d.Tags["related"]), pairCosines(t, m, d.Tags["unrelated"])
	tp, fp := countAtLeast(rel, semanticTagMin), countAtLeast(unrel, semanticTagMin)
	t.Logf("semanticTagMin %.2f: related %d/%d, unrelated %d/%d", semanticTagMin, tp, len(rel), fp, len(unrel))
	if fp*20 > len(unrel) || tp*3 < len(rel) {
		t.Errorf("semanticTagMin %.2f: %d/%d unrelated tags pass (want <= 5%%), %d/%d related (want >= 1/3)", semanticTagMin, fp, len(unrel), tp, len(rel))
	}

	cont, sw := pairCosines(t, m, d.Followups["continues"]), pairCosines(t, m, d.Followups["switches"])
	kept, leaked := countAtLeast(cont, bleedMin), countAtLeast(sw, bleedMin)
	t.Logf("bleedMin %.2f: follow-ups inheriting %d/%d, switches inheriting %d/%d", bleedMin, kept, len(cont), leaked, len(sw))
	if leaked > 0 || kept*10 < len(cont)*6 {
		t.Errorf("bleedMin %.2f: %d/%d topic switches inherit topics (want 0), %d/%d follow-ups (want >= 60%%)", bleedMin, leaked, len(sw), kept, len(cont))
	}

	drift, unrelated, topic := pairCosines(t, m, d.Sentences["drift"]), pairCosines(t, m, d.Sentences["unrelated"]), pairCosines(t, m, d.Sentences["topic"])
	qd, qu, qt := countAtLeast(drift, semanticQuoteMin), countAtLeast(unrelated, semanticQuoteMin), countAtLeast(topic, semanticQuoteMin)
	t.Logf("semanticQuoteMin %.2f: drift %d/%d, topic-related %d/%d, unrelated %d/%d", semanticQuoteMin, qd, len(drift), qt, len(topic), qu, len(unrelated))
	if qu > 0 || qd*10 < len(drift)*7 {
		t.Errorf("semanticQuoteMin %.2f: %d/%d unrelated sentences pass (want 0), %d/%d drift references (want >= 70%%)", semanticQuoteMin, qu, len(unrelated), qd, len(drift))
	}

	var ans, un, right int
	for _, z := range queryZ(t, m, d, calibrationTurns(d)) {
		switch {
		case z.kind == "answered" && z.conf > 0:
			ans++
			if z.top1 {
				right++
			}
		case z.kind == "unanswered" && z.conf > 0:
			un++
		}
	}
	na, nu := len(d.Recall.Answered), len(d.Recall.Unanswered)
	t.Logf("denseMarginMin %.2f: answered with confidence %d/%d (%d with the right turn first), unanswered %d/%d", denseMarginMin, ans, na, right, un, nu)
	if ans*10 < na*8 || un*10 > nu*3 {
		t.Errorf("denseMarginMin %.2f: %d/%d answered queries keep the dense signal (want >= 80%%), %d/%d unanswered get one (want <= 30%%)", denseMarginMin, ans, na, un, nu)
	}
}

// TestRealReadmeSemanticExample makes the README's example true on the real
// model: in a real store, "that caching trick for the feed" recalls the turn
// about materialized views through the dense signal, and find_quote adds it
// as a semantic match for words it does not contain.
func TestRealReadmeSemanticExample(t *testing.T) {
	m := loadRealModel(t)
	s := openTest(t, Options{Embedder: m})
	msgs := append(chat(60, t0.Add(-48*time.Hour)), semanticChat()...)
	ingest(t, s, "c", msgs)
	waitVectors(t, s, "c")
	ctx := context.Background()
	r, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "that caching trick for the feed", MaxTokens: 120})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "materialized views") {
		t.Errorf("the README's query did not recall the materialized views turn:\n%s", r.Text)
	}
	if !contains(r.Signals, "dense") {
		t.Errorf("the README's query: signals %v lack dense", r.Signals)
	}
	// Without the word "feed", the dense ranking alone still puts the turn
	// first (whether recall trusts it is the confidence gate's call).
	c, err := s.conversation(ctx, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	qv, err := m.Embed(ctx, []string{"that caching trick for the timeline"})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	seqs, sims, _ := denseScores(c, qv[0], 1)
	top := ""
	if len(seqs) == 1 {
		tm := c.turn(seqs[0])
		rec, err := c.log.Read(tm.Start, tm.End)
		if err != nil {
			t.Fatal(err)
		}
		top = rec.Content
	}
	c.mu.RUnlock()
	if !strings.Contains(top, "materialized views") {
		t.Errorf("dense ranking put %q first for \"that caching trick for the timeline\" (cosine %v)", top, sims)
	}
	fq, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "c", Query: "that caching trick", MaxResults: 3})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range fq.Quotes {
		if q.Match == "semantic" && strings.Contains(q.Excerpt, "materialized") {
			found = true
		}
	}
	if !found {
		t.Errorf("find_quote gave no semantic match for the materialized views turn: %+v", fq.Quotes)
	}
}
