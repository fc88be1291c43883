package markdown

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Watched is what a mirror follows: memory.Store satisfies it.
type Watched interface {
	Source
	Watch(ctx context.Context) <-chan memory.Change
}

// DefaultDebounce is how long a mirror gathers changes before rewriting.
const DefaultDebounce = 500 * time.Millisecond

// Mirror keeps a Markdown view of memory up to date under Dir: it writes
// every conversation when it starts, then rewrites a conversation's tree
// (whole and atomically, see WriteConversation) at most Debounce after it
// changes, and removes the tree of a conversation that is gone. The tree is
// never read back: the master logs stay the source of truth.
type Mirror struct {
	Src      Watched
	Dir      string
	Debounce time.Duration // default DefaultDebounce
	Logger   *slog.Logger  // default slog.Default()
}

// Run mirrors until ctx ends or the store closes. Changes still pending
// when ctx ends are written before it returns (the store must stay open
// until then). Failures to write are logged and retried on the next change;
// Run itself only fails when the first full write does.
func (m *Mirror) Run(ctx context.Context) error {
	log := m.Logger
	if log == nil {
		log = slog.Default()
	}
	wait := m.Debounce
	if wait <= 0 {
		wait = DefaultDebounce
	}
	ch := m.Src.Watch(ctx) // before the full write: no change falls between
	if err := m.syncAll(ctx, log); err != nil {
		return err
	}
	dirty := map[string]bool{}
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			m.flush(context.WithoutCancel(ctx), dirty, log)
			return nil
		case c, ok := <-ch:
			if !ok { // the store closed
				return nil
			}
			dirty[c.ConversationID] = true
			if fire == nil {
				timer = time.NewTimer(wait)
				fire = timer.C
			}
		case <-fire:
			fire, timer = nil, nil
			m.flush(ctx, dirty, log)
			dirty = map[string]bool{}
		}
	}
}

// syncAll writes every conversation and the top-level index, and removes
// the trees of conversations that no longer exist.
func (m *Mirror) syncAll(ctx context.Context, log *slog.Logger) error {
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return err
	}
	infos, err := m.Src.Conversations(ctx)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, in := range infos {
		keep[SafeName(in.ID)] = true
		if err := m.write(ctx, in.ID); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || keep[name] || !ours(filepath.Join(m.Dir, name)) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(m.Dir, name)); err != nil {
			return err
		}
		log.Info("markdown mirror: removed a conversation's tree", "dir", name)
	}
	return WriteRootIndex(m.Dir, infos)
}

func (m *Mirror) write(ctx context.Context, id string) error {
	v, err := m.Src.View(ctx, id)
	if errors.Is(err, memory.ErrNotFound) {
		return RemoveConversation(m.Dir, id)
	}
	if err != nil {
		return err
	}
	_, err = WriteConversation(m.Dir, v)
	return err
}

// Refresh rewrites the pages of the conversations ids and the top-level
// index once, for a process that changed them without running the mirror
// (a maintenance command: forget, scan --redact), so that no page keeps
// what was forgotten or redacted until the next server starts. Failures
// are logged, as Run logs them.
func (m *Mirror) Refresh(ctx context.Context, ids ...string) {
	log := m.Logger
	if log == nil {
		log = slog.Default()
	}
	dirty := make(map[string]bool, len(ids))
	for _, id := range ids {
		dirty[id] = true
	}
	m.flush(ctx, dirty, log)
}

// flush rewrites the dirty conversations and the top-level index.
func (m *Mirror) flush(ctx context.Context, dirty map[string]bool, log *slog.Logger) {
	if len(dirty) == 0 {
		return
	}
	ids := make([]string, 0, len(dirty))
	for id := range dirty {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := m.write(ctx, id); err != nil {
			log.Warn("markdown mirror: writing a conversation failed; the next change retries", "conversation", id, "err", err)
		}
	}
	infos, err := m.Src.Conversations(ctx)
	if err == nil {
		err = WriteRootIndex(m.Dir, infos)
	}
	if err != nil {
		log.Warn("markdown mirror: writing the index failed", "err", err)
	}
}
