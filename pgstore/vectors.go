package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Vectors is an embedder that keeps every vector it computes in
// PostgreSQL, keyed by the model and the SHA-256 of the text
// (vc_vectors(model text, text_hash bytea, vec bytea: little-endian
// float32)), so that a second process embedding the same turns (every
// process sharing a memory embeds the turns it caches) reads them instead
// of computing them again. Vectors are derived data: when PostgreSQL fails,
// Embed computes them as if there were no cache.
type Vectors struct {
	inner memory.Embedder
	s     *Store
	log   *slog.Logger

	mu    sync.Mutex
	model string // from the probe vector, once the inner embedder works

	hits, computed atomic.Int64
}

// CacheVectors wraps inner with the store's vector table.
func (s *Store) CacheVectors(inner memory.Embedder, log *slog.Logger) *Vectors {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Vectors{inner: inner, s: s, log: log}
}

// Unwrap returns the embedder that computes the vectors.
func (v *Vectors) Unwrap() memory.Embedder { return v.inner }

// Ready forwards the inner embedder's readiness (memory.Readiness).
func (v *Vectors) Ready() (bool, string) {
	if r, ok := v.inner.(memory.Readiness); ok {
		return r.Ready()
	}
	return true, "ready"
}

// Counts returns how many vectors came from PostgreSQL and how many the
// inner embedder computed.
func (v *Vectors) Counts() (hits, computed int64) { return v.hits.Load(), v.computed.Load() }

// probe is embedded once to tell models (and versions) apart.
const probe = "vc-mcp vector cache: model probe sentence"

func (v *Vectors) modelID(ctx context.Context) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.model != "" {
		return v.model, nil
	}
	out, err := v.inner.Embed(ctx, []string{probe})
	if err != nil {
		return "", err
	}
	if len(out) != 1 || len(out[0]) == 0 {
		return "", fmt.Errorf("embedder gave %d vectors for 1 text", len(out))
	}
	h := sha256.New()
	if mi, ok := v.inner.(memory.ModelIdentifier); ok {
		h.Write([]byte(mi.ModelID()))
	}
	for _, f := range out[0] { // rounded: the same model on another CPU
		_ = binary.Write(h, binary.LittleEndian, int32(math.Round(float64(f)*1e4)))
	}
	v.model = fmt.Sprintf("d%d-%s", len(out[0]), hex.EncodeToString(h.Sum(nil))[:16])
	return v.model, nil
}

// Embed implements memory.Embedder.
func (v *Vectors) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	model, err := v.modelID(ctx)
	if err != nil {
		return nil, err // the inner embedder is not usable (yet)
	}
	out := make([][]float32, len(texts))
	hashes := make([][]byte, len(texts))
	for i, t := range texts {
		sum := sha256.Sum256([]byte(t))
		hashes[i] = sum[:]
	}
	found, err := v.lookup(ctx, model, hashes)
	if err != nil {
		v.log.Warn("reading vectors from PostgreSQL failed; computing them", "err", err)
		found = nil
	}
	var missing []int
	for i := range texts {
		if vec, ok := found[string(hashes[i])]; ok {
			out[i] = vec
			continue
		}
		missing = append(missing, i)
	}
	v.hits.Add(int64(len(texts) - len(missing)))
	if len(missing) == 0 {
		return out, nil
	}
	todo := make([]string, len(missing))
	for j, i := range missing {
		todo[j] = texts[i]
	}
	vecs, err := v.inner.Embed(ctx, todo)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(todo) {
		return nil, fmt.Errorf("embedder gave %d vectors for %d texts", len(vecs), len(todo))
	}
	v.computed.Add(int64(len(todo)))
	keys, blobs := make([][]byte, 0, len(todo)), make([][]byte, 0, len(todo))
	for j, i := range missing {
		out[i] = vecs[j]
		if len(vecs[j]) == 0 { // (a blank text)
			continue
		}
		keys, blobs = append(keys, hashes[i]), append(blobs, encodeVec(vecs[j]))
	}
	if len(keys) > 0 {
		if err := v.store(ctx, model, keys, blobs); err != nil {
			v.log.Warn("saving vectors to PostgreSQL failed", "err", err)
		}
	}
	return out, nil
}

func (v *Vectors) lookup(ctx context.Context, model string, hashes [][]byte) (map[string][]float32, error) {
	if err := v.s.ensure(ctx); err != nil {
		return nil, err
	}
	rows, err := v.s.pool.Query(ctx, `SELECT text_hash, vec FROM vc_vectors WHERE model = $1 AND text_hash = ANY($2)`, model, hashes)
	if err != nil {
		return nil, v.s.connErr(err)
	}
	defer rows.Close()
	out := map[string][]float32{}
	for rows.Next() {
		var h, b []byte
		if err := rows.Scan(&h, &b); err != nil {
			return nil, v.s.connErr(err)
		}
		if vec, ok := decodeVec(b); ok {
			out[string(h)] = vec
		}
	}
	if err := rows.Err(); err != nil {
		return nil, v.s.connErr(err)
	}
	return out, nil
}

func (v *Vectors) store(ctx context.Context, model string, keys, blobs [][]byte) error {
	_, err := v.s.pool.Exec(ctx, `INSERT INTO vc_vectors (model, text_hash, vec)
		SELECT $1, h, b FROM unnest($2::bytea[], $3::bytea[]) AS t(h, b) ON CONFLICT DO NOTHING`, model, keys, blobs)
	if err != nil {
		return v.s.connErr(err)
	}
	return nil
}

// ForgetVectors drops the vectors of texts, for every model
// (memory.VectorForgetter: forget and scan --redact call it).
func (v *Vectors) ForgetVectors(ctx context.Context, texts []string) error {
	if len(texts) == 0 {
		return nil
	}
	if err := v.s.ensure(ctx); err != nil {
		return err
	}
	hashes := make([][]byte, len(texts))
	for i, t := range texts {
		sum := sha256.Sum256([]byte(t))
		hashes[i] = sum[:]
	}
	if _, err := v.s.pool.Exec(ctx, `DELETE FROM vc_vectors WHERE text_hash = ANY($1)`, hashes); err != nil {
		return v.s.connErr(err)
	}
	return nil
}

func encodeVec(vec []float32) []byte {
	b := make([]byte, 4*len(vec))
	for i, f := range vec {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVec(b []byte) ([]float32, bool) {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil, false
	}
	vec := make([]float32, len(b)/4)
	for i := range vec {
		vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return vec, true
}
