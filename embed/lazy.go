package embed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Lazy loads a Model in the background so that callers never wait for it:
// until it is ready (or when it cannot be loaded) Embed returns ErrNotReady
// and Ready says why. It is safe for concurrent use.
type Lazy struct {
	dir  string
	opts *Options

	once sync.Once
	done chan struct{}

	mu     sync.Mutex
	model  *Model
	reason string
}

// NewLazy prepares a background load of the model in dir; nothing happens
// until Start.
func NewLazy(dir string, opts *Options) *Lazy {
	return &Lazy{dir: dir, opts: opts, done: make(chan struct{}), reason: "not started"}
}

// Start begins loading in a goroutine that ends when the load ends or ctx
// is done. Calls after the first do nothing.
func (l *Lazy) Start(ctx context.Context) {
	l.once.Do(func() {
		l.set(nil, "loading")
		go func() {
			defer close(l.done)
			m, err := Load(ctx, l.dir, l.opts)
			if err != nil {
				l.set(nil, reasonFor(l.dir, err))
				return
			}
			l.set(m, "")
		}()
	})
}

func (l *Lazy) set(m *Model, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.model, l.reason = m, reason
}

// reasonFor turns a load error into the status a user reads.
func reasonFor(dir string, err error) string {
	switch {
	case errors.Is(err, ErrNoModel):
		return fmt.Sprintf("no model at %s (run `vc-mcp model pull`)", dir)
	case errors.Is(err, ErrCorrupt):
		msg := strings.TrimSuffix(strings.TrimPrefix(err.Error(), "embed: "), ": "+ErrCorrupt.Error())
		return fmt.Sprintf("model corrupt: %s (run `vc-mcp model pull` again)", msg)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "loading cancelled"
	default:
		return fmt.Sprintf("model failed to load: %v", err)
	}
}

// Ready reports whether the model is loaded, and if not, why.
func (l *Lazy) Ready() (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.model != nil {
		return true, "ready"
	}
	return false, l.reason
}

// Wait blocks until the load has finished (successfully or not) or ctx is
// done, and returns the model or the reason it is absent.
func (l *Lazy) Wait(ctx context.Context) (*Model, error) {
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return l.Model()
}

// Model returns the loaded model, or an error wrapping ErrNotReady.
func (l *Lazy) Model() (*Model, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.model == nil {
		return nil, fmt.Errorf("embed: %s: %w", l.reason, ErrNotReady)
	}
	return l.model, nil
}

// Embed embeds with the loaded model, or fails with ErrNotReady at once.
func (l *Lazy) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	m, err := l.Model()
	if err != nil {
		return nil, err
	}
	return m.Embed(ctx, texts)
}

// Dim is the model's vector length, or 0 while it is not ready.
func (l *Lazy) Dim() int {
	m, err := l.Model()
	if err != nil {
		return 0
	}
	return m.Dim()
}
