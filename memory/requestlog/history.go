package requestlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

const (
	// Ext ends a history's file name.
	Ext = ".jsonl.gz"
	// PlainExt ends the file name of a history of an earlier version.
	PlainExt = ".jsonl"
	// Retention is how many records a history keeps.
	Retention = 200
)

// maxQueued is how many new records (not yet tried by a write) a history
// queues before the caller that adds one writes them itself (the writer
// has fallen behind).
const maxQueued = 64

// A Record is a record to append: the history numbers it when it queues
// it, and encodes it when it writes it.
type Record interface {
	// SetSeq gives the record its sequence number. It is called once,
	// under the history's queue lock; the record does not change after.
	SetSeq(seq int)
	// MarshalLine encodes the record as one JSON object, without a
	// newline (it must hold none).
	MarshalLine() ([]byte, error)
	// ScopeAll reports whether the record is of a recall over every
	// conversation: its history needs a marker (see the package comment).
	ScopeAll() bool
}

// History is one conversation's request history. Its methods are safe for
// concurrent use.
type History struct {
	path   string
	format Format
	// file is held while the history file is read or written: open,
	// flush, trim, rewrite, Read and Update. It guards ends, scopeAll and
	// unsaid.
	file sync.Mutex
	// unsaid are the errors of writes a caller made without a Writer to
	// report them, for the next Flush to return.
	unsaid error
	// ends are the end offsets of the file's whole members, as this
	// history read and appended them: trimming cuts at one without
	// reading the members again. They are found again when the file's
	// size says it changed (nil: not known).
	ends []int
	// scopeAll says, for each of ends, whether its member holds a
	// scope-all record: a trim or rewrite that leaves none removes the
	// marker.
	scopeAll []bool
	// loaded is set (under file and mu) once open has read the history.
	loaded atomic.Bool
	// mu guards next, queue, sent, marked and the write bookkeeping below
	// (failedAt, tried, dropped), and is held only to number
	// a record and queue it, to take the queue, or to make or remove the
	// marker.
	mu   sync.Mutex
	next int // seq of the next record
	// skip: numbering resumes skip past the file's newest record, after
	// crashes (Resume).
	skip int
	// marked says the history's scope-all marker is known to exist.
	marked bool
	// queue holds the records numbered but not written yet, oldest first:
	// those a failed write left (at most Retention), then the newer ones.
	queue []entry
	// sent says the history is with the writer, which will take the
	// queue.
	sent bool
	// failedAt is when the last write failed (zero: it did not): until
	// retryDelay has passed, the writer and callers leave the queue as it
	// is, so a disk that stays full costs a write attempt and a warning a
	// second, not one a record. tried counts the records at the head of the queue
	// that a write failed on (they do not make a caller write: they are
	// not new). dropped counts the records let go meanwhile (at most
	// Retention wait), for the next error to say.
	failedAt time.Time
	tried    int
	dropped  int
}

// retryDelay is how long after a failed write the next is tried (except
// by Flush and Update, which always try). A variable for tests.
var retryDelay = time.Second

// entry is a queued record.
type entry struct {
	rec      Record
	scopeAll bool // rec.ScopeAll()
	// member is the record's gzip member, once a write that failed
	// encoded it: the next one writes it as it is.
	member []byte
}

// New returns the history whose file is path (it ends in Ext). Nothing is
// read before it is used.
func New(path string, f Format) *History {
	return &History{path: path, format: f}
}

// Open readies the history, once: a plain history of an earlier version
// beside it is moved in, a member cut short at the end (a write that did
// not finish) is cut off, and the next sequence number is read. The other
// methods open the history themselves.
func (h *History) Open() error {
	if h.loaded.Load() {
		return nil
	}
	h.file.Lock()
	defer h.file.Unlock()
	return h.open()
}

// Next returns the sequence number the next record gets.
func (h *History) Next() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.next
}

