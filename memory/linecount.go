package memory

import "sync/atomic"

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
