package llm

import (
	"fmt"
	"sync"
	"time"
)

// Cool-down after repeated failures: after coolAfter failures in a row the
// model is skipped for coolBase, doubling with each further failure up to
// coolMax. One call is let through when the hold ends; success resets it.
const (
	coolAfter = 3
	coolBase  = 30 * time.Second
	coolMax   = 10 * time.Minute
)

// health counts failures of one Tagger or Summarizer and decides when to
// skip the model for a while.
type health struct {
	label    string // "openai/gpt-4o-mini"
	fallback string // "keyword tagger"
	now      func() time.Time

	mu          sync.Mutex
	successes   int
	failures    int
	consecutive int
	last        string
	lastAt      time.Time
	holdUntil   time.Time
}

// allow reports whether to call the model now.
func (h *health) allow() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.now().Before(h.holdUntil)
}

func (h *health) ok() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.successes++
	h.consecutive = 0
	h.holdUntil = time.Time{}
}

func (h *health) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures++
	h.consecutive++
	h.last = err.Error()
	h.lastAt = h.now()
	if h.consecutive >= coolAfter {
		d := coolBase << min(h.consecutive-coolAfter, 10)
		if d > coolMax || d <= 0 {
			d = coolMax
		}
		h.holdUntil = h.lastAt.Add(d)
	}
}

// ready implements Readiness: not ready while the latest call failed.
func (h *health) ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.failures == 0:
		return true, ""
	case h.consecutive == 0:
		return true, fmt.Sprintf("%s: ok (%d earlier failures, last: %s)", h.label, h.failures, h.last)
	}
	msg := fmt.Sprintf("%s: %d failures, last: %s; using %s", h.label, h.failures, h.last, h.fallback)
	if h.now().Before(h.holdUntil) {
		msg += fmt.Sprintf(" until %s", h.holdUntil.UTC().Format(time.TimeOnly))
	}
	return false, msg
}
