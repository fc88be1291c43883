package decisionlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// Log is one conversation's decisions file, open for appending. Its
// methods are safe for concurrent use; the order of the records is the
// caller's (the store holds the conversation's writer lock).
type Log struct {
	path  string
	mu    sync.Mutex
	f     *os.File
	end   int64 // where the next record goes
	dirty bool  // written since the last fsync
}

// Open opens (creating, owner-only, with its directory) the decisions log
// at path and scans it for its end. A torn last line is left for the next
// append to overwrite; damaged complete lines stay where they are.
func Open(path string) (*Log, error) {
	f, err := files.OpenAppendOnly(path, "decisions log")
	if err != nil {
		return nil, err
	}
	res, err := Scan(f, 0, nil)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("read decisions log %s: %w", path, err)
	}
	return &Log{path: path, f: f, end: res.End}, nil
}

// Path is the log's file.
func (l *Log) Path() string { return l.path }

// End is the offset after the last record: where the next one goes.
func (l *Log) End() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

// Append writes body's line (Frame) at the end of the log, fsyncing when
// sync is set, and returns the offset after it.
func (l *Log) Append(body []byte, sync bool) (int64, error) {
	return l.AppendAll([][]byte{body}, sync)
}

// AppendAll writes the lines of bodies, in order and in one write, at the
// end of the log, fsyncing when sync is set, and returns the offset after
// the last. It writes nothing when a body is empty or holds a newline.
func (l *Log) AppendAll(bodies [][]byte, sync bool) (int64, error) {
	if len(bodies) == 0 {
		return l.End(), nil
	}
	n := 0
	for _, b := range bodies {
		if len(b) == 0 || bytes.IndexByte(b, '\n') >= 0 {
			return 0, errors.New("append to decisions log: a record must be one non-empty line")
		}
		n += len(b) + sumLen + 2
	}
	lines := make([]byte, 0, n)
	for _, b := range bodies {
		lines = AppendFrame(lines, b)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// On failure the file is cut back to where the append began (best
	// effort, as for the master log): whole lines the disk took of a
	// failed append would otherwise be read as records by the next Open,
	// applying what the caller was told failed.
	start := l.end
	if _, err := files.WriteAt(l.f, lines, start); err != nil {
		_ = l.f.Truncate(start)
		return 0, fmt.Errorf("append to decisions log: %w", err)
	}
	end := start + int64(len(lines))
	if err := l.f.Truncate(end); err != nil {
		_ = l.f.Truncate(start)
		return 0, fmt.Errorf("trim decisions log: %w", err)
	}
	l.end, l.dirty = end, true
	if sync {
		if err := l.syncLocked(); err != nil {
			_ = l.f.Truncate(start)
			l.end = start
			return 0, err
		}
	}
	return end, nil
}

// Sync fsyncs the log if anything was written since the last fsync.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncLocked()
}

func (l *Log) syncLocked() error {
	if !l.dirty {
		return nil
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("fsync decisions log: %w", err)
	}
	l.dirty = false
	return nil
}

// Close fsyncs what was written since the last fsync and closes the file.
func (l *Log) Close() error {
	err := l.Sync()
	return errors.Join(err, l.f.Close())
}
