package memory

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// Request records live in requests/<conversation file>.jsonl.gz, newest
// last: one gzip member per record, each holding the record as one JSON
// object and a newline, so any gzip reader (`zcat`) reads the file as JSON
// lines. A record's inclusion list repeats the same field names for every
// turn, which compresses about tenfold; appending a member never touches the
// ones before it, and trimming copies whole members without decoding them.
// They are a history for people, not state: appends are not fsync'd, and
// only the newest RequestRetention are kept. A recall numbers its record
// and queues it; the store's history writer (one goroutine) encodes and
// appends it after the recall has answered, and reading or rewriting a
// history writes what is queued first, so a reader sees every record a
// recall has named. A recall holds the history's queue lock only to number
// and queue its record: encoding and appending are the writer's, under the
// file lock, so a recall does not wait while the previous recall's record
// is compressed and written (unless the writer has fallen behind: with
// maxQueuedRequests queued, or its channel full, a recall writes the queue
// itself). Close writes what is still queued. Histories
// written before 2026-11-24 as plain JSON lines (<conversation file>.jsonl)
// are moved into the compressed file the first time the conversation's
// history is used.
const (
	requestsDir = "requests"
	// RequestRetention is how many request records a conversation keeps.
	RequestRetention = 200
)

// requestLog is one conversation's request history. Lock order: file,
// then mu.
type requestLog struct {
	path string
	// file is held while the history file is read or written: open,
	// flush, trim, rewrite, and the readers and rewriters (history). It
	// guards ends.
	file sync.Mutex
	// ends are the end offsets of the file's whole members, as this
	// process read and appended them: trimming cuts at one without
	// reading the members again, unless the file's size says it changed.
	ends []int
	// loaded is set (under file and mu) once open has read the history.
	loaded atomic.Bool
	// marked is set once the history's scope-all marker is known to
	// exist (see scopeAllExt).
	marked atomic.Bool
	// mu guards next and queue, and is held only to number a record and
	// queue it, or to take the queue.
	mu   sync.Mutex
	next int // seq of the next record
	// queue holds the records numbered but not written yet, oldest first.
	queue []*RequestRecord
}

// maxQueuedRequests is how many records a history queues before the
// recall that adds one writes them itself (the writer has fallen behind).
const maxQueuedRequests = 64

// requestWriter is the store's history writer: it writes the queued
// records of each history sent on work.
type requestWriter struct {
	work chan *requestLog
	done chan struct{}
}

// startRequestWriter starts the history writer; Close stops it.
func (s *Store) startRequestWriter() {
	w := &requestWriter{work: make(chan *requestLog, 256), done: make(chan struct{})}
	s.reqw = w
	go func() {
		defer close(w.done)
		for l := range w.work {
			l.file.Lock()
			if err := l.flush(); err != nil {
				s.log.Warn("recording the request context failed; the recall was unaffected", "err", err)
			}
			l.file.Unlock()
		}
	}()
}

// stopRequestWriter writes what is queued and ends the writer. No
// operation is in flight.
func (s *Store) stopRequestWriter() {
	if s.reqw != nil {
		close(s.reqw.work)
		<-s.reqw.done
		s.reqw = nil
	}
}

func (s *Store) requestsPath(id string) string {
	return filepath.Join(s.opts.Dir, requestsDir, fileName(id)+".jsonl.gz")
}

func (s *Store) requestLog(id string) *requestLog {
	if v, ok := s.reqs.Load(id); ok { // a recall's path: no allocation
		return v.(*requestLog)
	}
	v, _ := s.reqs.LoadOrStore(id, &requestLog{path: s.requestsPath(id)})
	return v.(*requestLog)
}

// history locks id's request history file, readies it and writes what is
// queued, for a caller that reads or rewrites the file; it unlocks l.file
// after.
func (s *Store) history(id string) (*requestLog, error) {
	l := s.requestLog(id)
	l.file.Lock()
	if err := errors.Join(l.open(), l.flush()); err != nil {
		l.file.Unlock()
		return nil, err
	}
	return l, nil
}

