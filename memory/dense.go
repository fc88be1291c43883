package memory

import (
	"context"
	"slices"

	"github.com/vc-mcp/vc-mcp/embed"
	"strings"

	"encoding/binary"
	"errors"
	"fmt"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
	"math"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Semantic memory. Turn vectors are computed in the background (a model
// encodes tens of sentences a second, ingest must take thousands), persisted
// in bbolt and kept in memory as one contiguous matrix per conversation for
// brute-force cosine search. Until a model is ready everything works
// lexically.

const (
	embedBatch     = 32
	embedMaxChars  = 2000
	embedPollEvery = 2 * time.Second
)

// vectors is a conversation's turn vectors, packed for SIMD scans.
type vectors struct {
	dim  int
	seqs []int // row -> seq
	mat  *embed.Matrix
	has  map[int]bool
}

func (v *vectors) add(seq int, vec []float32) {
	if v.has == nil {
		v.has = map[int]bool{}
	}
	if v.dim == 0 {
		v.dim = len(vec)
		v.mat = embed.NewMatrix(v.dim)
	}
	if len(vec) != v.dim || v.has[seq] {
		return
	}
	v.has[seq] = true
	v.seqs = append(v.seqs, seq)
	v.mat.Append(vec)
}

// embedderReady reports whether the configured embedder can be used now.
func (s *Store) embedderReady() bool {
	if s.opts.Embedder == nil {
		return false
	}
	if r, ok := s.opts.Embedder.(Readiness); ok {
		ok, _ := r.Ready()
		return ok
	}
	return true
}

// queryVector embeds a query when a model is ready, and returns nil
// (lexical signals only) when none is or it fails.
func (s *Store) queryVector(ctx context.Context, text string) []float32 {
	return s.queryVectors(ctx, text)[0]
}

// queryVectors embeds several texts of one query in one call (the message
// and, for a list question, its kind: see listkind.go); every vector is
// nil when no model is ready or it fails.
func (s *Store) queryVectors(ctx context.Context, texts ...string) [][]float32 {
	out := make([][]float32, len(texts))
	if !s.embedderReady() {
		return out
	}
	in := make([]string, len(texts))
	for i, t := range texts {
		in[i] = clip(t, embedMaxChars)
	}
	qv, err := s.opts.Embedder.Embed(ctx, in)
	if err != nil || len(qv) != len(texts) {
		if err != nil {
			s.log.Warn("query embedding failed; lexical signals only", "err", err)
		}
		return out
	}
	for i, v := range qv {
		if len(v) > 0 {
			out[i] = v
		}
	}
	return out
}

// embedLoop embeds turns that have no vector yet, conversation by
// conversation, until ctx ends. kick wakes it after an ingest.
func (s *Store) embedLoop(ctx context.Context) {
	defer close(s.embedDone)
	t := time.NewTicker(embedPollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
		if !s.embedderReady() {
			continue
		}
		convs := s.loadedConvs()
		sort.Slice(convs, func(i, j int) bool { return convs[i].id < convs[j].id })
		for _, c := range convs {
			if err := s.embedTags(ctx, c); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("embedding tag names failed; will retry", "conversation", c.id, "err", err)
			}
			for {
				n, err := s.embedPending(ctx, c)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						s.log.Warn("embedding turns failed; will retry", "conversation", c.id, "err", err)
					}
					break
				}
				if n == 0 {
					break
				}
			}
		}
	}
}

