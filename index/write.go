package index

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
)

// Writes are buffered. Each Bleve batch becomes a segment with a large
// fixed cost (an FST build and later merges), so one-document batches
// spend most of their time on overhead. Add and Delete therefore collect
// changes in ix.pending, which is written to Bleve when it holds BatchSize
// changes, FlushDelay after the first change, and before every read
// (Search, Count) and Close. Readers thus always see every completed Add.

// Add indexes docs, replacing any document with the same ID. Docs are
// visible to every Search and Count that starts after Add returns, and on
// disk after Close. If Add fails part way, a prefix of docs may be applied.
func (ix *Index) Add(ctx context.Context, docs []Doc) error {
	for i, d := range docs {
		if d.ID == "" {
			return fmt.Errorf("index: add: doc %d: empty id: %w", i, ErrInvalidDoc)
		}
	}
	return ix.write(ctx, "add", len(docs), func(b *bleve.Batch, i int) error {
		return b.Index(docs[i].ID, bleveDoc(docs[i]))
	}, func(i int) string { return docs[i].ID })
}

// Delete removes the documents with the given IDs; unknown IDs are ignored.
func (ix *Index) Delete(ctx context.Context, ids []string) error {
	return ix.write(ctx, "delete", len(ids), func(b *bleve.Batch, i int) error {
		b.Delete(ids[i])
		return nil
	}, nil)
}

// write puts n changes into the buffer with put, writing the buffer out
// whenever it is full, and schedules a flush for the rest.
func (ix *Index) write(ctx context.Context, op string, n int, put func(*bleve.Batch, int) error, id func(int) string) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return fmt.Errorf("index: %s: %w", op, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("index: %s: %w", op, err)
	}
	lost := false
	defer func() {
		if lost && ix.onLost != nil {
			ix.onLost()
		}
	}()
	ix.pendMu.Lock()
	defer ix.pendMu.Unlock()
	for i := range n {
		if ix.pending == nil {
			ix.pending = ix.bi.NewBatch()
		}
		if err := put(ix.pending, i); err != nil {
			return fmt.Errorf("index: %s: item %d: %w", op, i, err)
		}
		if id != nil {
			ix.pendIDs = append(ix.pendIDs, id(i))
		}
		if ix.pending.Size() >= ix.batchSize {
			if err := ix.flushLocked(); err != nil {
				lost = true
				return fmt.Errorf("index: %s: %w", op, err)
			}
			if err := ctx.Err(); err != nil && i < n-1 {
				return fmt.Errorf("index: %s: %w", op, err)
			}
		}
	}
	switch {
	case ix.pending == nil:
	case ix.flushDelay < 0:
		if err := ix.flushLocked(); err != nil {
			lost = true
			return fmt.Errorf("index: %s: %w", op, err)
		}
	case ix.timer == nil:
		ix.timer = time.AfterFunc(ix.flushDelay, ix.backgroundFlush)
	}
	return nil
}

// backgroundFlush runs on the timer's goroutine.
func (ix *Index) backgroundFlush() {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return // Close flushed already
	}
	ix.pendMu.Lock()
	err := ix.flushLocked()
	ix.pendMu.Unlock()
	if err != nil {
		ix.log.Error("index write failed", "path", ix.path, "err", err)
		if ix.onLost != nil {
			ix.onLost()
		}
	}
}

// flushLocked writes the buffer to Bleve. The caller holds pendMu and
// ix.mu (either way). A failure loses the buffered changes, which may be
// other callers' that were already acknowledged: their ids go to the lost
// list (TakeLost) for the caller's log to add again. Later writes are not
// affected.
func (ix *Index) flushLocked() error {
	if ix.timer != nil {
		ix.timer.Stop()
		ix.timer = nil
	}
	b, ids := ix.pending, ix.pendIDs
	ix.pending, ix.pendIDs = nil, nil
	if b == nil || b.Size() == 0 {
		return nil
	}
	if err := ix.batchFn(b); err != nil {
		ix.lost = append(ix.lost, ids...)
		return fmt.Errorf("write failed, %d added documents lost (TakeLost names them): %w", len(ids), err)
	}
	return nil
}