// open readies the history for this process, once: a plain history of an
// earlier version is moved in, a member cut short at the end (a write that
// did not finish) is cut off, and the next sequence number and the record
// count are read. l.file is held.
func (l *requestLog) open() error {
	if l.loaded.Load() {
		return nil
	}
	path := l.path
	legacy := path[:len(path)-len(".gz")]
	old, err := readPlainRequests(legacy)
	if err != nil {
		return err
	}
	// Numbering needs the newest record only: the others are not decoded
	// (the first recall after a start waits for this).
	f, err := loadRequests(path, old != nil)
	if err != nil {
		return err
	}
	if old != nil {
		// A move cut short before the old file's removal left its records
		// in both: the compressed file's come first.
		if len(f.recs) > 0 {
			old = slices.DeleteFunc(old, func(r RequestRecord) bool { return r.Seq >= f.recs[0].Seq })
		}
		if err := l.rewrite(append(old, f.recs...)); err != nil {
			return err
		}
		if err := os.Remove(legacy); err != nil {
			return fmt.Errorf("request history moved to %s; remove the old %s: %w", filepath.Base(path), filepath.Base(legacy), err)
		}
		if f, err = loadRequests(path, false); err != nil {
			return err
		}
	} else if f.good < len(f.data) {
		if err := os.Truncate(path, int64(f.good)); err != nil {
			return fmt.Errorf("repair request history: %w", err)
		}
	}
	l.ends = f.ends
	l.mu.Lock()
	l.next = f.lastSeq() + 1
	l.loaded.Store(true)
	l.mu.Unlock()
	return nil
}

// errRewrittenMeanwhile: a record is not kept because a log rewrite began
// after the recall that made it did.
var errRewrittenMeanwhile = errors.New("a conversation's logs were rewritten during the recall")

// recallRecordHook, when set (tests only), runs after a recall has
// answered and before its request record is queued.
var recallRecordHook func()

// appendRequest gives rec its id and queues it for its conversation's
// request history. The history writer appends it (and trims the history to
// RequestRetention now and then); rec must not change after the call.
//
// rewrites is Store.logRewrites as the recall found it when it began. A
// forget or redaction that rewrote a log since may have taken out turns
// and topics rec names, and its scrub of the history may be done already:
// rec is then dropped (errRewrittenMeanwhile). The check is made under
// l.mu, which a scrub takes (after bumping logRewrites) to flush the queue
// before it rewrites the file, so a record either reaches the scrub or is
// dropped here.
func (s *Store) appendRequest(rec *RequestRecord, rewrites uint64) error {
	l := s.requestLog(rec.ConversationID)
	if !l.loaded.Load() {
		l.file.Lock()
		err := l.open()
		l.file.Unlock()
		if err != nil {
			return err
		}
	}
	if rec.Scope == ScopeAll && !l.marked.Load() {
		// Before the check below: a forget that finds no marker began
		// after this record would have been dropped.
		if err := l.mark(); err != nil {
			return err
		}
	}
	l.mu.Lock()
	if s.logRewrites.Load() != rewrites {
		l.mu.Unlock()
		return errRewrittenMeanwhile
	}
	rec.Seq, rec.ID = l.next, "r"+strconv.Itoa(l.next)
	l.next++
	l.queue = append(l.queue, rec)
	n := len(l.queue)
	l.mu.Unlock()
	if n > 1 && n < maxQueuedRequests {
		return nil // already sent to the writer
	}
	if n == 1 && s.reqw != nil {
		select {
		case s.reqw.work <- l:
			return nil
		default: // the writer is busy with many histories: write it here
		}
	}
	l.file.Lock()
	err := l.flush()
	l.file.Unlock()
	return err
}

// flush takes the queued records and appends them to the history file.
// l.file is held, so queues taken one after another are written in order;
// l.mu is held only to take the queue.
func (l *requestLog) flush() error {
	l.mu.Lock()
	q := l.queue
	l.queue = nil
	l.mu.Unlock()
	if len(q) == 0 {
		return nil
	}
	var data []byte
	ends := make([]int, 0, len(q))
	for _, rec := range q {
		var err error
		if data, err = encodeRequest(data, rec); err != nil {
			return err
		}
		ends = append(ends, len(data))
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if errors.Is(err, fs.ErrNotExist) { // requests/ not made yet, or removed by hand since
		if err = makeRequestsDir(filepath.Dir(l.path)); err == nil {
			f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		}
	}
	if err != nil {
		return fmt.Errorf("open request history: %w", err)
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		l.ends = nil // unknown: the next trim reads the file
		return fmt.Errorf("append to request history: %w", err)
	}
	base := l.size()
	for _, e := range ends {
		l.ends = append(l.ends, base+e)
	}
	if len(l.ends) > RequestRetention+RequestRetention/2 {
		return l.trim(RequestRetention)
	}
	return nil
}

// readRequestHistory returns a conversation's request records, oldest
// first.
func (s *Store) readRequestHistory(id string) ([]RequestRecord, error) {
	l, err := s.history(id)
	if err != nil {
		return nil, err
	}
	defer l.file.Unlock()
	f, err := loadRequests(l.path, true)
	return f.recs, err
}

// encodeRequest appends rec to dst as one gzip member.
func encodeRequest(dst []byte, rec *RequestRecord) ([]byte, error) {
	line, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode request record: %w", err)
	}
	buf := bytes.NewBuffer(dst)
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(buf)
	_, werr := zw.Write(append(line, '\n'))
	if err := errors.Join(werr, zw.Close()); err != nil {
		return nil, fmt.Errorf("compress request record: %w", err)
	}
	return buf.Bytes(), nil
}