// open is Open with h.file held.
func (h *History) open() error {
	if h.loaded.Load() {
		return nil
	}
	path := h.path
	legacy := strings.TrimSuffix(path, Ext) + PlainExt
	old, found, err := readPlain(legacy, h.format.Seq)
	if err != nil {
		return err
	}
	// Numbering needs the newest record only: the others are not decoded
	// (the first record after a start waits for this).
	f, err := load(path, found, h.format.ScopeAll)
	if err != nil {
		return err
	}
	if found {
		// A move cut short before the old file's removal left its records
		// in both: the compressed file's come first.
		recs := records(f.lines, h.format.Seq)
		if len(recs) > 0 {
			first := h.format.Seq(recs[0])
			old = slices.DeleteFunc(old, func(line []byte) bool { return h.format.Seq(line) >= first })
		}
		if err := h.rewrite(append(old, recs...)); err != nil {
			return err
		}
		if err := os.Remove(legacy); err != nil {
			return fmt.Errorf("request history moved to %s; remove the old %s: %w", filepath.Base(path), filepath.Base(legacy), err)
		}
		if f, err = load(path, false, h.format.ScopeAll); err != nil {
			return err
		}
	} else if f.good < len(f.data) {
		if err := os.Truncate(path, int64(f.good)); err != nil {
			return fmt.Errorf("repair request history: %w", err)
		}
	}
	h.ends, h.scopeAll = f.ends, f.scopeAll
	h.mu.Lock()
	h.next = f.lastSeq(h.format.Seq) + 1
	h.next += h.skip
	h.loaded.Store(true)
	h.mu.Unlock()
	return nil
}

// Append numbers rec and queues it; the writer w appends it (and trims
// the history to Retention now and then). rec must not change after the
// call. With w nil the caller writes the queue once maxQueued new records
// wait, and the next Flush says what failed meanwhile. An error says rec
// was not queued (it has no number); a failed write is not one: the
// record stays queued for the next write to retry, and w reports the
// failure.
//
// check, when not nil, is called under the queue lock (the lock a
// rewriter takes to write what is queued first), after the history is
// marked for a scope-all record and before rec is numbered; its error is
// returned and rec is not queued. Package memory drops there a record made
// before a rewrite of its conversation's logs began, whose scrub of the
// history may be done already: a record either reaches that scrub (Update)
// or is dropped.
func (h *History) Append(rec Record, w *Writer, check func() error) error {
	if err := h.Open(); err != nil {
		return err
	}
	scopeAll := rec.ScopeAll()
	h.mu.Lock()
	if scopeAll && !h.marked {
		// Before check: a scrub that finds no marker began after this
		// record would have been dropped. Under the queue lock: a trim or
		// rewrite removes the marker under it, when the queue holds no
		// scope-all record either.
		if err := h.markLocked(); err != nil {
			h.mu.Unlock()
			return err
		}
	}
	if check != nil {
		if err := check(); err != nil {
			h.mu.Unlock()
			return err
		}
	}
	rec.SetSeq(h.next)
	h.next++
	h.queue = append(h.queue, entry{rec: rec, scopeAll: scopeAll})
	if drop := len(h.queue) - Retention; drop > 0 { // writes keep failing
		h.dropQueued(drop)
	}
	fresh := len(h.queue) - h.tried // not tried yet
	send := w != nil && !h.sent && fresh < maxQueued
	h.sent = h.sent || send
	h.mu.Unlock()
	switch {
	case !send && fresh < maxQueued:
		return nil // the writer has the history already, or there is none yet
	case send && w.send(h):
		return nil
	case send: // the writer is busy with many histories
		h.mu.Lock()
		h.sent = false
		h.mu.Unlock()
	}
	// The writer is busy or behind, or there is none: write the queue
	// here.
	h.file.Lock()
	err := h.flush(true, true)
	if err != nil && w == nil {
		h.unsaid = errors.Join(h.unsaid, err) // for the next Flush to say
	}
	h.file.Unlock()
	if err != nil && w != nil {
		w.report(err)
	}
	return nil
}

// dropQueued lets the n oldest queued records go. h.mu is held.
func (h *History) dropQueued(n int) {
	clear(h.queue[:n])
	h.queue = h.queue[n:]
	h.tried = max(0, h.tried-n)
	h.dropped += n
}