// TakeLost returns, and forgets, the ids of added documents that failed
// writes dropped since the last call.
func (ix *Index) TakeLost() []string {
	ix.pendMu.Lock()
	defer ix.pendMu.Unlock()
	out := ix.lost
	ix.lost = nil
	return out
}

// sync makes buffered changes visible to readers. The caller holds ix.mu.
func (ix *Index) sync() error {
	ix.pendMu.Lock()
	err := ix.flushLocked()
	ix.pendMu.Unlock()
	if err != nil && ix.onLost != nil {
		ix.onLost()
	}
	return err
}

// Count returns the number of documents in the index.
func (ix *Index) Count() (uint64, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return 0, fmt.Errorf("index: count: %w", ErrClosed)
	}
	if err := ix.sync(); err != nil {
		return 0, fmt.Errorf("index: count: %w", err)
	}
	n, err := ix.bi.DocCount()
	if err != nil {
		return 0, fmt.Errorf("index: count: %w", err)
	}
	return n, nil
}

// Close writes every change to disk and releases the index. It waits for
// running calls; later calls return ErrClosed. Closing twice is a no-op.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	ix.pendMu.Lock()
	err := ix.flushLocked()
	ix.pendMu.Unlock()
	if err == nil {
		err = ix.markClosed()
	}
	if err == nil {
		// Best effort: a failed merge leaves the segments as they were.
		if merged, merr := ix.mergeAtClose(); merr != nil {
			ix.log.Warn("index: merging segments at close failed; the index stays as it was", "path", ix.path, "err", merr)
		} else if merged {
			if err = ix.markClosed(); err == nil {
				ix.awaitOldSegmentsRemoved()
			}
		}
	}
	// Released first: a wait that a failed write holds scorch's
	// goroutines in ends, and they stop with the index.
	ix.throttle.release()
	if cerr := ix.bi.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return fmt.Errorf("index: close %s: %w", ix.path, err)
	}
	ix.log.Debug("index closed", "path", ix.path)
	return nil
}

// mergeAtCloseMax bounds the index size (bytes on disk) that Close merges
// into one segment.
const mergeAtCloseMax = 64 << 20

// mergeAtCloseTimeout bounds the time Close spends merging.
const mergeAtCloseTimeout = 10 * time.Second

// mergeAtClose merges the index's segments into one when it has more than
// one and is under mergeAtCloseMax, after markClosed has persisted every
// segment (scorch merges only persisted ones). Scorch merges segments of
// similar size in the background while the index is open, but a store
// that just ingested closes with several of the last ones unmerged: at
// 10,000 short turns five segments took 1.79 MB and one takes 1.48 MB
// (30 ms). Bigger indexes are left to scorch's own merging: rewriting them
// at every Close costs more than the few percent it saves. It reports
// whether it merged.
func (ix *Index) mergeAtClose() (bool, error) {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return false, err
	}
	sc, ok := adv.(*scorch.Scorch)
	if !ok {
		return false, nil
	}
	st := sc.StatsMap()
	segs, _ := st["TotFileSegmentsAtRoot"].(uint64)
	size, _ := st["CurOnDiskBytes"].(uint64)
	if segs < 2 || size > mergeAtCloseMax {
		return false, nil
	}
	if ix.throttle.failing() {
		// A merge needs room for a copy of the index, which the last
		// writes lacked.
		return false, errWriteFailing
	}
	ctx, cancel := context.WithTimeout(context.Background(), mergeAtCloseTimeout)
	defer cancel()
	if err := ix.forceMerge(ctx, sc); err != nil {
		return false, err
	}
	return true, nil
}