// embedTags embeds the names of tags that have no vector yet.
func (s *Store) embedTags(ctx context.Context, c *conv) error {
	for {
		c.mu.RLock()
		var names []string
		for tag := range c.vocab {
			if _, ok := c.tagVecs[tag]; !ok && tag != tagging.General {
				names = append(names, tag)
				if len(names) == 64 {
					break
				}
			}
		}
		c.mu.RUnlock()
		if len(names) == 0 {
			return nil
		}
		texts := make([]string, len(names))
		for i, n := range names {
			texts[i] = strings.ReplaceAll(n, "-", " ")
		}
		vecs, err := s.opts.Embedder.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("embed %d tag names: %w", len(texts), err)
		}
		c.lock()
		if c.tagVecs == nil {
			c.tagVecs = map[string][]float32{}
		}
		for i, n := range names {
			if i < len(vecs) && len(vecs[i]) > 0 && finite(vecs[i]) {
				c.tagVecs[n] = vecs[i]
			} else {
				c.tagVecs[n] = nil // unembeddable: do not retry
			}
		}
		c.unlock()
	}
}

// semanticTags returns the existing tags whose names are close in meaning
// to the query (a closed set: nothing new is invented), with weights, when
// the closest ones stand out clearly enough to trust.
func semanticTags(c *conv, q []float32) []queryTag {
	if len(c.tagVecs) < 8 {
		return nil
	}
	type ts struct {
		tag string
		sim float64
	}
	var all []ts
	var sum, sumSq float64
	for tag, v := range c.tagVecs {
		if len(v) != len(q) {
			continue
		}
		d := float64(dot(v, q))
		all = append(all, ts{tag, d})
		sum += d
		sumSq += d * d
	}
	if len(all) == 0 {
		return nil
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].sim > all[j].sim || all[i].sim == all[j].sim && all[i].tag < all[j].tag
	})
	conf := zConfidence(all[0].sim, sum, sumSq, len(all))
	if conf == 0 {
		return nil
	}
	var out []queryTag
	for _, t := range all {
		if t.sim < semanticTagMin || len(out) == 5 {
			break
		}
		out = append(out, queryTag{t.tag, 0.5 * conf})
	}
	return out
}

// semanticTagMin is the least cosine between a query and a tag name for the
// tag to count as mentioned. Calibrated on the real all-MiniLM-L6-v2 with
// the query/tag pairs of testdata/calibration.json (TestRealCalibration*):
// unrelated pairs score median 0.08, p95 0.21, max 0.27; related ones
// median 0.22, p75 0.32. At 0.25, 11 of 28 related pairs (39%) pass and 1
// of 38 unrelated (3%); the old 0.45 let only 4 of 28 related through, and
// the best-balanced 0.13 (23/28) would let 6 of 38 wrong topics in.
const semanticTagMin = 0.25