// Flush writes what is queued, whenever a write last failed. When the
// write fails, the records stay queued (at most Retention, the oldest
// dropped first) and a later write retries them.
func (h *History) Flush() error {
	h.file.Lock()
	defer h.file.Unlock()
	err := errors.Join(h.unsaid, h.flush(true, false))
	h.unsaid = nil
	return err
}

// flush takes the queued records and appends them to the history file.
// h.file is held, so queues taken one after another are written in order;
// h.mu is held only to take the queue. The records a failed write leaves
// go back to the head of the queue, when keep is set, or are dropped (an
// Update's scrub could not see them). patient: within retryDelay of a
// failed write, nothing is tried.
func (h *History) flush(keep, patient bool) error {
	h.mu.Lock()
	if patient && time.Since(h.failedAt) < retryDelay { // zero: long ago
		h.sent = false
		h.mu.Unlock()
		return nil
	}
	q, dropped := h.queue, h.dropped
	h.queue, h.sent, h.tried, h.dropped = nil, false, 0, 0
	h.mu.Unlock()
	var err error
	if dropped > 0 {
		err = fmt.Errorf("request history: %d record(s) dropped while it could not be written (at most %d wait)", dropped, Retention)
	}
	if len(q) == 0 {
		return err
	}
	rest, werr := h.write(q)
	err = errors.Join(err, werr)
	if len(rest) == 0 {
		h.mu.Lock()
		h.failedAt = time.Time{}
		h.mu.Unlock()
	}
	switch {
	case len(rest) > 0 && !keep:
		h.mu.Lock()
		h.failedAt = time.Now()
		h.mu.Unlock()
		err = fmt.Errorf("%w (%d request records dropped)", err, len(rest))
	case len(rest) > 0:
		h.mu.Lock()
		h.queue = append(rest, h.queue...)
		h.tried, h.failedAt = len(rest), time.Now()
		if drop := len(h.queue) - Retention; drop > 0 {
			h.dropQueued(drop)
			h.dropped -= drop // said here
			err = fmt.Errorf("%w (the %d oldest of the request records waiting for it dropped: at most %d wait)", err, drop, Retention)
		}
		h.mu.Unlock()
	}
	if len(h.ends) > Retention+Retention/2 {
		err = errors.Join(err, h.trim(Retention))
	}
	return err
}

// flushSoon is the writer's flush: after a failed write, it waits
// retryDelay before it tries again.
func (h *History) flushSoon() error {
	h.file.Lock()
	defer h.file.Unlock()
	return h.flush(true, true)
}

