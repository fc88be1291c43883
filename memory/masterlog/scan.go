package masterlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"
)

// Frame is one verified line of a master log: bytes [Start, End), the
// newline excluded.
type Frame struct {
	Seq        int
	Start, End int64
	Line       []byte // the line's bytes, without the newline
}

// Record decodes the frame's line (Decode).
func (f Frame) Record() (Record, error) { return Decode(f.Line) }

// Damage is a complete (newline-terminated) stretch of a master log that
// is not a valid record.
type Damage struct {
	Start, End int64 // the newline excluded
	Reason     string
	Data       []byte
}

// Scan reads a master log from r, starting at byte offset base. Each
// valid record goes to fn; each complete line that fails verification goes
// to bad (when not nil) and the scan goes on with the next line (like
// LevelDB's reader, it resynchronises at the next record boundary, and
// inside a damaged line at a record that opens later in it and verifies).
// White space after a record (a CR of CRLF line ends, spaces an editor
// left) is not part of it, and records that lost the newline between them
// are each read. It returns the offset after the last newline: bytes
// after it are an unterminated last record, a torn tail that was never
// acknowledged. An unterminated last line that verifies whole is a record
// that lost only its newline (an editor that saves without one, a copy cut
// by a byte): it goes to fn, and the offset returned is the file's end
// (the caller adds the newline before appending). An error from fn or bad
// ends the scan and is returned.
func Scan(r io.Reader, base int64, fn func(f Frame) error, bad func(d Damage) error) (int64, error) {
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
			body := bytes.TrimRight(line, trailingSpace)
			seq, verr := VerifyLine(body)
			if verr != nil {
				return off, nil // torn tail
			}
			if err := fn(Frame{Seq: seq, Start: off, End: off + int64(len(body)), Line: body}); err != nil {
				return off, err
			}
			return off + int64(len(line)), nil
		}
		if err := scanLine(line[:len(line)-1], off, fn, bad); err != nil {
			return off, err
		}
		off += int64(len(line))
	}
}

// trailingSpace is what may follow a record on its line.
const trailingSpace = " \t\r"

// scanLine reads the records of one complete line, its newline excluded,
// at offset off: one record, or several that lost the newlines between
// them, with damage before, between or after them.
func scanLine(body []byte, off int64, fn func(f Frame) error, bad func(d Damage) error) error {
	trimmed := bytes.TrimRight(body, trailingSpace)
	if len(trimmed) == 0 && len(body) > 0 {
		trimmed = body // a line of white space only is damage
	}
	seq, verr := VerifyLine(trimmed)
	if verr == nil {
		return fn(Frame{Seq: seq, Start: off, End: off + int64(len(trimmed)), Line: trimmed})
	}
	// Resynchronise inside the line: damage that ate a newline glues a
	// good record to the bad bytes before it, and a lost newline glues two
	// records.
	cut := -1
	for i := 1; i < len(body); i++ {
		j := recordOpening(body[i:])
		if j < 0 {
			break
		}
		i += j
		if _, err := VerifyLine(bytes.TrimRight(body[i:], trailingSpace)); err == nil {
			cut = i
			break
		}
	}
	if cut < 0 {
		if bad != nil {
			return bad(Damage{Start: off, End: off + int64(len(body)), Reason: verr.Error(), Data: body})
		}
		return nil
	}
	head := body[:cut]
	if _, err := VerifyLine(bytes.TrimRight(head, trailingSpace)); err == nil || recordOpening(head[1:]) >= 0 {
		// The part before holds records of its own (or may).
		if err := scanLine(head, off, fn, bad); err != nil {
			return err
		}
	} else if bad != nil {
		_, herr := VerifyLine(head)
		if err := bad(Damage{Start: off, End: off + int64(cut), Reason: herr.Error(), Data: head}); err != nil {
			return err
		}
	}
	rest := bytes.TrimRight(body[cut:], trailingSpace)
	seq, _ = VerifyLine(rest)
	return fn(Frame{Seq: seq, Start: off + int64(cut), End: off + int64(cut) + int64(len(rest)), Line: rest})
}

// recordOpening returns the offset of the first place in b where a record
// of any version may open, or -1.
func recordOpening(b []byte) int {
	i, j := bytes.Index(b, []byte(`{"v":`)), bytes.Index(b, []byte(`[4,`))
	if i < 0 || j >= 0 && j < i {
		return j
	}
	return i
}

// lineContent returns the content of a verified version 4 line: the fifth
// element of its array, after the version, sequence, role and name. Not ok
// for anything else (the caller decodes the line whole, with its errors).
func lineContent(line []byte) (string, bool) {
	if len(line) == 0 || line[0] != '[' {
		return "", false
	}
	if _, err := verifyArray(line); err != nil {
		return "", false
	}
	body := line[:len(line)-crcElemLen]
	i := 1
	for range 4 {
		j, ok := skipScalar(body, i)
		if !ok || j >= len(body) || body[j] != ',' {
			return "", false
		}
		i = j + 1
	}
	j, escaped, ok := scanString(body, i)
	if !ok || j >= len(body) || body[j] != ',' {
		return "", false
	}
	raw := body[i+1 : j-1]
	if !escaped && utf8.Valid(raw) {
		return string(raw), true
	}
	var s string
	if json.Unmarshal(body[i:j], &s) != nil {
		return "", false
	}
	return s, true
}

// skipScalar returns where the JSON number, string or null at b[i] ends.
func skipScalar(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		j, _, ok := scanString(b, i)
		return j, ok
	case c == 'n':
		if bytes.HasPrefix(b[i:], []byte("null")) {
			return i + 4, true
		}
		return 0, false
	case c == '-' || c >= '0' && c <= '9':
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		return j, true
	}
	return 0, false
}

// scanString returns where the JSON string at b[i] (its opening quote)
// ends, just past its closing quote, and whether it holds an escape.
func scanString(b []byte, i int) (end int, escaped, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false, false
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped, true
		}
	}
	return 0, false, false
}