// embedPending embeds up to one batch of the conversation's unembedded
// turns and stores the vectors. It returns how many it embedded.
func (s *Store) embedPending(ctx context.Context, c *conv) (int, error) {
	type job struct {
		seq  int
		text string
	}
	var jobs []job
	c.mu.RLock()
	epoch := c.rewrites
	for seq := len(c.turns); seq >= 1 && len(jobs) < embedBatch; seq-- {
		t := c.turn(seq)
		if t.Empty || c.vecs.has[seq] || c.vecFailed[seq] {
			continue
		}
		rec, err := c.log.Read(t.Start, t.End)
		if err != nil {
			c.mu.RUnlock()
			return 0, err
		}
		jobs = append(jobs, job{seq, clip(embedText(rec.Name, rec.Content), embedMaxChars)})
	}
	c.mu.RUnlock()
	if len(jobs) == 0 {
		return 0, nil
	}
	texts := make([]string, len(jobs))
	for i, j := range jobs {
		texts[i] = j.text
	}
	vecs, err := s.opts.Embedder.Embed(ctx, texts)
	if err != nil {
		return 0, fmt.Errorf("embed %d turns: %w", len(texts), err)
	}
	if len(vecs) != len(jobs) {
		return 0, fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(jobs))
	}
	// The vectors are committed holding only the writer lock (a recall
	// does not wait for the fsync), then put in place under mu.
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.rewrites != epoch {
		return 0, nil // turns were forgotten or redacted meanwhile: embed them again
	}
	failed := map[int]bool{}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := convBucket(tx, c.id)
		if err != nil {
			return err
		}
		vb := b.Bucket(bucketVectors)
		if err := markVectorFormat(vb); err != nil {
			return err
		}
		for i, j := range jobs {
			v := vecs[i]
			if len(v) == 0 || c.vecs.dim != 0 && len(v) != c.vecs.dim || !finite(v) {
				failed[j.seq] = true
				continue
			}
			if err := vb.Put(seqKey(j.seq), encodeVector(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store vectors: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for seq := range failed {
		if c.vecFailed == nil {
			c.vecFailed = map[int]bool{}
		}
		c.vecFailed[seq] = true
	}
	for i, j := range jobs {
		if !failed[j.seq] {
			c.vecs.add(j.seq, vecs[i])
		}
	}
	return len(jobs), nil
}

// embedText is what a turn's vector encodes: its text, after the name of
// the person who said it when the turn has one ("Tim: I just finished
// that book"). In a chat between named people a question names whom it is
// about ("What books has Tim read?"), and the speaker is who "I" is in the
// turn: the lexical side knows it through the speaker boost, the vector
// only if the name is in what it encodes. Role-only turns (an assistant
// chat) encode their text alone.
func embedText(name, content string) string {
	if name = strings.TrimSpace(name); name != "" {
		return name + ": " + content
	}
	return content
}

func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

func encodeVector(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

func decodeVector(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// vectorFormat names what a stored turn vector encodes (embedText's
// recipe). It is kept under vectorFormatKey in each conversation's vectors
// bucket; vectors of another format are not loaded, so the background
// embedder makes them again (and the first write replaces them all).
// Version 2: "Name: text" for named turns (version 1, unmarked: the text
// alone).
const vectorFormat = "embed-text-v2"

var vectorFormatKey = []byte("format") // not 8 bytes: never a turn's key

// currentVectors reports whether vb holds vectors of vectorFormat.
func currentVectors(vb *bolt.Bucket) bool {
	return string(vb.Get(vectorFormatKey)) == vectorFormat
}

// markVectorFormat makes vb a bucket of vectorFormat vectors, dropping
// vectors of an older format first.
func markVectorFormat(vb *bolt.Bucket) error {
	if currentVectors(vb) {
		return nil
	}
	var old [][]byte
	if err := vb.ForEach(func(k, _ []byte) error {
		old = append(old, slices.Clone(k))
		return nil
	}); err != nil {
		return err
	}
	for _, k := range old {
		if err := vb.Delete(k); err != nil {
			return err
		}
	}
	return vb.Put(vectorFormatKey, []byte(vectorFormat))
}

// loadVectors reads a conversation's vectors from its bucket, unless they
// are of an older format.
func loadVectors(b *bolt.Bucket, c *conv) error {
	vb := b.Bucket(bucketVectors)
	if vb == nil || !currentVectors(vb) {
		return nil
	}
	return vb.ForEach(func(k, v []byte) error {
		if len(k) != 8 || len(v)%4 != 0 {
			return nil
		}
		seq := int(binary.BigEndian.Uint64(k))
		if c.turn(seq) != nil {
			c.vecs.add(seq, decodeVector(v))
		}
		return nil
	})
}

// denseScores returns the best cosine similarities of the query vector with
// the conversation's turn vectors, best first, and a confidence in [0,1]:
// how far the best matches stand out from the crowd, as a z-score
// (zConfidence; find_quote's gate). A model that cannot tell turns apart
// (random weights, a query about nothing stored) gets a confidence near
// zero, so it cannot drown the lexical signals.
func denseScores(c *conv, q []float32, limit int) (seqs []int, sims []float32, confidence float64) {
	seqs, sims, st := denseRank(c, q, limit)
	if len(seqs) == 0 {
		return nil, nil, 0
	}
	return seqs, sims, zConfidence(float64(sims[0]), st.sum, st.sumSq, st.n)
}

// crowd is the sum and sum of squares of a query's cosines with n turns.
type crowd struct {
	sum, sumSq float64
	n          int
}

// denseRank returns the limit turns most similar to q, best first, and
// the crowd of all the similarities.
func denseRank(c *conv, q []float32, limit int) (seqs []int, sims []float32, st crowd) {
	v := &c.vecs
	n := len(v.seqs)
	if n == 0 || len(q) != v.dim || limit <= 0 {
		return nil, nil, crowd{}
	}
	top := &topK{k: limit}
	for r, d := range v.mat.Dots(q, nil) {
		st.sum += float64(d)
		st.sumSq += float64(d) * float64(d)
		top.push(r, d)
	}
	st.n = n
	rows, best := top.sorted()
	seqs = make([]int, len(rows))
	for i, r := range rows {
		seqs[i] = v.seqs[r]
	}
	return seqs, best, st
}

// marginConfidence maps how far the best cosine stands above the mean
// cosine of the query with every turn (in cosine units) to [0,1]: 0 up to
// denseMarginMin, 1 from denseMarginFull. Unlike a z-score it does not
// shrink when the crowd itself is on the question's subject (a long chat
// between the same two people about the same few things: there a real
// match of cosine 0.55 over a mean of 0.07 is barely 4 standard deviations
// out: on the real model the z gate gave no say to 53% of the LoCoMo dev
// questions, this gate to 1%; 79% and 5% once turn vectors carry their
// speaker's name, which raises the crowd's mean for a question naming him).
// The margin must also beat what chance gives vectors that mean nothing:
// the best of n random unit vectors in dim dimensions stands about
// sqrt(2 ln n) standard deviations of 1/sqrt(dim) above their mean; one
// deviation more is the floor (0.23 for 600 turns of MiniLM's 384
// dimensions, under the calibrated 0.28; 0.75 for 200 turns of a
// 32-dimensional toy), so a model that cannot tell turns apart still gets
// no say.
func marginConfidence(best, sum, sumSq float64, n, dim int) float64 {
	if n < 8 || dim <= 0 {
		return 0
	}
	margin := best - sum/float64(n)
	floor := max(denseMarginMin, (math.Sqrt(2*math.Log(float64(n)))+1)/math.Sqrt(float64(dim)))
	return math.Max(0, math.Min(1, (margin-floor)/(denseMarginFull-denseMarginMin)))
}

// denseMarginMin and denseMarginFull bound the dense signal's confidence
// by the best cosine's margin over the mean. Calibrated on the real
// all-MiniLM-L6-v2 over the 149 turns of testdata/calibration.json
// (TestRealCalibration*): the 20 queries whose answer is one turn stand
// 0.23 to 0.78 above the mean (median 0.36), the 16 about nothing stored
// 0.14 to 0.39 (median 0.20). At 0.28, 17 of 20 answered queries keep the
// dense signal and 4 of 16 unanswered ones get a say, against 15 and 7 for
// the z-score gate it replaced (zConfidence with denseConfidenceOffset);
// full weight from 0.48, above every unanswered query.
const (
	denseMarginMin  = 0.28
	denseMarginFull = 0.48
)

// zConfidence maps the z-score of the best similarity among n to [0,1]. The
// best of n draws that mean nothing stands about sqrt(2 ln n) standard
// deviations above the mean (3.5 for 500 turns, 4.8 for 100,000), so only
// a best match clearly beyond that counts: a model that cannot tell turns
// apart gets no say, a real match (z of 6 and more) gets full weight.
func zConfidence(best, sum, sumSq float64, n int) float64 {
	if n < 8 {
		return 0
	}
	mean := sum / float64(n)
	std := math.Sqrt(math.Max(0, sumSq/float64(n)-mean*mean))
	if std == 0 {
		return 0
	}
	z := (best - mean) / std
	chance := math.Sqrt(2 * math.Log(float64(n)))
	return math.Max(0, math.Min(1, (z-chance-denseConfidenceOffset)/1.5))
}

// denseConfidenceOffset is how far past chance (in standard deviations) the
// best tag name must stand before semantic tags count (semanticTags). It
// gated the dense turn signal too, calibrated on the real
// all-MiniLM-L6-v2 over the 149 turns of testdata/calibration.json: 20
// queries whose answer is one turn stand z - chance = -0.16 to 4.2 (median
// 0.9) above chance, 16 about nothing stored -0.8 to 2.3 (median 0.1).
// Turns are now gated by marginConfidence, which separates those better
// (17/20 against 4/16, where this gave 15/20 against 7/16) and does not
// mistake a crowd of turns on the same subject for chance.
const denseConfidenceOffset = 0.25

func dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// topK keeps the k largest values seen (a min-heap by value).
type topK struct {
	k    int
	idx  []int
	vals []float32
}

func (t *topK) push(i int, v float32) {
	if len(t.idx) < t.k {
		t.idx, t.vals = append(t.idx, i), append(t.vals, v)
		t.up(len(t.idx) - 1)
		return
	}
	if v <= t.vals[0] {
		return
	}
	t.idx[0], t.vals[0] = i, v
	t.down(0)
}

func (t *topK) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if t.vals[p] <= t.vals[j] {
			break
		}
		t.swap(p, j)
		j = p
	}
}

func (t *topK) down(j int) {
	for {
		l, small := 2*j+1, j
		if l < len(t.vals) && t.vals[l] < t.vals[small] {
			small = l
		}
		if r := l + 1; r < len(t.vals) && t.vals[r] < t.vals[small] {
			small = r
		}
		if small == j {
			return
		}
		t.swap(j, small)
		j = small
	}
}

func (t *topK) swap(a, b int) {
	t.idx[a], t.idx[b] = t.idx[b], t.idx[a]
	t.vals[a], t.vals[b] = t.vals[b], t.vals[a]
}

// sorted returns the kept indexes and values, largest first.
func (t *topK) sorted() ([]int, []float32) {
	idx := append([]int(nil), t.idx...)
	vals := append([]float32(nil), t.vals...)
	sort.Sort(byVal{idx, vals})
	return idx, vals
}

type byVal struct {
	idx  []int
	vals []float32
}

func (b byVal) Len() int { return len(b.idx) }
func (b byVal) Less(i, j int) bool {
	return b.vals[i] > b.vals[j] || b.vals[i] == b.vals[j] && b.idx[i] < b.idx[j]
}
func (b byVal) Swap(i, j int) {
	b.idx[i], b.idx[j] = b.idx[j], b.idx[i]
	b.vals[i], b.vals[j] = b.vals[j], b.vals[i]
}

// WaitEmbedded blocks until every stored turn has its vector (or could not
// be embedded), or ctx ends. Without an embedder it returns at once. Tools
// never call it: recall works with whatever vectors exist. Benchmarks and
// tests use it to measure semantic recall on a fully embedded store.
func (s *Store) WaitEmbedded(ctx context.Context) error {
	if s.opts.Embedder == nil {
		return nil
	}
	for {
		// Not an operation: Close stops the embedder, so a wait must not
		// hold Close up.
		if s.closed.Load() {
			return ErrClosed
		}
		if s.pendingVectors() == 0 {
			return nil
		}
		s.kickEmbedder()
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for turn vectors: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pendingVectors counts loaded turns still waiting for a vector.
func (s *Store) pendingVectors() int {
	convs := s.loadedConvs()
	n := 0
	for _, c := range convs {
		c.mu.RLock()
		for _, t := range c.turns {
			if !t.Empty && !c.vecs.has[t.Seq] && !c.vecFailed[t.Seq] {
				n++
			}
		}
		c.mu.RUnlock()
	}
	return n
}
