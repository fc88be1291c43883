package embed

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
)

// DefaultModel is the Hugging Face repository of the default model.
const DefaultModel = "sentence-transformers/all-MiniLM-L6-v2"

// Options tune a Model; the zero value and nil mean defaults.
type Options struct {
	// Workers bounds the goroutines one forward pass uses (default
	// GOMAXPROCS).
	Workers int
	// CacheSize is the number of vectors kept in the content-hash LRU
	// (default 8192; negative disables the cache).
	CacheSize int
	// MaxBatchTokens bounds the tokens encoded in one forward pass
	// (default 4096); larger inputs are split into several passes.
	MaxBatchTokens int
	// ConvertedPath is where the converted weights are cached (default
	// DIR/model.vcmcp.bin; when DIR is read-only, the user cache dir).
	ConvertedPath string
	// ReadOnly converts in memory only and never writes a converted file.
	ReadOnly bool
	// Logger receives load progress at Debug and problems at Warn; nil
	// discards.
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Workers <= 0 {
		r.Workers = defaultWorkers()
	}
	if r.CacheSize == 0 {
		r.CacheSize = 8192
	}
	if r.MaxBatchTokens <= 0 {
		r.MaxBatchTokens = 4096
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return r
}

// Model is a loaded sentence encoder. It is safe for concurrent use.
type Model struct {
	tok   *Tokenizer
	enc   *encoder
	opts  Options
	cache *lru
	dir   string
}

// DefaultDir is the per-user directory of the default model:
// $VC_MODEL_DIR if set, else <user cache dir>/vc-mcp/models/all-MiniLM-L6-v2.
func DefaultDir() string {
	if d := os.Getenv("VC_MODEL_DIR"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "vc-mcp", "models", "all-MiniLM-L6-v2")
}

// Load reads a model from dir: config.json, vocab.txt, tokenizer_config.json
// and weights as model.vcmcp.bin, model.safetensors or pytorch_model.bin.
// A checkpoint is converted once and the result cached (written atomically);
// a stale or corrupt converted file is rebuilt from the checkpoint. Load
// never touches the network. Errors wrap ErrNoModel or ErrCorrupt.
func Load(ctx context.Context, dir string, opts *Options) (*Model, error) {
	o := opts.withDefaults()
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	tok, err := LoadTokenizer(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("embed: %s has no vocab.txt: %w", dir, ErrNoModel)
		}
		return nil, err
	}
	if tok.VocabSize() > cfg.VocabSize {
		return nil, fmt.Errorf("embed: vocab.txt has %d entries, config.json vocab_size %d: %w", tok.VocabSize(), cfg.VocabSize, ErrCorrupt)
	}
	if tok.maxTokens > cfg.MaxPositionEmbeddings {
		tok.maxTokens = cfg.MaxPositionEmbeddings
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ts, err := loadTensors(ctx, dir, o)
	if err != nil {
		return nil, err
	}
	ts, err = ts.check(cfg)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := &Model{tok: tok, enc: newEncoder(cfg, ts, o.Workers), opts: o, dir: dir}
	// The checkpoint's unpacked copies are garbage now: hand them back at
	// once rather than when the heap next doubles (the RSS budget counts).
	ts = nil
	debug.FreeOSMemory()
	if o.CacheSize > 0 {
		m.cache = newLRU(o.CacheSize)
	}
	return m, nil
}

func convertedPath(dir string, o Options) string {
	if o.ConvertedPath != "" {
		return o.ConvertedPath
	}
	return filepath.Join(dir, ConvertedFile)
}

// fallbackConvertedPath is used when the model directory is read-only.
func fallbackConvertedPath(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(base, "vc-mcp", "converted", fmt.Sprintf("%x.bin", sum[:8]))
}

func loadTensors(ctx context.Context, dir string, o Options) (tensors, error) {
	var src string
	for _, name := range []string{safetensorsFile, pytorchFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			src = filepath.Join(dir, name)
			break
		}
	}
	var stamp sourceStamp
	if src != "" {
		var err error
		if stamp, err = stampOf(src); err != nil {
			return nil, fmt.Errorf("embed: %w", err)
		}
	}
	candidates := []string{convertedPath(dir, o)}
	if o.ConvertedPath == "" {
		candidates = append(candidates, fallbackConvertedPath(dir))
	}
	var convErr error
	for _, p := range candidates {
		ts, got, err := readConverted(p)
		switch {
		case err == nil && (src == "" || got == stamp):
			o.Logger.Debug("embed: loaded converted weights", "path", p)
			return ts, nil
		case err == nil:
			o.Logger.Info("embed: converted weights are stale, converting again", "path", p)
		case errors.Is(err, fs.ErrNotExist):
		default:
			convErr = err
			o.Logger.Warn("embed: converted weights unreadable", "path", p, "err", err)
		}
	}
	if src == "" {
		if convErr != nil {
			return nil, convErr
		}
		return nil, fmt.Errorf("embed: %s has no weights (%s, %s or %s): %w", dir, ConvertedFile, safetensorsFile, pytorchFile, ErrNoModel)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.Logger.Info("embed: converting weights", "source", src)
	var ts tensors
	var err error
	if strings.HasSuffix(src, ".safetensors") {
		ts, err = readSafetensors(src)
	} else {
		ts, err = readPytorch(src)
	}
	if err != nil {
		return nil, err
	}
	if o.ReadOnly {
		return ts, nil
	}
	for _, p := range candidates {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			o.Logger.Warn("embed: cannot cache converted weights", "path", p, "err", err)
			continue
		}
		if err := writeConverted(p, ts, stamp); err != nil {
			o.Logger.Warn("embed: cannot cache converted weights", "path", p, "err", err)
			continue
		}
		break
	}
	return ts, nil
}

