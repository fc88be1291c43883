package memory

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

// defaultMaxOpenConversations caps the conversations kept loaded, each with
// its master log open.
const defaultMaxOpenConversations = 256

// convEntry is one conversation in the Store's table. ready is closed once
// c or err is set; the loading goroutine alone sets them. refs, elem and
// the table itself are guarded by Store.mu.
type convEntry struct {
	id    string
	ready chan struct{}
	c     *conv
	err   error
	refs  int           // writing operations using it: not evicted while > 0
	elem  *list.Element // place in Store.lru, most recently used in front
}

// op is one call into the Store, from begin to its end.
type op struct {
	write  bool
	pinned map[*convEntry]bool // guarded by Store.mu
	// appends: the operation may append to the logs; with shared logs it
	// holds each conversation's lock in sessions (shared.go).
	appends  bool
	sessions map[string]SharedSession // guarded by Store.mu
	// rewrites: conversations whose logs the operation rewrote (forget,
	// redact): committed by replacing the shared logs. Guarded by Store.mu.
	rewrites map[string]bool
}

type opKey struct{}

// opKind says whether an operation may write a conversation's state. A
// writing operation pins every conversation it loads, so that no other
// copy of that conversation can be loaded (and written) while it runs.
type opKind int

const (
	opRead   opKind = iota
	opWrite         // writes derived state only
	opAppend        // may append to the logs (shared logs: takes their lock)
	// opAppendRO is opAppend for an operation a read-only store allows
	// (readonly.go): one that keeps its change on the snapshot for the
	// process's life (paging the working set: expand_topic,
	// collapse_topic) or changes nothing (a forget's dry run).
	opAppendRO
)

// beginOn begins an operation on the conversation a call names (its
// conversation_id, or the default): begin, then resolve. On error nothing
// is left to end.
func (s *Store) beginOn(ctx context.Context, kind opKind, conversationID string) (context.Context, func(), string, error) {
	ctx, end, err := s.begin(ctx, kind)
	if err != nil {
		return ctx, nil, "", err
	}
	id, err := s.resolve(conversationID)
	if err != nil {
		end()
		return ctx, nil, "", err
	}
	return ctx, end, id, nil
}

// begin starts an operation: it fails with ErrClosed once Close has begun,
// and Close waits for every operation begun before it. Call the returned
// end when the operation is over. Nested calls join the outer operation.
func (s *Store) begin(ctx context.Context, kind opKind) (context.Context, func(), error) {
	if _, ok := ctx.Value(opKey{}).(*op); ok {
		return ctx, func() {}, nil
	}
	if kind == opAppend {
		if err := s.refuseWrite(); err != nil {
			return ctx, nil, err
		}
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ctx, nil, ErrClosed
	}
	s.ops++
	s.mu.Unlock()
	o := &op{write: kind != opRead, appends: kind == opAppend || kind == opAppendRO}
	octx := context.WithValue(ctx, opKey{}, o)
	return octx, func() {
		if s.shared != nil {
			if err := s.commitShared(octx); err != nil {
				s.log.Error("sharing an operation's writes failed", "err", err)
			}
		}
		s.mu.Lock()
		for e := range o.pinned {
			e.refs--
		}
		s.ops--
		if s.ops == 0 {
			s.idle.Broadcast()
		}
		victims := s.evictable()
		s.mu.Unlock()
		s.unload(victims)
	}, nil
}

// conversation returns the loaded state of a conversation, loading it if
// needed. With create false, a conversation that has no log yet gives
// ErrNotFound. Store.mu is held only to look up the table: a conversation
// loads (bbolt read, log verification, replay) without it, and callers
// asking for one that is loading wait for that load alone.
func (s *Store) conversation(ctx context.Context, id string, create bool) (*conv, error) {
	c, err := s.conversationShared(ctx, id, create)
	if err != nil {
		// A load may write (a tail to replay, a repair): a full disk is
		// the user's to act on, whichever operation asked.
		return nil, s.storageError(err, "this call did nothing; what is stored is intact")
	}
	if err := checkOwner(ctx, c); err != nil { // owner.go
		return nil, err
	}
	return c, nil
}

func (s *Store) conversationShared(ctx context.Context, id string, create bool) (*conv, error) {
	if s.shared == nil {
		return s.conversationLocal(ctx, id, create)
	}
	o, _ := ctx.Value(opKey{}).(*op)
	if _, err := s.sharedBefore(ctx, o, id); err != nil {
		return nil, err
	}
	c, err := s.conversationLocal(ctx, id, create)
	if err != nil {
		return nil, err
	}
	// Loaded before the lines arrived (here or by another caller): replay them.
	// A writer of this process between its append and its commit makes the
	// files look ahead: the refresh then waits for its writer lock and
	// finds nothing to replay.
	c.mu.RLock()
	local, err := s.localHeads(id)
	if err != nil {
		c.mu.RUnlock()
		return nil, err
	}
	behind := local.Master != c.meta.LogSize || local.Decisions > c.meta.DecisionsSize
	unindexed := len(c.turns) > c.meta.IndexedThrough || c.meta.SummariesIndexed != c.meta.SummaryGen
	c.mu.RUnlock()
	if behind {
		if err := s.refresh(ctx, c); err != nil {
			return nil, err
		}
	}
	if behind || unindexed {
		s.indexNow(ctx, c)
	}
	return c, nil
}