// awaitOldSegmentsRemoved gives scorch's persister, which deletes the
// files of segments a merge replaced once no snapshot needs them, up to
// mergeAtCloseWait to do so before Close stops it (files it leaves are
// deleted after the next open).
func (ix *Index) awaitOldSegmentsRemoved() {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return
	}
	sc, ok := adv.(*scorch.Scorch)
	if !ok {
		return
	}
	deadline := time.Now().Add(mergeAtCloseWait)
	for time.Now().Before(deadline) {
		st := sc.StatsMap()
		files, _ := st["CurOnDiskFiles"].(uint64)
		segs, _ := st["TotFileSegmentsAtRoot"].(uint64)
		if files <= segs+1 { // the root's segments and root.bolt
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mergeAtCloseWait bounds the wait for the merged-away files' removal.
const mergeAtCloseWait = 2 * time.Second

// markClosed records a clean shutdown and waits until that, and so
// everything written before it, is on disk. With unsafe_batch, scorch's
// Close stops the persister without draining it; a batch carrying a
// persisted-callback is how to know the persister has written the latest
// snapshot, which holds all earlier batches.
func (ix *Index) markClosed() error {
	b := ix.bi.NewBatch()
	b.SetInternal(stateKey, stateClosed)
	if err := persist(ix.bi, b, ix.throttle); err != nil {
		return fmt.Errorf("mark closed: %w", err)
	}
	return nil
}

// errWriteFailing: a write of the index failed while a caller waited for
// one; scorch retries it in the background (throttle.go).
var errWriteFailing = errors.New("writing the index failed (is the disk full?); it is retried in the background")

// persist applies b and waits until scorch has written it to disk, or a
// write fails meanwhile (t.watch).
func persist(bi bleve.Index, b *bleve.Batch, t *throttle) error {
	failed := t.watch()
	done := make(chan error, 1)
	b.SetPersistedCallback(func(err error) {
		select {
		case done <- err:
		default:
		}
	})
	if err := bi.Batch(b); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-failed:
		return errWriteFailing
	case <-time.After(persistTimeout):
		return fmt.Errorf("not persisted after %v", persistTimeout)
	}
}

// forceMerge asks scorch to merge the index into one segment and waits
// until it has, ctx is done, or a write fails meanwhile. Scorch's
// ForceMerge honours its context only while a merge runs: a merge that
// fails (a full disk) it retries, and waits for, until it succeeds. When
// forceMerge returns early, scorch's merger goes on with the request in
// the background, backoff apart, until it succeeds or the index closes.
func (ix *Index) forceMerge(ctx context.Context, sc *scorch.Scorch) error {
	failed := ix.throttle.watch()
	done := make(chan error, 1)
	go func() { done <- sc.ForceMerge(ctx, &mergeplan.SingleSegmentMergePlanOptions) }()
	select {
	case err := <-done:
		return err
	case <-failed:
		return errWriteFailing
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Purge writes pending changes and merges the index into one segment, so
// that deleted documents leave its files (scorch keeps them in older
// segments until a merge). It may take a while on a large index.
func (ix *Index) Purge(ctx context.Context) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return fmt.Errorf("index: purge: %w", ErrClosed)
	}
	if err := ix.sync(); err != nil {
		return fmt.Errorf("index: purge: %w", err)
	}
	adv, err := ix.bi.Advanced()
	if err != nil {
		return fmt.Errorf("index: purge: %w", err)
	}
	sc, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil
	}
	if err := ix.forceMerge(ctx, sc); err != nil {
		return fmt.Errorf("index: purge: %w", err)
	}
	return nil
}

// maxOnlyIn bounds the conversations OnlyIn counts: beyond it the check
// costs more than the filter it would save.
const maxOnlyIn = 8

// OnlyIn reports whether every document in the index belongs to one of
// conversations (at most 8): then a search's conversation filter admits
// everything, and a caller that checks each hit's conversation itself may
// leave it out, saving Bleve a leapfrog between posting lists per hit. A
// document of another conversation added between this answer and the
// search reaches the caller, which must drop it. Any error reads as false.
func (ix *Index) OnlyIn(conversations []string) bool {
	if len(conversations) == 0 || len(conversations) > maxOnlyIn {
		return false
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed || ix.sync() != nil {
		return false
	}
	adv, err := ix.bi.Advanced()
	if err != nil {
		return false
	}
	r, err := adv.Reader()
	if err != nil {
		return false
	}
	defer r.Close()
	total, err := r.DocCount()
	if err != nil {
		return false
	}
	var n uint64
	seen := make(map[string]bool, len(conversations))
	for _, c := range conversations {
		if seen[c] {
			continue
		}
		seen[c] = true
		tfr, err := r.TermFieldReader(context.Background(), []byte(c), fieldConversation, false, false, false)
		if err != nil {
			return false
		}
		n += tfr.Count()
		if tfr.Close() != nil {
			return false
		}
	}
	return n == total
}
