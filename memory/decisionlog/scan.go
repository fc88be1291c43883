package decisionlog

import (
	"bufio"
	"fmt"
	"io"
)

// Line is one complete line of a decisions log: bytes [Start, End), its
// newline included.
type Line struct {
	Start, End int64
	// OK reports whether the line's checksum holds (Body).
	OK bool
	// Body is the line's verified body, nil when not OK. The caller may
	// keep it.
	Body []byte
}

// Result is what Scan read.
type Result struct {
	// End is the offset after the last complete line.
	End int64
	// Torn reports an unterminated last line after End: a torn append,
	// overwritten by the next one.
	Torn bool
}

// Scan reads the complete lines of a decisions log from r, positioned at
// byte offset base, and calls fn, when not nil, with each of them, those
// whose checksum does not hold included (not OK): what to report and
// skip is the caller's. It stops at the end of r or before an
// unterminated last line (Result.Torn). An error from fn ends the scan and
// is returned, with End after the line fn was given.
func Scan(r io.Reader, base int64, fn func(l Line) error) (Result, error) {
	res := Result{End: base}
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return res, nil
		}
		if err != nil && err != io.EOF {
			return res, fmt.Errorf("read decisions: %w", err)
		}
		if line[len(line)-1] != '\n' {
			res.Torn = true
			return res, nil
		}
		l := Line{Start: res.End, End: res.End + int64(len(line))}
		res.End = l.End
		if fn == nil {
			continue
		}
		l.Body, l.OK = Body(line[:len(line)-1])
		if err := fn(l); err != nil {
			return res, err
		}
	}
}