func (s *Store) conversationLocal(ctx context.Context, id string, create bool) (*conv, error) {
	o, _ := ctx.Value(opKey{}).(*op)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	e, ok := s.convs[id]
	if ok {
		s.use(e, o)
		s.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err != nil {
			return nil, e.err
		}
		return e.c, nil
	}
	s.mu.Unlock()
	path := s.logPath(id)
	if !create {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: conversation %q has no stored messages yet", ErrNotFound, id)
		}
	}
	s.mu.Lock()
	if e, ok = s.convs[id]; ok { // another caller began loading it meanwhile
		s.mu.Unlock()
		return s.conversationLocal(ctx, id, create)
	}
	return s.loadEntry(o, id, func() (*conv, error) { return s.load(ctx, id, path) })
}

// loadEntry adds id's table entry (s.mu is held and released), runs load
// without the lock while other callers of id wait on the entry, and
// publishes what it gave: an error removes the entry again.
func (s *Store) loadEntry(o *op, id string, load func() (*conv, error)) (*conv, error) {
	e := &convEntry{id: id, ready: make(chan struct{})}
	e.elem = s.lru.PushFront(e)
	s.convs[id] = e
	s.use(e, o)
	s.mu.Unlock()

	c, err := load()
	s.mu.Lock()
	e.c, e.err = c, err
	if err != nil {
		delete(s.convs, id)
		s.lru.Remove(e.elem)
	} else {
		s.queueWarm(c)
	}
	close(e.ready)
	victims := s.evictable()
	s.mu.Unlock()
	s.unload(victims)
	return c, err
}

// use marks e most recently used and pins it for a writing operation.
// Store.mu is held.
func (s *Store) use(e *convEntry, o *op) {
	if e.err == nil && e.elem != nil {
		s.lru.MoveToFront(e.elem)
	}
	if o != nil && o.write && !o.pinned[e] {
		if o.pinned == nil {
			o.pinned = map[*convEntry]bool{}
		}
		o.pinned[e] = true
		e.refs++
	}
}

// evictable takes out of the table the least recently used loaded
// conversations beyond the cap that no writing operation holds. Store.mu
// is held; the caller unloads them after releasing it.
func (s *Store) evictable() []*conv {
	var out []*conv
	for el := s.lru.Back(); el != nil && len(s.convs) > s.opts.MaxOpenConversations; {
		e := el.Value.(*convEntry)
		prev := el.Prev()
		select {
		case <-e.ready:
			if e.refs == 0 && e.c != nil {
				s.lru.Remove(el)
				delete(s.convs, e.id)
				out = append(out, e.c)
			}
		default: // still loading
		}
		el = prev
	}
	return out
}

// unload saves evicted conversations' headers, where they changed, and
// closes their logs. A reader still holding one reads its log by opening it
// for each read.
func (s *Store) unload(convs []*conv) {
	for _, c := range convs {
		c.mu.RLock()
		meta := c.meta
		c.mu.RUnlock()
		if err := s.saveMeta(meta); err != nil {
			s.log.Warn("saving an unloaded conversation's state failed", "conversation", c.id, "err", err)
		}
		if err := c.log.Release(); err != nil {
			s.log.Warn("closing an unloaded conversation's log failed", "conversation", c.id, "err", err)
		}
		// Writers pin what they load, so no decision is being appended; the
		// next writer reopens the decisions log. Closing syncs pending tags:
		// the writers' lock is enough (readers do not use the log).
		c.wmu.Lock()
		if c.dlog != nil {
			if err := c.dlog.Close(); err != nil {
				s.log.Warn("closing an unloaded conversation's decisions log failed", "conversation", c.id, "err", err)
			}
			c.dlog = nil
		}
		c.wmu.Unlock()
	}
}

// saveMeta commits a conversation header unless bbolt holds it already
// (a read-only check spares a synced commit).
func (s *Store) saveMeta(m convMeta) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode conversation %s: %w", m.ID, err)
	}
	same := false
	if err := s.db.View(func(tx *bolt.Tx) error {
		same = bytes.Equal(tx.Bucket(bucketConvs).Get([]byte(m.ID)), data)
		return nil
	}); err != nil || same {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketConvs).Put([]byte(m.ID), data) })
}

