package memory

import (
	"context"
	"hash/fnv"
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/embed"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
	bolt "go.etcd.io/bbolt"
)

// conceptEmbedder is a deterministic fake: each text maps to the concepts
// its words belong to, so synonyms land close together and unrelated texts
// are orthogonal. Unknown words get a weak hashed dimension.
type conceptEmbedder struct {
	calls atomic.Int64
}

var concepts = map[string]int{
	"materialized": 1, "views": 1, "view": 1, "caching": 1, "cache": 1, "precomputed": 1,
	"feed": 2, "timeline": 2, "posts": 2,
	"arduino": 3, "circuit": 3, "circuits": 3, "breadboard": 3, "resistor": 3,
	"planes": 4, "plane": 4, "aircraft": 4, "flight": 4, "airport": 4,
}

const conceptDim = 64

func (e *conceptEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, conceptDim)
		for _, w := range strings.Fields(strings.ToLower(strings.Trim(t, ".?!"))) {
			w = strings.Trim(w, ".,?!'")
			if c, ok := concepts[w]; ok {
				v[c] += 1
				continue
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[8+int(h.Sum32()%(conceptDim-8))] += 0.15
		}
		out[i] = normalize(v)
	}
	return out, nil
}

// randomEmbedder returns random unit vectors: a model that knows nothing.
type randomEmbedder struct{}

func (randomEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(t))
		r := rand.New(rand.NewSource(int64(h.Sum64())))
		v := make([]float32, 32)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = normalize(v)
	}
	return out, nil
}

func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		v[0] = 1
		return v
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(n))
	}
	return v
}

// waitVectors waits until every stored turn has a vector.
func waitVectors(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitEmbedded(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := s.conversation(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.vecs.seqs) == 0 {
		t.Fatalf("no vectors in %s", id)
	}
}

func semanticChat() []Message {
	lines := []string{
		"For the home feed we switched the expensive query to materialized views refreshed every minute.",
		"I soldered the arduino board and the resistor on the breadboard got hot.",
		"My flight to Lisbon was delayed because the aircraft had a technical issue.",
		"We also talked about the weekly team lunch at the noodle place.",
		"The dentist appointment moved to Thursday afternoon.",
		"I started reading a novel about a lighthouse keeper.",
		"The garden needs more compost before the tomatoes go in.",
		"My sister adopted a grey cat called Pixel.",
		"The quarterly report is due on the fifteenth.",
		"We repainted the kitchen in a pale green.",
	}
	var out []Message
	for i, l := range lines {
		out = append(out, msg("user", "Ana", l, t0.Add(time.Duration(i)*time.Hour)))
	}
	return out
}

func TestSemanticRecallBridgesVocabulary(t *testing.T) {
	emb := &conceptEmbedder{}
	s := openTest(t, Options{Embedder: emb})
	ingest(t, s, "c", semanticChat())
	waitVectors(t, s, "c")
	r, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "that caching trick for the timeline", MaxTokens: 120})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "materialized views") {
		t.Fatalf("semantic recall missed the materialized views turn:\n%s", r.Text)
	}
	if !contains(r.Signals, "dense") {
		t.Fatalf("signals %v lack dense", r.Signals)
	}
	r, err = s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "tell me about arduino circuits", MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "arduino") {
		t.Fatalf("arduino turn missing:\n%s", r.Text)
	}
	for _, tag := range r.MatchedTags {
		if strings.Contains(tag, "plane") || strings.Contains(tag, "aircraft") || strings.Contains(tag, "flight") {
			t.Fatalf("arduino query matched tag %q (all: %v)", tag, r.MatchedTags)
		}
	}
	fq, err := s.FindQuote(context.Background(), FindQuoteRequest{ConversationID: "c", Query: "precomputed cache", MaxResults: 3})
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
		t.Fatalf("find_quote gave no semantic supplement: %+v", fq.Quotes)
	}
}

