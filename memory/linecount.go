package memory

import (
	"context"
	"os"
	"sync/atomic"
)

// Each turn's line in an assembly (turnPrefix, its content on one line, a
// newline) is counted exactly once per process and remembered: at ingest,
// where the content is in hand, or at the first recall that packs it. An
// assembly's exact count then counts only the lines it has not seen (see
// counter.CountChunks), which was an eighth of a recall.
//
// conv.lineToks[seq-1] holds the count with the master-log offset of the
// record it was made from, so a rewritten record (a forget or a redaction
// appends a new one) is counted again: (start+1)<<lineTokBits | count.
// Recalls read and fill it under the conversation's read lock, with atomic
// loads and stores; it grows with c.turns, under the write lock.
const lineTokBits = 24

// cachedLine returns turn t's remembered line count, if it was made from
// the record t points at now.
func (c *conv) cachedLine(t *turnMeta) (int, bool) {
	if t.Seq < 1 || t.Seq > len(c.lineToks) {
		return 0, false
	}
	v := atomic.LoadUint64(&c.lineToks[t.Seq-1])
	if v>>lineTokBits != uint64(t.Start)+1 {
		return 0, false
	}
	return int(v & (1<<lineTokBits - 1)), true
}

// cacheLine remembers n as turn t's line count.
func (c *conv) cacheLine(t *turnMeta, n int) {
	if t.Seq < 1 || t.Seq > len(c.lineToks) || n < 0 || n >= 1<<lineTokBits || t.Start < 0 || t.Start >= 1<<(64-lineTokBits)-1 {
		return
	}
	atomic.StoreUint64(&c.lineToks[t.Seq-1], (uint64(t.Start)+1)<<lineTokBits|uint64(n))
}

// turnLine is a turn's line as an assembly renders it, with its newline.
func turnLine(t *turnMeta, content string) string {
	return turnPrefix(t) + oneLine(content) + "\n"
}

// The line warmer counts, in the background, the lines of a loaded
// conversation's turns that have no remembered count: a store opened on
// turns written by another process (a restart, the shared server taking a
// data directory over) would otherwise count them in its first recalls.
// One goroutine per store works through the conversations it is sent, a
// chunk of turns at a time under the read lock, and stops at Close or when
// a conversation is unloaded. It first opens the conversation's request
// history, which a recall otherwise opens to number its record.
type lineWarmer struct {
	work chan *conv
	stop context.CancelFunc
	done chan struct{}
}

// warmChunk is how many turns the warmer counts under one read lock.
const warmChunk = 256

// startLineWarmer starts the warmer before Open recovers conversations,
// so those it loads are warmed too.
func (s *Store) startLineWarmer() {
	ctx, cancel := context.WithCancel(context.Background())
	w := &lineWarmer{work: make(chan *conv, 64), stop: cancel, done: make(chan struct{})}
	s.warm = w
	go func() {
		defer close(w.done)
		for {
			select {
			case <-ctx.Done():
				return
			case c := <-w.work:
				s.warmRequests(c)
				s.warmLines(ctx, c)
			}
		}
	}()
}

func (s *Store) stopLineWarmer() {
	if s.warm != nil {
		s.warm.stop()
		<-s.warm.done
	}
}

// queueWarm sends a newly loaded conversation to the warmer, unless it is
// busy with many.
func (s *Store) queueWarm(c *conv) {
	if s.warm == nil {
		return
	}
	select {
	case s.warm.work <- c:
	default:
	}
}

// warmRequests opens c's request history when it has one (a failure is
// left for the recall that needs it to report).
func (s *Store) warmRequests(c *conv) {
	if _, err := os.Stat(s.requestsPath(c.id)); err != nil {
		return
	}
	_ = s.requestLog(c.id).Open()
}

// warmLines counts c's turns' lines that have no remembered count.
func (s *Store) warmLines(ctx context.Context, c *conv) {
	for from := 1; ctx.Err() == nil; from += warmChunk {
		c.mu.RLock()
		if from > len(c.turns) || !c.log.IsOpen() {
			c.mu.RUnlock()
			return
		}
		for seq := from; seq < min(len(c.turns)+1, from+warmChunk); seq++ {
			t := &c.turns[seq-1]
			if t.Empty {
				continue
			}
			if _, ok := c.cachedLine(t); ok {
				continue
			}
			content, err := c.log.ReadContent(t.Start, t.End)
			if err != nil {
				continue // damaged: a recall reports it if it needs the turn
			}
			c.cacheLine(t, s.tok.Count(turnLine(t, content)))
		}
		c.mu.RUnlock()
	}
}
