package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vc-mcp/vc-mcp/index"
	bolt "go.etcd.io/bbolt"
)

// turnDoc renders stored turn seq as an index document, reading its text
// back from the master log. It returns false for an empty turn.
func (s *Store) turnDoc(c *conv, seq int) (index.Doc, bool, error) {
	t := c.turn(seq)
	if t == nil || t.Empty {
		return index.Doc{}, false, nil
	}
	rec, err := c.log.Read(t.Start, t.End)
	if err != nil {
		return index.Doc{}, false, err
	}
	return index.Doc{
		ID: turnDocID(c.id, seq), Conversation: c.id, Kind: "turn", Text: rec.Content, Speaker: t.Name,
	}, true, nil
}

// indexSeqs (re-)indexes the given turns without moving the watermark.
// c.mu is held.
func (s *Store) indexSeqs(ctx context.Context, c *conv, seqs []int) error {
	docs := make([]index.Doc, 0, len(seqs))
	for _, seq := range seqs {
		d, ok, err := s.turnDoc(c, seq)
		if err != nil {
			return err
		}
		if ok {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil
	}
	if err := s.ix.Add(ctx, docs); err != nil {
		return fmt.Errorf("index %d turns of %s: %w", len(docs), c.id, err)
	}
	return nil
}

// indexSummaries brings the summaries' watermark up to date. Summaries
// are not in the full-text index (both searches, recall's lexical signal
// and find_quote, look for turns only; an index that held them, schema
// vc-mcp-index-1, is rebuilt without them), so there is nothing to write.
// c.mu is held for writing.
func (s *Store) indexSummaries(ctx context.Context, c *conv) error {
	c.meta.SummariesIndexed = c.meta.SummaryGen
	return nil
}

// The reconciler. Every conversation keeps watermarks of what its derived
// stores hold (convMeta.IndexedThrough for turns in the full-text index,
// SummariesIndexed for its summaries; vectors have their own loop,
// embedLoop). Writes advance them inline when they can. Whatever they
// cannot (an index write failed or was cancelled after the bbolt commit, a
// failed background flush dropped accepted documents, the index was
// deleted or not closed cleanly, a large replay at Open) is left behind the
// watermark for one goroutine per store to catch up, in chunks, retrying
// with backoff; Open never waits for it. Reads over a conversation that is
// behind say so (RecallResult.CatchingUp, FindQuoteResult.CatchingUp).

// syncIndexTurns is the largest gap indexed during Open; larger ones are
// left to the reconciler so that a start after a crash is not delayed.
var syncIndexTurns = 1000 // a variable for tests

// reconcileChunk is how many turns the reconciler indexes per lock hold.
const reconcileChunk = 1000

type reconciler struct {
	kick chan struct{}
	done chan struct{}
	stop context.CancelFunc
	// wait is closed and replaced whenever a pass finishes (WaitIndexed).
	mu   sync.Mutex
	wait chan struct{}
}

// startReconciler starts the store's reconciler goroutine; Close ends it.
func (s *Store) startReconciler() {
	ctx, cancel := context.WithCancel(context.Background())
	s.rec.mu.Lock()
	s.rec.kick, s.rec.done, s.rec.stop = make(chan struct{}, 1), make(chan struct{}), cancel
	s.rec.wait = make(chan struct{})
	s.rec.mu.Unlock()
	go s.reconcileLoop(ctx)
	s.kickReconciler()
}

// stopReconciler ends the reconciler and waits for it.
func (s *Store) stopReconciler() {
	if s.rec.stop != nil {
		s.rec.stop()
		<-s.rec.done
	}
}

// kickReconciler wakes the reconciler; safe before it starts (a no-op).
func (s *Store) kickReconciler() {
	s.rec.mu.Lock()
	k := s.rec.kick
	s.rec.mu.Unlock()
	if k == nil {
		return
	}
	select {
	case k <- struct{}{}:
	default:
	}
}

func (s *Store) reconcileLoop(ctx context.Context) {
	defer close(s.rec.done)
	const minBackoff, maxBackoff = 100 * time.Millisecond, 10 * time.Second
	backoff := minBackoff
	if hold := s.opts.holdReconciler; hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return
		}
	}
	for {
		var retry <-chan time.Time
		if err := s.reconcile(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("catching up the derived stores failed; retrying", "in", backoff, "err", err)
			retry = time.After(backoff)
			backoff = min(2*backoff, maxBackoff)
		} else {
			backoff = minBackoff
		}
		s.rec.mu.Lock()
		close(s.rec.wait)
		s.rec.wait = make(chan struct{})
		s.rec.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-s.rec.kick:
		case <-retry:
		}
	}
}

// behind reports whether a conversation's index lags its stored state.
func (m *convMeta) behind() bool {
	return m.IndexedThrough < m.Turns || m.SummariesIndexed != m.SummaryGen
}

