package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	encbin "encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/vc-mcp/vc-mcp/embed"
)

// vectorCache wraps a model for benchmarks: a text embedded once (by any
// method, variant or earlier run) is never embedded again. Vectors are
// keyed by the SHA-256 of the text and kept in one append-only file per
// model (named by the model's weights file: path, size and modification
// time), so a benchmark re-run after a ranking change skips the minutes of
// CPU the encoder takes. The vectors are the model's own: the cache
// changes no figure, only the time.
type vectorCache struct {
	m    *embed.Model
	dim  int
	mu   sync.Mutex
	vecs map[[32]byte][]float32
	f    *os.File
	w    *bufio.Writer
	hits int
	miss int
}

// openVectorCache opens (or creates) the cache for model m under dir.
func openVectorCache(m *embed.Model, dir string) (*vectorCache, error) {
	weights := filepath.Join(m.Dir(), "model.vcmcp.bin")
	st, err := os.Stat(weights)
	if err != nil {
		return nil, fmt.Errorf("vector cache: %w", err)
	}
	abs, err := filepath.Abs(weights)
	if err != nil {
		return nil, fmt.Errorf("vector cache: %w", err)
	}
	id := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", abs, st.Size(), st.ModTime().UnixNano()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("vector cache: %w", err)
	}
	path := filepath.Join(dir, "vectors-"+hex.EncodeToString(id[:8])+".bin")
	c := &vectorCache{m: m, dim: m.Dim(), vecs: map[[32]byte][]float32{}}
	if err := c.load(path); err != nil {
		return nil, err
	}
	if c.f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, fmt.Errorf("vector cache: %w", err)
	}
	c.w = bufio.NewWriter(c.f)
	return c, nil
}

// load reads every whole record of path; a torn last record (a run killed
// mid-write) is ignored and truncated away.
func (c *vectorCache) load(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("vector cache: %w", err)
	}
	defer f.Close()
	rec := make([]byte, 32+4*c.dim)
	r := bufio.NewReader(f)
	var good int64
	for {
		if _, err := io.ReadFull(r, rec); err != nil {
			break
		}
		var k [32]byte
		copy(k[:], rec)
		v := make([]float32, c.dim)
		for i := range v {
			v[i] = math.Float32frombits(encbin.LittleEndian.Uint32(rec[32+4*i:]))
		}
		c.vecs[k] = v
		good += int64(len(rec))
	}
	if err := os.Truncate(path, good); err != nil {
		return fmt.Errorf("vector cache: %w", err)
	}
	return nil
}

// Embed returns cached vectors and embeds (then stores) the rest.
func (c *vectorCache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	keys := make([][32]byte, len(texts))
	var todo []string
	var at []int
	c.mu.Lock()
	for i, t := range texts {
		keys[i] = sha256.Sum256([]byte(t))
		if v, ok := c.vecs[keys[i]]; ok {
			out[i] = v
			c.hits++
			continue
		}
		todo, at = append(todo, t), append(at, i)
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return out, nil
	}
	vecs, err := c.m.Embed(ctx, todo)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(todo) {
		return nil, fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(todo))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := make([]byte, 32+4*c.dim)
	for j, i := range at {
		v := vecs[j]
		out[i] = v
		c.miss++
		if len(v) != c.dim {
			continue
		}
		if _, ok := c.vecs[keys[i]]; ok {
			continue
		}
		c.vecs[keys[i]] = v
		copy(rec, keys[i][:])
		for d, x := range v {
			encbin.LittleEndian.PutUint32(rec[32+4*d:], math.Float32bits(x))
		}
		if _, err := c.w.Write(rec); err != nil {
			return nil, fmt.Errorf("vector cache: %w", err)
		}
	}
	return out, nil
}

// Close flushes the cache file and reports its use on stderr.
func (c *vectorCache) Close(stderr io.Writer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(stderr, "vector cache %s: %d texts from the cache, %d embedded\n", c.f.Name(), c.hits, c.miss)
	return errors.Join(c.w.Flush(), c.f.Close())
}
