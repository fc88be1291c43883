package index

import (
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// Scorch's persister and merger retry a failed write at once, forever: on
// a full disk each loops at a whole core until space comes back, and a
// force merge waits on that loop past its context. Scorch tells of each
// failure through its async error callback, called in the failing
// goroutine; the callback below waits there, so that the retries come
// backoff apart (retryBase doubling up to retryMax), and says so in the
// log once a minute. Close ends the wait at once (throttle.stop), so that
// it does not wait for a retry.
const (
	retryBase = 100 * time.Millisecond
	retryMax  = 10 * time.Second
	// retryReset: failures further apart than this start again from
	// retryBase (writes succeeded between them).
	retryReset = time.Minute
	retryLog   = time.Minute
)

// asyncErrorCallback names the callback in scorch's registry.
const asyncErrorCallback = "vc-mcp/index"

func init() {
	scorch.RegistryAsyncErrorCallbacks[asyncErrorCallback] = func(err error, storePath string) {
		// Scorch's path is the index's "store" directory.
		if v, ok := throttles.Load(filepath.Dir(storePath)); ok {
			v.(*throttle).failed(err)
		}
	}
}

// throttles maps an open index's path to its throttle.
var throttles sync.Map

// throttle spaces the retries of one index's background writes.
type throttle struct {
	path string
	log  *slog.Logger
	done chan struct{} // closed by stop
	once sync.Once
	// fails receives a signal (not queued past one) at each failure, for
	// a caller waiting on a write (persist, forceMerge) to give up.
	fails chan struct{}

	mu       sync.Mutex
	failures int
	last     time.Time // the last failure
	logged   time.Time
}

// newThrottle registers a throttle for the index at path, before scorch
// opens it (its goroutines start with the open); release unregisters it.
func newThrottle(path string, log *slog.Logger) *throttle {
	t := &throttle{path: path, log: log, done: make(chan struct{}), fails: make(chan struct{}, 1)}
	throttles.Store(path, t)
	return t
}

// stop ends the waits, the one under way and any later one (a nil t has
// none).
func (t *throttle) stop() {
	if t != nil {
		t.once.Do(func() { close(t.done) })
	}
}

// release stops the waits and unregisters t, if it is still path's.
func (t *throttle) release() {
	if t != nil {
		t.stop()
		throttles.CompareAndDelete(t.path, t)
	}
}

// failed runs in the scorch goroutine whose write failed: it waits before
// that goroutine retries.
func (t *throttle) failed(err error) {
	if !errors.Is(err, scorch.ErrPersist) {
		return // cleanup errors and the like are not retried in a loop
	}
	now := time.Now()
	t.mu.Lock()
	if now.Sub(t.last) > retryReset {
		t.failures = 0
	}
	t.failures++
	t.last = now
	delay := min(retryBase<<min(t.failures-1, 16), retryMax)
	logIt := now.Sub(t.logged) >= retryLog
	if logIt {
		t.logged = now
	}
	n := t.failures
	t.mu.Unlock()
	select {
	case t.fails <- struct{}{}:
	default:
	}
	if logIt {
		t.log.Warn("index: writing the search index failed (a full disk?); it is retried, further apart each time, until it succeeds",
			"path", t.path, "failures", n, "next_try_in", delay.String(), "err", err)
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.done:
	}
}

// failing reports whether a write failed within retryReset.
func (t *throttle) failing() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.last.IsZero() && time.Since(t.last) <= retryReset
}

// watch returns the channel that signals the next failure, with any
// signal of an earlier one taken out (nil, which never signals, for a nil
// t).
func (t *throttle) watch() <-chan struct{} {
	if t == nil {
		return nil
	}
	select {
	case <-t.fails:
	default:
	}
	return t.fails
}