func TestRandomEmbedderDoesNotChangeRecall(t *testing.T) {
	msgs := chat(200, t0)
	lexical := openTest(t, Options{})
	ingest(t, lexical, "c", msgs)
	random := openTest(t, Options{Embedder: randomEmbedder{}})
	ingest(t, random, "c", msgs)
	waitVectors(t, random, "c")
	for _, q := range []string{"Rex vaccination appointment", "Postgres 16 migration", "Kyoto ryokan nights", "GOMAXPROCS bug"} {
		a, err := lexical.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: q, MaxTokens: 300})
		if err != nil {
			t.Fatal(err)
		}
		b, err := random.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: q, MaxTokens: 300})
		if err != nil {
			t.Fatal(err)
		}
		if a.Text != b.Text {
			t.Fatalf("a random model changed recall for %q:\n%s\n---\n%s", q, a.Text, b.Text)
		}
	}
}

func TestVectorsPersist(t *testing.T) {
	dir := t.TempDir()
	emb := &conceptEmbedder{}
	s := openTest(t, Options{Dir: dir, Embedder: emb})
	ingest(t, s, "c", semanticChat())
	waitVectors(t, s, "c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	emb2 := &conceptEmbedder{}
	s2 := openTest(t, Options{Dir: dir, Embedder: emb2})
	c, err := s2.conversation(context.Background(), "c", false)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	n := len(c.vecs.seqs)
	c.mu.RUnlock()
	if n != len(semanticChat()) {
		t.Fatalf("%d vectors after reopen, want %d", n, len(semanticChat()))
	}
}

func TestFeaturesReportEmbedderState(t *testing.T) {
	s := openTest(t, Options{Embedder: embed.NewLazy(t.TempDir(), nil)})
	st, err := s.Status(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Features.Embeddings || st.Features.EmbeddingsReason == "" {
		t.Fatalf("features %+v: want embeddings off with a reason", st.Features)
	}
}

// TestTinyModelEndToEnd runs the real embedding code (the small test model
// committed under embed/testdata) through ingest and recall.
func TestTinyModelEndToEnd(t *testing.T) {
	m, err := embed.Load(context.Background(), "../embed/testdata/tiny", &embed.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("load tiny model: %v", err)
	}
	s := openTest(t, Options{Embedder: m})
	ingest(t, s, "c", semanticChat())
	waitVectors(t, s, "c")
	r, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "dentist appointment", MaxTokens: 200})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "dentist appointment moved") {
		t.Fatalf("recall with the tiny model lost the lexical match:\n%s", r.Text)
	}
	st, _ := s.Status(context.Background(), "c")
	if !st.Features.Embeddings {
		t.Fatalf("features %+v: want embeddings on", st.Features)
	}
}

// recordingTagger remembers the Previous tags it was given.
type recordingTagger struct {
	Tagger
	previous [][]string
}

func (r *recordingTagger) Tag(ctx context.Context, in tagging.Input) (tagging.Result, error) {
	r.previous = append(r.previous, in.Previous)
	return r.Tagger.Tag(ctx, in)
}

func TestContextBleedGate(t *testing.T) {
	tests := []struct {
		name     string
		followUp string
		embedder Embedder
		passed   bool // whether the previous turn's tags reach the tagger
	}{
		{"related follow-up", "more about those circuits?", &conceptEmbedder{}, true},
		{"unrelated follow-up", "and the airport?", &conceptEmbedder{}, false},
		{"no model", "and the airport?", nil, true},
		{"long turn is not gated", "and the airport, where we waited for hours before the plane finally boarded late at night?", &conceptEmbedder{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &recordingTagger{Tagger: tagging.NewKeyword(nil)}
			s := openTest(t, Options{Embedder: tt.embedder, Tagger: rt})
			ingest(t, s, "c", []Message{msg("user", "Ana", "I soldered the arduino circuit on the breadboard today.", t0)})
			ingest(t, s, "c", []Message{msg("user", "Ana", tt.followUp, t0.Add(time.Minute))})
			if len(rt.previous) != 2 {
				t.Fatalf("tagger called %d times, want 2", len(rt.previous))
			}
			if got := rt.previous[1] != nil; got != tt.passed {
				t.Fatalf("previous tags passed = %v (%v), want %v", got, rt.previous[1], tt.passed)
			}
		})
	}
}