// write appends q's records to the history file, in order and in one
// write, at its end, and returns those it did not write (with their
// members). A record that does not encode is left out (an error says so):
// it never will. A failed write is cut off the file again, so that the
// records it returns are written once when retried; if that cut fails
// too, the records the write put in whole count as written. h.file is
// held.
func (h *History) write(q []entry) ([]entry, error) {
	var errs []error
	var data []byte
	todo := q[:0]
	ends := make([]int, 0, len(q))
	for _, e := range q {
		if e.member == nil {
			line, err := e.rec.MarshalLine()
			if err != nil {
				errs = append(errs, fmt.Errorf("encode request record: %w", err))
				continue
			}
			if data, err = appendMember(data, line); err != nil {
				errs = append(errs, err)
				continue
			}
		} else {
			data = append(data, e.member...)
		}
		todo = append(todo, e)
		ends = append(ends, len(data))
	}
	if len(todo) == 0 {
		return nil, errors.Join(errs...)
	}
	// unwritten is todo from i on, each with its member, for a retry.
	unwritten := func(i int) []entry {
		for j := i; j < len(todo); j++ {
			todo[j].member = data[ends[j]-memberLen(ends, j) : ends[j]]
		}
		return todo[i:]
	}
	f, err := create(h.path)
	if err != nil {
		return unwritten(0), errors.Join(append(errs, fmt.Errorf("open request history: %w", err))...)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return unwritten(0), errors.Join(append(errs, fmt.Errorf("append to request history: %w", err))...)
	}
	start, known := int(info.Size()), true
	if start != h.size() {
		// Changed since this history last wrote it (or not known): find
		// its members again, for trimming. A member cut short at its end
		// (a write whose cut failed) is written over, not left inside.
		g, err := load(h.path, false, h.format.ScopeAll)
		h.ends, h.scopeAll, known = g.ends, g.scopeAll, err == nil
		if known && g.good < start && f.Truncate(int64(g.good)) == nil {
			start = g.good
		}
	}
	n := 0
	err = writeHooked(h.path)
	if err == nil {
		n, err = f.WriteAt(data, int64(start))
	}
	if err != nil {
		err = fmt.Errorf("append to request history: %w", err)
		terr := f.Truncate(int64(start))
		_ = f.Close()
		if terr != nil {
			// What the disk took stays: the whole members count as
			// written, and the file's members are found again.
			h.ends, h.scopeAll = nil, nil
			written := 0
			for written < len(ends) && ends[written] <= n {
				written++
			}
			return unwritten(written), errors.Join(append(errs, err, fmt.Errorf("cut a failed append off the request history: %w", terr))...)
		}
		return unwritten(0), errors.Join(append(errs, err)...)
	}
	if err := f.Close(); err != nil { // written: not retried
		errs = append(errs, fmt.Errorf("close request history: %w", err))
	}
	if known {
		for i, e := range ends {
			h.ends = append(h.ends, start+e)
			h.scopeAll = append(h.scopeAll, todo[i].scopeAll)
		}
	}
	return nil, errors.Join(errs...)
}

// memberLen is the length of the member that ends at ends[i].
func memberLen(ends []int, i int) int {
	if i == 0 {
		return ends[0]
	}
	return ends[i] - ends[i-1]
}

// Read returns the history's lines, oldest first: every non-empty line of
// every whole member, then those of the records still queued (a record
// numbered is read, whether or not it is written yet). A line that is not
// a record (Format.Seq) is the caller's to skip. Read writes no record
// (the first use of a history may move a plain one in, or cut a torn
// last member: Open).
func (h *History) Read() ([][]byte, error) {
	h.file.Lock()
	defer h.file.Unlock()
	if err := h.open(); err != nil {
		return nil, err
	}
	f, err := load(h.path, true, nil)
	if err != nil {
		return nil, err
	}
	// Under the file lock, a record is either in the file or queued: a
	// write holds it while the queue it took is on its way.
	h.mu.Lock()
	q := slices.Clone(h.queue)
	h.mu.Unlock()
	for _, e := range q {
		if line, err := e.rec.MarshalLine(); err == nil { // one that does not encode is never written
			f.lines = append(f.lines, line)
		}
	}
	return f.lines, nil
}

// Update rewrites the history (atomically) with what fn makes of its
// lines (as Read gives them), when fn says it changed them; the history's
// file lock is held throughout, so nothing is appended in between. What
// is queued is written first; if that fails, the queued records are
// dropped (they could not be given to fn), the error says so, and the
// rewrite goes on with the file: a scrub is never skipped for a write
// that failed (it writes a new file and renames it over the old, which
// may work where an append did not). fn is not called when the history
// holds no line.
func (h *History) Update(fn func(lines [][]byte) (out [][]byte, changed bool, err error)) error {
	h.file.Lock()
	defer h.file.Unlock()
	if err := h.open(); err != nil {
		return err
	}
	ferr := h.flush(false, false)
	f, err := load(h.path, true, nil)
	if err != nil || len(f.lines) == 0 && len(f.data) == 0 {
		return errors.Join(ferr, err)
	}
	out, changed, err := f.lines, false, error(nil)
	if len(f.lines) > 0 {
		if out, changed, err = fn(f.lines); err != nil {
			return errors.Join(ferr, err)
		}
	}
	if !changed && !f.dirty() {
		return ferr
	}
	// Rewritten also when fn changed nothing but the file holds bytes
	// outside whole members (a damaged or torn one), which fn never saw.
	if rerr := h.rewrite(out); rerr != nil {
		// A scrub must not leave what it was to remove: the history is
		// cleared instead (cutting a file needs no free space, where its
		// new copy did).
		return errors.Join(ferr, rerr, h.clear())
	}
	return ferr
}