// gzipWriters keeps compressors between records: making one costs more
// than compressing a record.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed) // a valid level: no error
	return zw
}}

// requestFile is a request history as read.
type requestFile struct {
	data []byte
	// starts and ends are the offsets of the whole members, in order.
	starts, ends []int
	// recs are the records that decode, oldest first (when asked for).
	recs []RequestRecord
	// last is the body of the last whole member, kept when recs are not
	// decoded: numbering reads its records without decompressing it again.
	last []byte
	// good is where the last whole member ends: past it lies a member cut
	// short.
	good int
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// loadRequests reads the history at path (none: an empty one), and its
// records when decode is set. A damaged member is skipped (the reading
// resumes at the next member's header) and a record that does not decode
// is left out; both are kept in the file.
func loadRequests(path string, decode bool) (requestFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return requestFile{}, nil
	}
	if err != nil {
		return requestFile{}, fmt.Errorf("read request history: %w", err)
	}
	return parseRequests(data, decode), nil
}

// parseRequests is loadRequests on a history's bytes.
func parseRequests(data []byte, decode bool) requestFile {
	var f requestFile
	f.data = data
	var zr gzip.Reader
	var buf bytes.Buffer
	for off := 0; off < len(data); {
		body, n, err := readMember(&zr, &buf, data[off:])
		if err != nil {
			next := bytes.Index(data[off+1:], gzipMagic)
			if next < 0 {
				break // a member cut short: the end of what can be read
			}
			off += 1 + next
			continue
		}
		f.starts = append(f.starts, off)
		off += n
		f.ends = append(f.ends, off)
		f.good = off
		if decode {
			f.recs = appendRecords(f.recs, body)
		} else {
			f.last = append(f.last[:0], body...)
		}
	}
	return f
}

// readMember decompresses the gzip member data starts with, with zr (kept
// between members: making one costs more than a small member), into body,
// and returns body and the member's length in data.
func readMember(zr *gzip.Reader, body *bytes.Buffer, data []byte) ([]byte, int, error) {
	br := bytes.NewReader(data)
	if err := zr.Reset(br); err != nil {
		return nil, 0, err
	}
	zr.Multistream(false)
	body.Reset()
	if _, err := body.ReadFrom(zr); err != nil {
		return nil, 0, err
	}
	return body.Bytes(), len(data) - br.Len(), nil
}

// appendRecords appends the records of a member's body that decode.
func appendRecords(recs []RequestRecord, body []byte) []RequestRecord {
	for _, line := range bytes.Split(body, []byte{'\n'}) {
		var r RequestRecord
		if len(line) > 0 && json.Unmarshal(line, &r) == nil && r.Seq > 0 {
			recs = append(recs, r)
		}
	}
	return recs
}

// lastSeq is the sequence number of f's newest record that decodes (0:
// none), read from its last members only: the last one as loadRequests
// kept it, earlier ones (behind a last member whose records are damaged)
// decompressed again.
func (f requestFile) lastSeq() int {
	if n := len(f.recs); n > 0 {
		return f.recs[n-1].Seq
	}
	if recs := appendRecords(nil, f.last); len(recs) > 0 {
		return recs[len(recs)-1].Seq
	}
	var zr gzip.Reader
	var buf bytes.Buffer
	for i := len(f.starts) - 2; i >= 0; i-- {
		body, _, _ := readMember(&zr, &buf, f.data[f.starts[i]:f.ends[i]])
		if recs := appendRecords(nil, body); len(recs) > 0 {
			return recs[len(recs)-1].Seq
		}
	}
	return 0
}

// size is where the history's last whole member ends.
func (l *requestLog) size() int {
	if len(l.ends) == 0 {
		return 0
	}
	return l.ends[len(l.ends)-1]
}

// trim keeps the newest keep members of the history (atomically), copied
// as they are. The members' ends are the ones this process knows
// when the file is still the size they say; otherwise the file is read
// again to find them. l.file is held.
func (l *requestLog) trim(keep int) error {
	path := l.path
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read request history: %w", err)
	}
	ends, good := l.ends, l.size()
	if len(ends) == 0 || good != len(data) {
		f, err := loadRequests(path, false)
		if err != nil {
			return err
		}
		data, ends, good = f.data, f.ends, f.good
	}
	if len(ends) <= keep {
		l.ends = ends
		return nil
	}
	cut := ends[len(ends)-keep-1]
	if err := files.AtomicWrite(path, data[cut:good]); err != nil {
		return err
	}
	l.ends = make([]int, keep, RequestRetention*2)
	for i, e := range ends[len(ends)-keep:] {
		l.ends[i] = e - cut
	}
	return nil
}

