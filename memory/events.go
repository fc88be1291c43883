package memory

import (
	"context"
	"slices"
	"sync"
	"time"
)

// ChangeKind says what changed memory.
type ChangeKind string

const (
	// ChangeStored: turns were appended to a conversation (compact_context).
	ChangeStored ChangeKind = "stored"
	// ChangeCompacted: old turns became segment summaries and their tags'
	// summaries were rebuilt.
	ChangeCompacted ChangeKind = "compacted"
	// ChangeSplit: an over-broad tag was split; some turns gained narrower tags.
	ChangeSplit ChangeKind = "split"
	// ChangeForgotten: turns were forgotten (Forget, tag TTL) or redacted
	// (Scan); TurnIDs names them, Tags the topics whose summaries were
	// remade, GoneTags the topics nothing is left of.
	ChangeForgotten ChangeKind = "forgotten"
)

// Change describes one committed change to a conversation's memory. Every
// field names what was already committed when the change was published.
type Change struct {
	Kind           ChangeKind
	ConversationID string
	// TurnIDs are the turns stored, re-tagged or removed.
	TurnIDs []string
	// Tags are the tags whose content or counts changed (including the new
	// and removed ones).
	Tags []string
	// NewTags and GoneTags are tags that appeared in, or vanished from, the
	// conversation's vocabulary.
	NewTags, GoneTags []string
	// NewConversation: the conversation got its first turns.
	// GoneConversation: it was removed.
	NewConversation, GoneConversation bool
	At                                time.Time
}

// maxPendingChanges bounds what a watcher that does not keep up holds:
// past it, its pending changes are merged per conversation. A variable
// for tests.
var maxPendingChanges = 256

// maxMergedTurnIDs bounds the turn ids a merged change keeps (the most
// recent ones). A variable for tests.
var maxMergedTurnIDs = 256

// watchers fans committed changes out to Watch channels without ever
// blocking a writer: each watcher has its own queue and goroutine.
// Its zero value is ready to use.
type watchers struct {
	mu     sync.Mutex
	list   map[*watcher]struct{}
	done   chan struct{} // closed when the store closes; made on first use
	closed bool
}

type watcher struct {
	mu      sync.Mutex
	pending []Change
	wake    chan struct{} // capacity 1
}

// Watch returns a channel that receives every change committed from now on,
// until ctx ends or the store closes (then it is closed). Publishing never
// waits for a watcher: a watcher that falls behind gets its backlog merged
// per conversation (Kind is then the latest change's, the other fields are
// unions) rather than lost or blocking ingest.
func (s *Store) Watch(ctx context.Context) <-chan Change {
	out := make(chan Change)
	w := &watcher{wake: make(chan struct{}, 1)}
	s.watch.mu.Lock()
	if s.watch.closed || s.closed.Load() {
		s.watch.mu.Unlock()
		close(out)
		return out
	}
	if s.watch.list == nil {
		s.watch.list = map[*watcher]struct{}{}
	}
	if s.watch.done == nil {
		s.watch.done = make(chan struct{})
	}
	s.watch.list[w] = struct{}{}
	done := s.watch.done
	s.watch.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			s.watch.mu.Lock()
			delete(s.watch.list, w)
			s.watch.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-w.wake:
			}
			w.mu.Lock()
			batch := w.pending
			w.pending = nil
			w.mu.Unlock()
			for _, c := range batch {
				select {
				case out <- c:
				case <-ctx.Done():
					return
				case <-done:
					return
				}
			}
		}
	}()
	return out
}

// closeWatchers ends every Watch channel (Close calls it).
func (s *Store) closeWatchers() {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if !s.watch.closed {
		s.watch.closed = true
		if s.watch.done != nil {
			close(s.watch.done)
		}
	}
}

