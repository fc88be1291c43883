package proxy

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory"
)

// What the proxy stores of a request is decided here. The client sends its
// whole history every time; memory lines a batch up against the end of the
// stored conversation by content (memory/doc.go, "Idempotency"), so a batch
// of only the new exchange cannot tell the same words said again ("continue"
// answered the same way) from a resend of the last exchange, and memory
// drops it. The proxy knows more: what it stored of the session last time,
// message by message. It lines the new history up with that by position,
// and sends memory the new messages behind just enough of the stored tail
// for memory's own alignment to land on the same place.

// msgKey identifies a message as memory compares them: role, name, content
// (a string without surrounding white space), tool calls and tool call id.
type msgKey [16]byte

func keyOf(m memory.Message) msgKey {
	h := sha256.New()
	content := []byte(m.Content)
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		content = []byte(strings.TrimSpace(s))
	}
	for _, part := range [][]byte{[]byte(m.Role), []byte(m.Name), content, m.ToolCalls, []byte(m.ToolCallID)} {
		h.Write([]byte{byte(len(part) >> 24), byte(len(part) >> 16), byte(len(part) >> 8), byte(len(part))})
		h.Write(part)
	}
	var k msgKey
	copy(k[:], h.Sum(nil))
	return k
}

// agreeRun is how many messages before a position both lists must hold
// alike for the histories to line up there. One equal message is chance,
// not the same history: a client that keeps only its latest messages (a
// sliding window) or a second client sharing the conversation has an
// "ok" or a "continue" where the stored history had one, and lining up on
// it dropped that client's new messages as resent, or stored its older
// ones again (found by a hostile review). A client that edits a message
// further back still lines up.
const agreeRun = 3

// agree reports whether a and b hold the same messages in the agreeRun
// positions before end (all of them, when there are fewer).
func agree(a, b []msgKey, end int) bool {
	for i := max(0, end-agreeRun); i < end; i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// maxOverlap bounds how much of the stored tail a batch repeats: past it
// the history is periodic for longer than any conversation is, and the
// batch starts at the head of the history instead.
const maxOverlap = 64

// alignBatch returns where in hist (the client's history for memory, its
// first n messages, then the answer if there is one) the batch for memory
// starts, given synced, what the session stored last time (the same list
// then). ok is false when the two
// do not line up (a first request, an edited or shortened history, another
// client sharing the conversation): the caller falls back to storing the
// current turn, as memory aligns it.
//
// new is the first message not stored yet: the one after the position of
// synced's last message, when hist holds the same messages in the
// agreeRun positions up to there (a message further back may have been
// edited since: it is not stored again), or the answer, when hist is the
// request stored last sent again (a retry, a regenerated answer).
// The batch repeats the fewest messages before new (o) for which memory's
// alignment, applied to synced as the stored tail, skips exactly those o.
func alignBatch(synced, hist []msgKey, n int) (start int, ok bool) {
	e := len(synced)
	var next int
	switch {
	case e == 0 || n < 1:
		return 0, false
	case n >= e && agree(hist, synced, e):
		next = e
	case n == e-1 && agree(hist, synced, n):
		// The request stored last, sent again (synced is its history and
		// its answer): a retry, or a regenerated answer.
		next = n
	default:
		return 0, false
	}
	for o := 0; o <= min(next, e, maxOverlap); o++ {
		if o > 0 && hist[next-o] != synced[e-o] {
			break // a longer overlap holds this pair too
		}
		if resendSkip(synced, hist[next-o:]) == o {
			return next - o, true
		}
	}
	if slices.Equal(hist[:min(e, n)], synced[:min(e, n)]) {
		return 0, true // the whole history: memory lines it up from the start
	}
	return 0, false
}

// resendSkip is how many of batch's first messages memory takes for a
// resend when stored holds the conversation (memory's newInputs, on keys):
// the longest run at the end of stored that equals the start of the batch,
// or all of it when the batch (of two or more) repeats the conversation
// from its first turn, or (of three or more) a stretch of it.
func resendSkip(stored, batch []msgKey) int {
	window := stored[max(0, len(stored)-len(batch)):]
	skip := 0
	for k := min(len(window), len(batch)); k > 0; k-- {
		if slices.Equal(window[len(window)-k:], batch[:k]) {
			skip = k
			break
		}
	}
	if skip < len(batch) && hasRun(stored, batch) {
		return len(batch)
	}
	return skip
}

func hasRun(stored, batch []msgKey) bool {
	if len(batch) < 2 || len(batch) > len(stored) {
		return false
	}
	if slices.Equal(stored[:len(batch)], batch) {
		return true
	}
	if len(batch) < 3 {
		return false
	}
	for i := 1; i+len(batch) <= len(stored); i++ {
		if slices.Equal(stored[i:i+len(batch)], batch) {
			return true
		}
	}
	return false
}
