package memory

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// logRecord is one line of a master log: one message, verbatim, as it was
// stored. The master log is append-only and is the source of truth; every
// other structure is derived from it.
type logRecord struct {
	V          int             `json:"v"`
	Seq        int             `json:"seq"`
	Role       string          `json:"role"`
	Name       string          `json:"name,omitempty"`
	Content    string          `json:"content"`
	Raw        json.RawMessage `json:"raw,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolUse    bool            `json:"tool_use,omitempty"`
	ToolResult bool            `json:"tool_result,omitempty"`
	Timestamp  *time.Time      `json:"ts,omitempty"`
	At         time.Time       `json:"at"`
	Hash       string          `json:"hash"`
}

func recordFrom(seq int, t turnInput, at time.Time) logRecord {
	r := logRecord{
		V: 1, Seq: seq, Role: t.Role, Name: t.Name, Content: t.Text, Raw: t.Raw,
		ToolCalls: t.ToolCalls, ToolCallID: t.ToolCallID, ToolUse: t.ToolUse, ToolResult: t.ToolResult,
		At: at.UTC(), Hash: hex.EncodeToString(t.Hash[:]),
	}
	if t.HasTime {
		ts := t.Timestamp
		r.Timestamp = &ts
	}
	return r
}

// when is the time the message was said: its timestamp, or when it was stored.
func (r logRecord) when() time.Time {
	if r.Timestamp != nil {
		return *r.Timestamp
	}
	return r.At
}

// masterLog is one conversation's append-only JSONL file.
type masterLog struct {
	path string
	f    *os.File // opened for reading and appending
}

func openMasterLog(path string) (*masterLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open master log: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// A new file's directory entry must be durable too.
		if err := syncDir(filepath.Dir(path)); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return &masterLog{path: path, f: f}, nil
}

// appendRecords writes records at offset end (the log's committed size) and
// fsyncs. It returns each record's byte range. Writing at an explicit offset
// rather than O_APPEND overwrites any torn tail a crash left behind.
func (l *masterLog) appendRecords(end int64, recs []logRecord) ([][2]int64, error) {
	var buf bytes.Buffer
	ranges := make([][2]int64, len(recs))
	off := end
	for i, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode log record: %w", err)
		}
		ranges[i] = [2]int64{off, off + int64(len(line))}
		buf.Write(line)
		buf.WriteByte('\n')
		off += int64(len(line)) + 1
	}
	if _, err := l.f.WriteAt(buf.Bytes(), end); err != nil {
		return nil, fmt.Errorf("append to master log: %w", err)
	}
	if err := l.f.Truncate(off); err != nil {
		return nil, fmt.Errorf("trim master log: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return nil, fmt.Errorf("fsync master log: %w", err)
	}
	return ranges, nil
}

// read returns the record in bytes [start, end).
func (l *masterLog) read(start, end int64) (logRecord, error) {
	var r logRecord
	if end <= start || end-start > 64<<20 {
		return r, fmt.Errorf("read master log %s: bad range %d-%d", l.path, start, end)
	}
	buf := make([]byte, end-start)
	if _, err := l.f.ReadAt(buf, start); err != nil {
		return r, fmt.Errorf("read master log %s at %d: %w", l.path, start, err)
	}
	if err := json.Unmarshal(buf, &r); err != nil {
		return r, fmt.Errorf("decode master log %s at %d: %w", l.path, start, err)
	}
	return r, nil
}

func (l *masterLog) size() (int64, error) {
	st, err := l.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat master log: %w", err)
	}
	return st.Size(), nil
}

func (l *masterLog) close() error { return l.f.Close() }

// scanLog reads complete records from r, starting at byte offset base, and
// calls fn for each with its byte range. It stops at the first line that is
// not a complete, valid record (a torn tail left by a crash: it was never
// acknowledged) and returns the offset where valid data ends.
func scanLog(r io.Reader, base int64, fn func(rec logRecord, start, end int64) error) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	off := base
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return off, nil
		}
		if err != nil && err != io.EOF {
			return off, fmt.Errorf("read master log: %w", err)
		}
		if line[len(line)-1] != '\n' {
			return off, nil // torn tail
		}
		body := line[:len(line)-1]
		var rec logRecord
		if json.Unmarshal(body, &rec) != nil || rec.V != 1 || rec.Seq <= 0 {
			return off, nil
		}
		if err := fn(rec, off, off+int64(len(body))); err != nil {
			return off, err
		}
		off += int64(len(line))
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory for fsync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
