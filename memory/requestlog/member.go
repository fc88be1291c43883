package requestlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// Format is what this package knows of the records, which are otherwise
// opaque lines of JSON.
type Format struct {
	// Seq returns the sequence number of a record's line; 0 (or less)
	// says the line is not a record (it does not decode).
	Seq func(line []byte) int
	// ScopeAll reports whether data, one or more lines, holds a record of
	// a recall over every conversation (one that needs its history's
	// marker). It may say yes for data that holds none (the marker is then
	// kept needlessly), never no for data that holds one.
	ScopeAll func(data []byte) bool
}

// appendMember appends line, a record's JSON without its newline, to dst
// as one gzip member (on an error, dst is returned as it was).
func appendMember(dst, line []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(buf)
	_, werr := zw.Write(line)
	_, nerr := zw.Write(newline)
	if err := errors.Join(werr, nerr, zw.Close()); err != nil {
		return dst, fmt.Errorf("compress request record: %w", err)
	}
	return buf.Bytes(), nil
}

var newline = []byte{'\n'}

// gzipWriters keeps compressors between records: making one costs more
// than compressing a record.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed) // a valid level: no error
	return zw
}}

// file is a history as read.
type file struct {
	data []byte
	// starts and ends are the offsets of the whole members, in order.
	starts, ends []int
	// scopeAll says, for each whole member, whether it holds a scope-all
	// record (when parse was given Format.ScopeAll).
	scopeAll []bool
	// lines are the non-empty lines of the whole members, oldest first
	// (when asked for).
	lines [][]byte
	// last is the body of the last whole member, kept when lines are not
	// collected: numbering reads its records without decompressing it
	// again.
	last []byte
	// good is where the last whole member ends: past it lies a member cut
	// short.
	good int
}

// dirty reports whether the file holds bytes outside its whole members:
// a damaged one skipped, or one cut short at its end.
func (f file) dirty() bool {
	whole := 0
	for i := range f.ends {
		whole += f.ends[i] - f.starts[i]
	}
	return whole != len(f.data)
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// load reads the history at path (none: an empty one), and its lines when
// lines is set; with scopeAll (Format.ScopeAll), which members hold a
// scope-all record.
func load(path string, lines bool, scopeAll func([]byte) bool) (file, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return file{}, nil
	}
	if err != nil {
		return file{}, fmt.Errorf("read request history: %w", err)
	}
	return parse(data, lines, scopeAll), nil
}

// parse is load on a history's bytes. A damaged member is skipped: the
// reading resumes at the next member's header.
func parse(data []byte, lines bool, scopeAll func([]byte) bool) file {
	var f file
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
		if scopeAll != nil {
			f.scopeAll = append(f.scopeAll, scopeAll(body))
		}
		if lines {
			f.lines = appendLines(f.lines, body)
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

// appendLines appends copies of the non-empty lines of a member's body.
func appendLines(lines [][]byte, body []byte) [][]byte {
	for line := range bytes.SplitSeq(body, newline) {
		if len(line) > 0 {
			lines = append(lines, bytes.Clone(line))
		}
	}
	return lines
}

// records keeps the lines that are records (seq > 0), in place.
func records(lines [][]byte, seq func([]byte) int) [][]byte {
	out := lines[:0]
	for _, line := range lines {
		if seq(line) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// lastSeq is the sequence number of the last record in body (0: none).
func lastSeq(body []byte, seq func([]byte) int) int {
	last := 0
	for line := range bytes.SplitSeq(body, newline) {
		if len(line) == 0 {
			continue
		}
		if n := seq(line); n > 0 {
			last = n
		}
	}
	return last
}

// lastSeq is the sequence number of f's newest record (0: none), read
// from its last members only (f was parsed without its lines): the last
// one as parse kept it, earlier ones
// (behind a last member whose records are damaged) decompressed again.
func (f file) lastSeq(seq func([]byte) int) int {
	if s := lastSeq(f.last, seq); s > 0 {
		return s
	}
	var zr gzip.Reader
	var buf bytes.Buffer
	for i := len(f.starts) - 2; i >= 0; i-- {
		body, _, _ := readMember(&zr, &buf, f.data[f.starts[i]:f.ends[i]])
		if s := lastSeq(body, seq); s > 0 {
			return s
		}
	}
	return 0
}

// readPlain reads a history of an earlier version (plain JSON lines): the
// lines that are records, oldest first; found says whether there is one.
func readPlain(path string, seq func([]byte) int) (lines [][]byte, found bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read request history: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if seq(sc.Bytes()) > 0 {
			lines = append(lines, bytes.Clone(sc.Bytes()))
		}
	}
	return lines, true, nil
}

// gunzipAll returns the decompressed bytes of every member of data.
func gunzipAll(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