// Dim is the length of the vectors.
func (m *Model) Dim() int { return m.enc.cfg.HiddenSize }

// Dir is the directory the model was loaded from.
func (m *Model) Dir() string { return m.dir }

// Tokenizer is the model's tokenizer.
func (m *Model) Tokenizer() *Tokenizer { return m.tok }

// Embed returns one L2-normalised, mean-pooled vector per text. Texts that
// are empty or only whitespace get a nil vector and cost nothing; repeated
// texts are served from the cache. Work stops between passes and layers
// when ctx is done.
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	type job struct {
		key  [32]byte
		ids  []int
		dest []int
	}
	pending := make(map[[32]byte]*job)
	var jobs []*job
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			continue
		}
		key := sha256.Sum256([]byte(t))
		if m.cache != nil {
			if v, ok := m.cache.get(key); ok {
				out[i] = slices.Clone(v)
				continue
			}
		}
		if j, ok := pending[key]; ok {
			j.dest = append(j.dest, i)
			continue
		}
		j := &job{key: key, ids: m.tok.Encode(t), dest: []int{i}}
		pending[key] = j
		jobs = append(jobs, j)
	}
	// Similar lengths together keep the attention work per pass even.
	slices.SortStableFunc(jobs, func(a, b *job) int { return len(a.ids) - len(b.ids) })
	for start := 0; start < len(jobs); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end, tokens := start, 0
		for end < len(jobs) && (end == start || tokens+len(jobs[end].ids) <= m.opts.MaxBatchTokens) {
			tokens += len(jobs[end].ids)
			end++
		}
		seqs := make([][]int, end-start)
		for k := range seqs {
			seqs[k] = jobs[start+k].ids
		}
		vecs, err := m.encode(ctx, seqs)
		if err != nil {
			return nil, err
		}
		for k, v := range vecs {
			j := jobs[start+k]
			if m.cache != nil {
				m.cache.put(j.key, v)
			}
			for n, i := range j.dest {
				if n == 0 {
					out[i] = v
				} else {
					out[i] = slices.Clone(v)
				}
			}
		}
		start = end
	}
	return out, nil
}

// encode runs one batch. Many sequences are dealt round-robin (they are
// sorted by length, so the shares are even) to one single-threaded pass per
// worker, which keeps every core busy without a barrier after each matrix
// product; a few sequences share one pass whose products are split across
// the workers instead, which is what makes a single query fast.
func (m *Model) encode(ctx context.Context, seqs [][]int) ([][]float32, error) {
	w := m.enc.workers
	if w <= 1 || len(seqs) < 2*w {
		return m.enc.forward(ctx, seqs)
	}
	single := *m.enc
	single.workers = 1
	out := make([][]float32, len(seqs))
	errs := make([]error, w)
	var wg sync.WaitGroup
	for k := 0; k < w; k++ {
		var idx []int
		var part [][]int
		for i := k; i < len(seqs); i += w {
			idx = append(idx, i)
			part = append(part, seqs[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			vecs, err := single.forward(ctx, part)
			if err != nil {
				errs[k] = err
				return
			}
			for j, i := range idx {
				out[i] = vecs[j]
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// EmbedIDs encodes already tokenized sequences (each [CLS] ... [SEP]),
// bypassing the cache; for parity checks against other implementations.
func (m *Model) EmbedIDs(ctx context.Context, seqs [][]int) ([][]float32, error) {
	return m.encode(ctx, seqs)
}

// lru is a fixed-size cache of vectors by content hash.
type lru struct {
	mu    sync.Mutex
	max   int
	ll    *list.List
	items map[[32]byte]*list.Element
}

type lruEntry struct {
	key [32]byte
	vec []float32
}

func newLRU(n int) *lru {
	return &lru{max: n, ll: list.New(), items: make(map[[32]byte]*list.Element)}
}

func (c *lru) get(k [32]byte) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(e)
	return e.Value.(*lruEntry).vec, true
}

// put stores a private copy of v.
func (c *lru) put(k [32]byte, v []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return
	}
	c.items[k] = c.ll.PushFront(&lruEntry{key: k, vec: slices.Clone(v)})
	for c.ll.Len() > c.max {
		e := c.ll.Back()
		c.ll.Remove(e)
		delete(c.items, e.Value.(*lruEntry).key)
	}
}

func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