// TestMarginConfidence: the dense signal's gate, alone. Crowds are given
// as (mean, n): sum = mean*n, sumSq does not matter to the margin.
func TestMarginConfidence(t *testing.T) {
	mid := (denseMarginMin + denseMarginFull) / 2
	for _, tc := range []struct {
		name       string
		best, mean float64
		n, dim     int
		want       float64
	}{
		{"too few turns", 0.9, 0.0, 7, 384, 0},
		{"no dimensions", 0.9, 0.0, 100, 0, 0},
		{"at the floor", 0.1 + denseMarginMin, 0.1, 600, 384, 0},
		{"halfway", 0.1 + mid, 0.1, 600, 384, 0.5},
		{"full", 0.1 + denseMarginFull, 0.1, 600, 384, 1},
		{"capped at 1", 0.95, 0.0, 600, 384, 1},
		{"below the mean", 0.05, 0.1, 600, 384, 0},
		// A topical crowd: mean 0.2, best 0.6 is a real match whatever the
		// spread (the z gate read such matches as chance).
		{"topical crowd", 0.2 + denseMarginFull, 0.2, 600, 384, 1},
		// 32 random dimensions: the chance floor (0.75 for 200 turns) is
		// above the calibrated one, so a best 0.6 over the mean says nothing.
		{"random toy", 0.6, 0.0, 200, 32, 0},
		{"random toy, huge margin", 0.99, 0.0, 200, 32, 1},
	} {
		got := marginConfidence(tc.best, tc.mean*float64(tc.n), 0, tc.n, tc.dim)
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: marginConfidence(best %.3f, mean %.3f, n %d, dim %d) = %.3f, want %.3f", tc.name, tc.best, tc.mean, tc.n, tc.dim, got, tc.want)
		}
	}
}

// TestEmbedText: a turn's vector carries its speaker's name when it has one.
func TestEmbedText(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"Tim", "I just finished that book.", "Tim: I just finished that book."},
		{" Tim ", "hi", "Tim: hi"},
		{"", "role-only chat", "role-only chat"},
		{"  ", "blank name", "blank name"},
	} {
		if got := embedText(tc.name, tc.content); got != tc.want {
			t.Errorf("embedText(%q, %q) = %q, want %q", tc.name, tc.content, got, tc.want)
		}
	}
}

// TestOlderVectorFormatIsRemade: vectors stored before turn vectors carried
// the speaker's name (no format mark) are not loaded; the background
// embedder makes them again, replacing the old ones, and marks the bucket.
func TestOlderVectorFormatIsRemade(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir, Embedder: &conceptEmbedder{}})
	ingest(t, s, "c", semanticChat())
	waitVectors(t, s, "c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Make the store look like one written by an older version.
	db, err := bolt.Open(filepath.Join(dir, "vc.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(convBucketName("c")).Bucket(bucketVectors).Delete(vectorFormatKey)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	emb := &conceptEmbedder{}
	s2 := openTest(t, Options{Dir: dir, Embedder: emb})
	if _, err := s2.conversation(context.Background(), "c", false); err != nil { // loaded: its turns count as pending
		t.Fatal(err)
	}
	waitVectors(t, s2, "c")
	if got := emb.calls.Load(); got == 0 {
		t.Fatalf("no turn was embedded again after reopening older-format vectors")
	}
	c, err := s2.conversation(context.Background(), "c", false)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	n := len(c.vecs.seqs)
	c.mu.RUnlock()
	if n != len(semanticChat()) {
		t.Errorf("%d vectors after the remake, want %d", n, len(semanticChat()))
	}
	if err := s2.db.View(func(tx *bolt.Tx) error {
		if !currentVectors(tx.Bucket(convBucketName("c")).Bucket(bucketVectors)) {
			t.Errorf("vectors bucket not marked %q after the remake", vectorFormat)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