// clear empties the history file, after a rewrite that failed. h.file is
// held.
func (h *History) clear() error {
	if err := os.Truncate(h.path, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear the request history after its rewrite failed: %w", err)
	}
	h.ends, h.scopeAll = []int{}, []bool{}
	if err := h.syncMarker(false); err != nil {
		return err
	}
	return errors.New("the request history was cleared instead")
}

// size is where the history's last whole member ends.
func (h *History) size() int {
	if len(h.ends) == 0 {
		return 0
	}
	return h.ends[len(h.ends)-1]
}

// trim keeps the newest keep members of the history (atomically), copied
// as they are, and removes the marker when none of them (nor a queued
// record) is of scope all. The members' ends are the ones this history
// knows when the file is still the size they say; otherwise the file is
// read again to find them. h.file is held.
func (h *History) trim(keep int) error {
	path := h.path
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read request history: %w", err)
	}
	ends, scopeAll, good := h.ends, h.scopeAll, h.size()
	if len(ends) == 0 || good != len(data) {
		f := parse(data, false, h.format.ScopeAll)
		ends, scopeAll, good = f.ends, f.scopeAll, f.good
	}
	if len(ends) <= keep {
		h.ends, h.scopeAll = ends, scopeAll
		return nil
	}
	cut := ends[len(ends)-keep-1]
	if err := files.AtomicWrite(path, data[cut:good]); err != nil {
		return err
	}
	h.ends = make([]int, keep, Retention*2)
	for i, e := range ends[len(ends)-keep:] {
		h.ends[i] = e - cut
	}
	h.scopeAll = append(make([]bool, 0, Retention*2), scopeAll[len(scopeAll)-keep:]...)
	return h.syncMarker(slices.Contains(h.scopeAll, true))
}

// rewrite replaces the history with lines (atomically), one member each,
// and makes or removes the marker as they hold a scope-all record or not
// (nor a queued record does). h.file is held.
func (h *History) rewrite(lines [][]byte) error {
	path := h.path
	var out []byte
	ends := make([]int, 0, max(len(lines), Retention*2))
	scopeAll := make([]bool, 0, cap(ends))
	for _, line := range lines {
		var err error
		if out, err = appendMember(out, line); err != nil {
			return err
		}
		ends = append(ends, len(out))
		scopeAll = append(scopeAll, h.format.ScopeAll(line))
	}
	if err := makeDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	var err error
	if h := rewriteHook; h != nil {
		err = h(path)
	}
	if err == nil {
		err = files.AtomicWrite(path, out)
	}
	if err != nil {
		h.ends, h.scopeAll = nil, nil // unknown: the next write reads the file
		return err
	}
	h.ends, h.scopeAll = ends, scopeAll
	return h.syncMarker(slices.Contains(scopeAll, true))
}

// rewriteHook, when set (this package's tests only), runs before every
// rewrite of a history and fails it with its error.
var rewriteHook func(path string) error

// writeHook, when set, runs before every append to a history (SetWriteHook).
var writeHook atomic.Pointer[func(path string) error]

// SetWriteHook makes every append to a history call hook first, with the
// history's path, and fail with its error; nil removes it. For tests only:
// a full disk, or a writer stalled on the disk. (A rewrite, which writes a
// new file and renames it, is not hooked: the hook stands for a full
// disk where an append fails and the scrub's copy may not.)
func SetWriteHook(hook func(path string) error) {
	if hook == nil {
		writeHook.Store(nil)
		return
	}
	writeHook.Store(&hook)
}

func writeHooked(path string) error {
	if hook := writeHook.Load(); hook != nil {
		return (*hook)(path)
	}
	return nil
}
