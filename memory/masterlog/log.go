package masterlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// Log is one conversation's append-only JSONL file. Its methods are safe
// for concurrent use; appends are serialised by the caller (the store
// holds the conversation's writer lock).
type Log struct {
	path string
	mu   sync.RWMutex // guards f
	f    *os.File     // opened for reading and writing; nil once released
}

// Open opens (creating, owner-only) the master log at path and holds it
// open. A new file's directory entry is fsync'd so the file itself
// survives a crash.
func Open(path string) (*Log, error) {
	f, err := files.OpenAppendOnly(path, "master log")
	if err != nil {
		return nil, err
	}
	return &Log{path: path, f: f}, nil
}

// Path is the log's file.
func (l *Log) Path() string { return l.path }

// IsOpen reports whether the log holds its file open (its conversation is
// loaded).
func (l *Log) IsOpen() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.f != nil
}

// File returns the open log file, or, once the log was released (its
// conversation unloaded), the file opened for this one use. Call done after.
func (l *Log) File() (f *os.File, done func(), err error) {
	l.mu.RLock()
	if l.f != nil {
		return l.f, l.mu.RUnlock, nil
	}
	l.mu.RUnlock()
	f, err = os.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open master log: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
}

// Release closes the log's file handle; later uses open it for each use.
func (l *Log) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Close closes the log's file handle, like Release.
func (l *Log) Close() error { return l.Release() }

// Append writes recs, encoded (Encode), at offset end (the log's committed
// size) and fsyncs. It returns each record's byte range, its newline
// excluded. Writing at an explicit offset rather than O_APPEND overwrites
// any torn tail a crash left behind. It refuses to write past the file's
// real end: a log cut short outside vc-mcp would otherwise get a hole of
// zero bytes before the new records.
func (l *Log) Append(end int64, recs []Record) ([][2]int64, error) {
	f, done, err := l.File()
	if err != nil {
		return nil, err
	}
	defer done()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat master log: %w", err)
	}
	size := st.Size()
	if size < end {
		return nil, fmt.Errorf("%w: %s is %d bytes but %d were committed", errShrunk, l.path, size, end)
	}
	var buf bytes.Buffer
	ranges := make([][2]int64, len(recs))
	off := end
	for i, r := range recs {
		line, err := Encode(r)
		if err != nil {
			return nil, err
		}
		ranges[i] = [2]int64{off, off + int64(len(line))}
		buf.Write(line)
		buf.WriteByte('\n')
		off += int64(len(line)) + 1
	}
	// On failure the log is cut back to end (best effort: were that to fail
	// too, the next load quarantines what is left as a torn tail or replays
	// complete lines, which alignment then takes as resent).
	if _, err := files.WriteAt(f, buf.Bytes(), end); err != nil {
		_ = f.Truncate(end)
		return nil, fmt.Errorf("append to master log %s: %w", l.path, err)
	}
	if err := f.Truncate(off); err != nil {
		_ = f.Truncate(end)
		return nil, fmt.Errorf("trim master log: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Truncate(end)
		return nil, fmt.Errorf("fsync master log: %w", err)
	}
	return ranges, nil
}

// AppendLines appends verified master log lines (without newlines) at the
// committed end and fsyncs, refusing a log that is not exactly that long.
// One empty line ends a last record that lost its newline (see Scan).
func (l *Log) AppendLines(end int64, lines [][]byte) error {
	f, done, err := l.File()
	if err != nil {
		return err
	}
	defer done()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat master log: %w", err)
	}
	if st.Size() != end {
		return fmt.Errorf("%w: %s is %d bytes but %d were committed", errShrunk, l.path, st.Size(), end)
	}
	var buf bytes.Buffer
	for _, line := range lines {
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if _, err := files.WriteAt(f, buf.Bytes(), end); err != nil {
		_ = f.Truncate(end)
		return fmt.Errorf("append to master log %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Truncate(end)
		return fmt.Errorf("fsync master log %s: %w", l.path, err)
	}
	return nil
}

// errShrunk: the master log is shorter than what was committed.
var errShrunk = errors.New("master log shorter than committed")

// Read returns the record in bytes [start, end), verified. A damaged record
// gives an error wrapping ErrDamaged.
func (l *Log) Read(start, end int64) (Record, error) {
	var r Record
	if end <= start || end-start > 64<<20 {
		return r, fmt.Errorf("read master log %s: %w: no readable range %d-%d", l.path, ErrDamaged, start, end)
	}
	f, done, err := l.File()
	if err != nil {
		return r, err
	}
	defer done()
	buf := make([]byte, end-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return r, fmt.Errorf("read master log %s at %d: %w", l.path, start, err)
	}
	r, err = Decode(buf)
	if err != nil {
		return r, fmt.Errorf("read master log %s at %d: %w", l.path, start, err)
	}
	return r, nil
}

// ReadContent returns the content of the record in bytes [start, end),
// verified: all that packing a turn needs. A version 4 record's content is
// taken from its line without decoding the rest; other records are
// decoded whole. A damaged record gives an error wrapping ErrDamaged.
func (l *Log) ReadContent(start, end int64) (string, error) {
	if end <= start || end-start > 64<<20 {
		return "", fmt.Errorf("read master log %s: %w: no readable range %d-%d", l.path, ErrDamaged, start, end)
	}
	f, done, err := l.File()
	if err != nil {
		return "", err
	}
	defer done()
	buf := make([]byte, end-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return "", fmt.Errorf("read master log %s at %d: %w", l.path, start, err)
	}
	if s, ok := lineContent(buf); ok {
		return s, nil
	}
	r, err := Decode(buf)
	if err != nil {
		return "", fmt.Errorf("read master log %s at %d: %w", l.path, start, err)
	}
	return r.Content, nil
}

// Size is the size of the log's file.
func (l *Log) Size() (int64, error) {
	st, err := os.Stat(l.path)
	if err != nil {
		return 0, fmt.Errorf("stat master log: %w", err)
	}
	return st.Size(), nil
}

// Cut truncates the log to n bytes and fsyncs it.
func (l *Log) Cut(n int64) error {
	f, done, err := l.File()
	if err != nil {
		return err
	}
	defer done()
	if err := f.Truncate(n); err != nil {
		return fmt.Errorf("cut master log %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync master log %s: %w", l.path, err)
	}
	return nil
}

// Successor puts data in place as the log's new file, atomically
// (temporary file, fsync, rename, fsync of the directory), and returns the
// new file as a new Log.
// l keeps its handle on the old file, for the readers still on it, until
// it is released. Where an open file cannot be renamed over (Windows),
// use Replace.
func (l *Log) Successor(data []byte) (*Log, error) {
	if err := files.AtomicWrite(l.path, data); err != nil {
		return nil, err
	}
	if err := files.SyncDir(filepath.Dir(l.path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("reopen master log: %w", err)
	}
	return &Log{path: l.path, f: f}, nil
}

// Replace swaps the log's file for data, atomically (temporary file,
// fsync, rename, fsync of the directory), and reopens the file if the log
// held it open. Its
// handle is closed meanwhile: Windows cannot rename over an open file.
func (l *Log) Replace(data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	had := l.f != nil
	if had { // Windows cannot rename over an open file
		_ = l.f.Close()
		l.f = nil
	}
	err := files.AtomicWrite(l.path, data)
	if err == nil {
		err = files.SyncDir(filepath.Dir(l.path))
	}
	if had {
		f, oerr := os.OpenFile(l.path, os.O_RDWR, 0)
		if oerr != nil {
			return errors.Join(err, fmt.Errorf("reopen master log: %w", oerr))
		}
		l.f = f
	}
	return err
}
