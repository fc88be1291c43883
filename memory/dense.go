package memory

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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

// vectors is a conversation's turn vectors.
type vectors struct {
	dim  int
	seqs []int     // row -> seq
	data []float32 // rows x dim, L2-normalised
	has  map[int]bool
}

func (v *vectors) add(seq int, vec []float32) {
	if v.has == nil {
		v.has = map[int]bool{}
	}
	if v.dim == 0 {
		v.dim = len(vec)
	}
	if len(vec) != v.dim || v.has[seq] {
		return
	}
	v.has[seq] = true
	v.seqs = append(v.seqs, seq)
	v.data = append(v.data, vec...)
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
		s.mu.Lock()
		convs := make([]*conv, 0, len(s.convs))
		for _, c := range s.convs {
			convs = append(convs, c)
		}
		s.mu.Unlock()
		sort.Slice(convs, func(i, j int) bool { return convs[i].id < convs[j].id })
		for _, c := range convs {
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

// embedPending embeds up to one batch of the conversation's unembedded
// turns and stores the vectors. It returns how many it embedded.
func (s *Store) embedPending(ctx context.Context, c *conv) (int, error) {
	type job struct {
		seq  int
		text string
	}
	var jobs []job
	c.mu.RLock()
	for seq := len(c.turns); seq >= 1 && len(jobs) < embedBatch; seq-- {
		t := c.turn(seq)
		if t.Empty || c.vecs.has[seq] || c.vecFailed[seq] {
			continue
		}
		rec, err := c.log.read(t.Start, t.End)
		if err != nil {
			c.mu.RUnlock()
			return 0, err
		}
		jobs = append(jobs, job{seq, clip(rec.Content, embedMaxChars)})
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
	c.mu.Lock()
	defer c.mu.Unlock()
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := convBucket(tx, c.id)
		if err != nil {
			return err
		}
		vb := b.Bucket(bucketVectors)
		for i, j := range jobs {
			v := vecs[i]
			if len(v) == 0 || c.vecs.dim != 0 && len(v) != c.vecs.dim || !finite(v) {
				if c.vecFailed == nil {
					c.vecFailed = map[int]bool{}
				}
				c.vecFailed[j.seq] = true
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
	for i, j := range jobs {
		if !c.vecFailed[j.seq] {
			c.vecs.add(j.seq, vecs[i])
		}
	}
	return len(jobs), nil
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

// loadVectors reads a conversation's vectors from its bucket.
func loadVectors(b *bolt.Bucket, c *conv) error {
	vb := b.Bucket(bucketVectors)
	if vb == nil {
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

// denseScores returns cosine similarities of the query vector with the
// conversation's turn vectors, best first, and a confidence in [0,1]: how
// far the best matches stand out from the crowd. A model that cannot tell
// turns apart (random weights, a query about nothing stored) gets a
// confidence near zero, so it cannot drown the lexical signals.
func denseScores(c *conv, q []float32, limit int) (seqs []int, sims []float32, confidence float64) {
	v := &c.vecs
	n := len(v.seqs)
	if n == 0 || len(q) != v.dim {
		return nil, nil, 0
	}
	all := make([]float32, n)
	var sum, sumSq float64
	for r := 0; r < n; r++ {
		row := v.data[r*v.dim : (r+1)*v.dim]
		var d float32
		for i, x := range row {
			d += x * q[i]
		}
		all[r] = d
		sum += float64(d)
		sumSq += float64(d) * float64(d)
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(i, j int) bool { return all[idx[i]] > all[idx[j]] })
	if len(idx) > limit {
		idx = idx[:limit]
	}
	seqs = make([]int, len(idx))
	sims = make([]float32, len(idx))
	for i, r := range idx {
		seqs[i], sims[i] = v.seqs[r], all[r]
	}
	mean := sum / float64(n)
	std := math.Sqrt(math.Max(0, sumSq/float64(n)-mean*mean))
	if n < 8 || std == 0 {
		return seqs, sims, 0
	}
	// z-score of the best match: ~2 for noise, 4+ for a real match.
	z := (float64(sims[0]) - mean) / std
	confidence = math.Max(0, math.Min(1, (z-2.5)/2))
	return seqs, sims, confidence
}