// load reads a conversation from bbolt and its master log.
func (s *Store) load(ctx context.Context, id, path string) (*conv, error) {
	var c *conv
	var decodeErr error
	if err := s.db.View(func(tx *bolt.Tx) error {
		c, decodeErr = loadConv(tx, id)
		return decodeErr
	}); err != nil {
		if decodeErr != nil && !errors.Is(err, ErrStorage) {
			// A record of the conversation in vc.db does not decode: a
			// page overwritten on disk that bbolt read without noticing.
			s.log.Error("vc.db: a record of a conversation does not decode: taken as damaged", "conversation", id, "err", err)
			return nil, damagedDB(s.dataDir(), s.ro != nil, err)
		}
		return nil, err
	}
	l, err := masterlog.Open(path)
	if err != nil {
		return nil, err
	}
	c.log = l
	if c.meta.Created.IsZero() {
		c.meta.Created = s.now().UTC()
	}
	if err := s.replayFiles(ctx, c); err != nil {
		_ = l.Close()
		return nil, err
	}
	s.catchUpIndex(ctx, c)
	return c, nil
}

// replayFiles replays c's logs beyond its state: decisions the store has
// not applied yet (vc.db missing or behind the derived-decisions log) give
// the replayed turns their recorded tags, then the other decisions follow.
// With shared logs the cache files are read under their lock, so that a
// pull appending to them meanwhile cannot be half seen: master lines
// without the decisions that came with them would be tagged anew here, and
// a tail still being written taken for a torn one.
func (s *Store) replayFiles(ctx context.Context, c *conv) error {
	if s.shared != nil {
		mu := s.shared.fileMu(c.id)
		mu.Lock()
		defer mu.Unlock()
	}
	var err error
	if c.replay, err = s.loadReplay(c); err != nil {
		return err
	}
	defer func() { c.replay = nil }()
	if err := s.reconcileLog(ctx, c); err != nil {
		return err
	}
	return s.applyReplay(ctx, c)
}

// catchUpIndex indexes a small gap (a crash tail) now and leaves a large one
// (a new or rebuilt index) to the reconciler, so that loading is not delayed.
// Turns are indexed only contiguously from the watermark, so a gap before a
// replayed tail is never skipped.
func (s *Store) catchUpIndex(ctx context.Context, c *conv) {
	if gap := len(c.turns) - c.meta.IndexedThrough; gap <= 0 {
		return
	} else if gap > syncIndexTurns {
		s.kickReconciler()
		return
	}
	if err := s.indexTurns(ctx, c, c.meta.IndexedThrough+1, len(c.turns), heldBoth); err != nil {
		s.log.Warn("indexing replayed turns failed; the reconciler retries", "conversation", c.id, "err", err)
		s.kickReconciler()
		return
	}
	if err := s.indexSummaries(ctx, c); err != nil {
		s.log.Warn("indexing summaries failed; the reconciler retries", "conversation", c.id, "err", err)
		s.kickReconciler()
	}
}

// loadedConvs returns the conversations loaded now.
func (s *Store) loadedConvs() []*conv {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conv, 0, len(s.convs))
	for _, e := range s.convs {
		select {
		case <-e.ready:
			if e.c != nil {
				out = append(out, e.c)
			}
		default:
		}
	}
	return out
}

// warmStart lists and loads the n conversations written most recently,
// one after the other, in the background. Each load is a read operation, so Close
// waits for the one in flight; the next one then finds the store closing
// and the goroutine ends (Close waits for that too, warmDone).
func (s *Store) warmStart(n int) {
	s.warmDone = make(chan struct{})
	go func() {
		defer close(s.warmDone)
		// Listed here, not in Open: it decodes every conversation's header.
		ids, err := s.recentIDs(n)
		if err != nil {
			s.log.Warn("listing recent conversations to load ahead failed", "err", err)
			return
		}
		for _, id := range ids {
			ctx, end, err := s.begin(context.Background(), opRead)
			if err != nil {
				return // closing
			}
			// A load, not a read for a caller: no owner check.
			if _, err := s.conversationShared(ctx, id, false); err != nil && !errors.Is(err, ErrClosed) {
				s.log.Warn("loading a recent conversation ahead failed", "conversation", id, "err", err)
			}
			end()
		}
	}()
}

// recentIDs lists up to n conversation ids, the most recently written
// first.
func (s *Store) recentIDs(n int) ([]string, error) {
	type recent struct {
		id string
		at time.Time
	}
	var all []recent
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketConvs).ForEach(func(k, v []byte) error {
			var m struct {
				Updated time.Time `json:"updated"`
			}
			if json.Unmarshal(v, &m) == nil {
				all = append(all, recent{string(k), m.Updated})
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	slices.SortFunc(all, func(a, b recent) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	ids := make([]string, 0, min(n, len(all)))
	for _, r := range all[:min(n, len(all))] {
		ids = append(ids, r.id)
	}
	return ids, nil
}