// rewrite replaces the history with recs (atomically). l.file is held.
func (l *requestLog) rewrite(recs []RequestRecord) error {
	path := l.path
	var out []byte
	ends := make([]int, 0, max(len(recs), RequestRetention*2))
	for i := range recs {
		var err error
		if out, err = encodeRequest(out, &recs[i]); err != nil {
			return err
		}
		ends = append(ends, len(out))
	}
	if err := makeRequestsDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := files.AtomicWrite(path, out); err != nil {
		l.ends = nil // unknown: the next trim reads the file
		return err
	}
	l.ends = ends
	return nil
}

// readPlainRequests reads a history of an earlier version (plain JSON
// lines), oldest first, skipping lines that do not decode; nil if there is
// none.
func readPlainRequests(path string) ([]RequestRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read request history: %w", err)
	}
	out := []RequestRecord{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var r RequestRecord
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Seq > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// A history that holds records of recalls over every conversation (scope
// all), which name other conversations' turns ("<conversation>/t12"), has
// a marker beside it, <conversation file>.scope-all, made before the first
// such record is queued: a forget looks through those histories only, not
// through every conversation's. markersMade says the histories of earlier
// versions, which had no markers, were looked through once and marked.
const (
	scopeAllExt = ".scope-all"
	markersMade = "scope-all-markers-made"
)

// markerPath is the scope-all marker beside the history at l.path.
func (l *requestLog) markerPath() string {
	return strings.TrimSuffix(l.path, ".jsonl.gz") + scopeAllExt
}

// mark makes the history's scope-all marker, if it is not there.
func (l *requestLog) mark() error {
	path := l.markerPath()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err = makeRequestsDir(filepath.Dir(path)); err == nil {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
		}
	}
	if err != nil {
		return fmt.Errorf("mark the request history: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("mark the request history: %w", err)
	}
	l.marked.Store(true)
	return nil
}

// scopeAllHistories lists the conversations whose request histories hold
// records of recalls over every conversation. The first call on a data
// directory written by an earlier version looks through every history once
// and marks those that do.
func (s *Store) scopeAllHistories() ([]string, error) {
	dir := filepath.Join(s.opts.Dir, requestsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list request histories: %w", err)
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), scopeAllExt); ok && !e.IsDir() {
			names = append(names, name)
		}
	}
	var merr error
	if _, err := os.Stat(filepath.Join(dir, markersMade)); errors.Is(err, fs.ErrNotExist) {
		var marked []string
		marked, merr = markOldHistories(dir, entries)
		names = append(names, marked...)
	}
	ids := make([]string, 0, len(names))
	for _, name := range names {
		ids = append(ids, idFromFileName(name))
	}
	slices.Sort(ids)
	return slices.Compact(ids), merr
}

// makeRequestsDir makes the request histories' directory dir, if it is
// not there, and says in it that its histories need no looking through
// for markers (markOldHistories): they are all written with them.
func makeRequestsDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, markersMade), nil, 0o600)
}

// markOldHistories marks the histories in dir that hold a scope-all record
// and have no marker (written before markers were), then records that it
// ran; it returns the file names it marked. A history it cannot read is
// marked: the forget then decodes it. A marker it cannot make is an error,
// and the next call looks through the histories again; the names marked
// are returned with it.
func markOldHistories(dir string, entries []fs.DirEntry) ([]string, error) {
	var marked []string
	var errs []error
	have := map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), scopeAllExt); ok {
			have[name] = true
		}
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".jsonl.gz")
		var data []byte
		var err error
		if ok {
			if data, err = os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				data, err = gunzipAll(data)
			}
		} else if name, ok = strings.CutSuffix(e.Name(), ".jsonl"); ok {
			data, err = os.ReadFile(filepath.Join(dir, e.Name()))
		}
		if !ok || e.IsDir() || have[name] || err == nil && !bytes.Contains(data, []byte(`"scope":"all"`)) {
			continue
		}
		l := &requestLog{path: filepath.Join(dir, name+".jsonl.gz")}
		if err := l.mark(); err != nil {
			errs = append(errs, err)
			continue
		}
		have[name] = true
		marked = append(marked, name)
	}
	if len(errs) > 0 {
		return marked, errors.Join(errs...)
	}
	if err := os.WriteFile(filepath.Join(dir, markersMade), nil, 0o600); err != nil {
		return marked, fmt.Errorf("mark the request histories: %w", err)
	}
	return marked, nil
}

// gunzipAll returns the decompressed bytes of every member of data.
func gunzipAll(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