// reconcile runs one pass: documents a failed write dropped are put back
// behind their watermarks, then every conversation behind is caught up.
func (s *Store) reconcile(ctx context.Context) error {
	s.takeLost()
	ids, err := s.conversationIDs()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !s.convBehind(id) {
			continue
		}
		if err := s.catchUpConversation(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// catchUpConversation catches one conversation's index up, as a writing
// operation: the conversation stays loaded (pinned) while its watermarks
// move, and Close waits for it.
func (s *Store) catchUpConversation(ctx context.Context, id string) error {
	ctx, end, err := s.begin(ctx, opWrite)
	if err != nil {
		return err
	}
	defer end()
	c, err := s.conversation(ctx, id, false)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	for {
		more, err := s.catchUp(ctx, c)
		if err != nil || !more {
			return err
		}
	}
}

// loaded returns a conversation's state if it is loaded now, else nil.
func (s *Store) loaded(id string) *conv {
	s.mu.Lock()
	e := s.convs[id]
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	select {
	case <-e.ready:
		return e.c
	default:
		return nil
	}
}

// convBehind reads a conversation's watermarks, from memory when loaded.
func (s *Store) convBehind(id string) bool {
	if c := s.loaded(id); c != nil {
		c.mu.RLock()
		defer c.mu.RUnlock()
		m := c.meta
		m.Turns = len(c.turns)
		return m.behind()
	}
	var m convMeta
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketConvs).Get([]byte(id)); v != nil {
			return json.Unmarshal(v, &m)
		}
		return nil
	})
	return err == nil && m.behind()
}

// catchUp indexes the next chunk of a conversation's turns, or its
// summaries, and reports whether more remains.
// It holds the writer lock across the index write, so recalls go on
// meanwhile (and say they are catching up).
func (s *Store) catchUp(ctx context.Context, c *conv) (bool, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if from := c.meta.IndexedThrough + 1; from <= len(c.turns) {
		to := min(len(c.turns), from+reconcileChunk-1)
		if err := s.indexTurns(ctx, c, from, to, heldWriter); err != nil {
			return false, err
		}
		return to < len(c.turns), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return false, s.indexSummaries(ctx, c)
}

// takeLost puts the documents failed index writes dropped back behind
// their conversations' watermarks.
func (s *Store) takeLost() {
	ix, ok := s.ix.(interface{ TakeLost() []string })
	if !ok {
		return
	}
	for _, id := range ix.TakeLost() {
		convID, rest, ok := strings.Cut(id, "/")
		if !ok {
			continue
		}
		s.lowerWatermark(convID, rest)
	}
}

// lowerWatermark puts one lost document of a conversation back behind its
// watermark, loading the conversation (pinned, as a writing operation) if
// needed: its stored watermark is then the one lowered.
func (s *Store) lowerWatermark(convID, doc string) {
	ctx, end, err := s.begin(context.Background(), opWrite)
	if err != nil {
		return
	}
	defer end()
	c, err := s.conversation(ctx, convID, false)
	if err != nil {
		return
	}
	c.lock()
	defer c.unlock()
	if seq, err := strconv.Atoi(strings.TrimPrefix(doc, "t")); err == nil && strings.HasPrefix(doc, "t") && !strings.HasPrefix(doc, "tag/") {
		c.meta.IndexedThrough = min(c.meta.IndexedThrough, seq-1)
	} else {
		c.meta.SummariesIndexed = -1
	}
}

// WaitIndexed waits until every conversation's turns and summaries are in
// the full-text index (the reconciler has caught up), or ctx ends.
func (s *Store) WaitIndexed(ctx context.Context) error {
	for {
		s.rec.mu.Lock()
		wait := s.rec.wait
		s.rec.mu.Unlock()
		s.takeLost()
		ids, err := s.conversationIDs()
		if err != nil {
			return err
		}
		behind := false
		for _, id := range ids {
			if s.convBehind(id) {
				behind = true
				break
			}
		}
		if !behind {
			return nil
		}
		if wait == nil {
			return errors.New("wait indexed: the store has no reconciler (closed?)")
		}
		s.kickReconciler()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait:
		}
	}
}

// catchingUp reports whether a read over convs may miss turns or summaries
// that are stored but not yet searchable, and the last turn searchable in
// a single conversation. The conversations' locks are held.
func catchingUp(convs []*conv) (bool, string) {
	for _, c := range convs {
		m := c.meta
		m.Turns = len(c.turns)
		if m.behind() {
			through := ""
			if len(convs) == 1 && m.IndexedThrough > 0 {
				through = turnID(m.IndexedThrough)
			}
			return true, through
		}
	}
	return false, ""
}

// catchingUpNote is the line a read's text carries while catching up.
func catchingUpNote(through string) string {
	if through == "" {
		return "(note: the search index is catching up after a restart or a failed write; some stored turns may be missing from these results)"
	}
	return "(note: the search index is catching up; turns after " + through + " may be missing from these results)"
}