// publish hands a committed change to every watcher. It never blocks on a
// watcher; it may be called with a conversation's lock held.
func (s *Store) publish(c Change) {
	if c.At.IsZero() {
		c.At = s.now().UTC()
	}
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	for w := range s.watch.list {
		w.mu.Lock()
		w.pending = append(w.pending, c)
		if len(w.pending) > maxPendingChanges {
			w.pending = mergeChanges(w.pending)
		}
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// mergeChanges folds a backlog into one change per conversation, in the
// order each conversation first appears.
func mergeChanges(cs []Change) []Change {
	var out []Change
	at := map[string]int{}
	for _, c := range cs {
		i, ok := at[c.ConversationID]
		if !ok {
			at[c.ConversationID] = len(out)
			out = append(out, c)
			continue
		}
		m := &out[i]
		m.Kind, m.At = c.Kind, c.At
		m.TurnIDs = union(m.TurnIDs, c.TurnIDs)
		if n := len(m.TurnIDs); n > maxMergedTurnIDs {
			m.TurnIDs = m.TurnIDs[n-maxMergedTurnIDs:]
		}
		m.Tags = union(m.Tags, c.Tags)
		m.NewTags = union(m.NewTags, c.NewTags)
		m.GoneTags = union(m.GoneTags, c.GoneTags)
		m.NewConversation = m.NewConversation || c.NewConversation
		m.GoneConversation = c.GoneConversation
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// notifyStored publishes the turns first..last of c just committed by an
// ingest. c's writer lock (or c.mu) is held.
func (s *Store) notifyStored(c *conv, first int) {
	ch := Change{Kind: ChangeStored, ConversationID: c.id, NewConversation: first == 1}
	inBatch := map[string]int{}
	for seq := first; seq <= len(c.turns); seq++ {
		ch.TurnIDs = append(ch.TurnIDs, turnID(seq))
		for _, tag := range c.turns[seq-1].Tags {
			if inBatch[tag] == 0 {
				ch.Tags = append(ch.Tags, tag)
			}
			inBatch[tag]++
		}
	}
	if len(ch.TurnIDs) == 0 {
		return
	}
	for _, tag := range ch.Tags {
		if c.vocab[tag] == inBatch[tag] { // every turn carrying it is new
			ch.NewTags = append(ch.NewTags, tag)
		}
	}
	s.publish(ch)
}

// notifyCompacted publishes a committed compaction: the tags of the new
// segments and of the rebuilt tag summaries. c.mu is held.
func (s *Store) notifyCompacted(c *conv, fresh []*segmentRec, rollups []*tagSummaryRec) {
	ch := Change{Kind: ChangeCompacted, ConversationID: c.id}
	for _, sg := range fresh {
		ch.Tags = union(ch.Tags, sg.Tags)
		for seq := sg.First; seq <= sg.Last; seq++ {
			ch.TurnIDs = append(ch.TurnIDs, turnID(seq))
		}
	}
	for _, r := range rollups {
		ch.Tags = union(ch.Tags, []string{r.Tag})
	}
	if len(fresh) == 0 && len(rollups) == 0 {
		return
	}
	s.publish(ch)
}

// notifySplit publishes a committed tag split before it is applied in
// memory: the parent tag, the subtags and the turns that gain them (seq ->
// the turn's new tag list). c.mu is held.
func (s *Store) notifySplit(c *conv, parent string, changed map[int][]string) {
	if len(changed) == 0 {
		return
	}
	ch := Change{Kind: ChangeSplit, ConversationID: c.id, Tags: []string{parent}}
	seqs := make([]int, 0, len(changed))
	for seq := range changed {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		ch.TurnIDs = append(ch.TurnIDs, turnID(seq))
		for _, tag := range changed[seq] {
			if slices.Contains(c.turns[seq-1].Tags, tag) || slices.Contains(ch.Tags, tag) {
				continue
			}
			ch.Tags = append(ch.Tags, tag)
			if c.vocab[tag] == 0 {
				ch.NewTags = append(ch.NewTags, tag)
			}
		}
	}
	s.publish(ch)
}
