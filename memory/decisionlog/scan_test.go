package decisionlog

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"testing/iotest"
)

// lineAt describes one line Scan gave: its range and whether it verified.
type lineAt struct {
	start, end int64
	ok         bool
}

func scanAll(t *testing.T, data []byte, base int64) ([]lineAt, Result) {
	t.Helper()
	var got []lineAt
	res, err := Scan(bytes.NewReader(data), base, func(l Line) error {
		if l.OK != (l.Body != nil) {
			t.Fatalf("line at %d: OK %v with body %q", l.Start, l.OK, l.Body)
		}
		got = append(got, lineAt{l.Start, l.End, l.OK})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, res
}

// TestScan: every complete line is given, damaged ones too, and moves the
// end; only an unterminated last line is a torn tail.
func TestScan(t *testing.T) {
	a, b := string(Frame([]byte(`{"kind":"a"}`))), string(Frame([]byte(`{"kind":"bb"}`)))
	la, lb := int64(len(a)), int64(len(b))
	bad := "c678c119 {\"kind\":\"tagz\"}\n" // the checksum of another body
	lbad := int64(len(bad))
	for _, tc := range []struct {
		name  string
		data  string
		base  int64
		lines []lineAt
		end   int64
		torn  bool
	}{
		{"empty", "", 0, nil, 0, false},
		{"empty at base", "", 100, nil, 100, false},
		{"one", a, 0, []lineAt{{0, la, true}}, la, false},
		{"two at base", a + b, 7, []lineAt{{7, 7 + la, true}, {7 + la, 7 + la + lb, true}}, 7 + la + lb, false},
		{"torn tail", a + b[:5], 0, []lineAt{{0, la, true}}, la, true},
		{"torn tail of a whole record", a + b[:len(b)-1], 0, []lineAt{{0, la, true}}, la, true},
		{"torn only", a[:3], 0, nil, 0, true},
		{"damaged line skipped, end moves on", a + bad + b, 0,
			[]lineAt{{0, la, true}, {la, la + lbad, false}, {la + lbad, la + lbad + lb, true}}, la + lbad + lb, false},
		{"damaged last line is not torn", a + bad, 0, []lineAt{{0, la, true}, {la, la + lbad, false}}, la + lbad, false},
		{"blank line", a + "\n" + b, 0, []lineAt{{0, la, true}, {la, la + 1, false}, {la + 1, la + 1 + lb, true}}, la + 1 + lb, false},
		{"short line", "abc\n", 0, []lineAt{{0, 4, false}}, 4, false},
		{"line without the space", "c678c119{\"kind\":\"tags\"}\n", 0, []lineAt{{0, 24, false}}, 24, false},
		{"two records glued by lost newline", a[:len(a)-1] + b, 0, []lineAt{{0, la - 1 + lb, false}}, la - 1 + lb, false},
		{"damaged then torn", bad + a[:4], 0, []lineAt{{0, lbad, false}}, lbad, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, res := scanAll(t, []byte(tc.data), tc.base)
			if fmt.Sprint(got) != fmt.Sprint(tc.lines) {
				t.Errorf("lines %v, want %v", got, tc.lines)
			}
			if res.End != tc.end || res.Torn != tc.torn {
				t.Errorf("end %d torn %v, want %d %v", res.End, res.Torn, tc.end, tc.torn)
			}
			// Without fn, the same end.
			res2, err := Scan(bytes.NewReader([]byte(tc.data)), tc.base, nil)
			if err != nil || res2 != res {
				t.Errorf("without fn: %+v, %v; with: %+v", res2, err, res)
			}
		})
	}
}

// TestScanErrors: fn's error ends the scan after its line; a read error is
// returned wrapped.
func TestScanErrors(t *testing.T) {
	a := Frame([]byte(`{"kind":"a"}`))
	data := bytes.Repeat(a, 3)
	stop := errors.New("stop")
	n := 0
	res, err := Scan(bytes.NewReader(data), 0, func(l Line) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 || res.End != 2*int64(len(a)) {
		t.Errorf("fn error: n %d, end %d, err %v; want 2, %d, stop", n, res.End, err, 2*len(a))
	}
	boom := errors.New("boom")
	_, err = Scan(iotest.ErrReader(boom), 0, nil)
	if !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
}

// FuzzScan: every line Scan gives lies end to end from base, ends in a
// newline, verifies exactly when Body says so, and the end and torn flag
// account for every byte; Frame's lines verify back to their body.
func FuzzScan(f *testing.F) {
	f.Add([]byte(string(Frame([]byte(`{"kind":"tags"}`)))+"c678c119 {\"kind\":\"tagz\"}\n"+"\n"+"abc"), int64(0))
	f.Add([]byte("96bc41c7 {\"kind\":\"working\",\"at\":\"2026-11-24T02:29:58.457Z\"}\n96bc41"), int64(12))
	f.Add([]byte("\n\n\xff"), int64(3))
	f.Add([]byte(""), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, base int64) {
		if base < 0 || base > 1<<40 {
			base = 0
		}
		off := base
		res, err := Scan(bytes.NewReader(data), base, func(l Line) error {
			if l.Start != off || l.End <= l.Start || l.End-base > int64(len(data)) {
				t.Fatalf("line %d-%d after %d (base %d, %d bytes)", l.Start, l.End, off, base, len(data))
			}
			line := data[l.Start-base : l.End-base]
			if line[len(line)-1] != '\n' || bytes.IndexByte(line[:len(line)-1], '\n') >= 0 {
				t.Fatalf("line %q is not one line", line)
			}
			body, ok := Body(line[:len(line)-1])
			if ok != l.OK || !bytes.Equal(body, l.Body) {
				t.Fatalf("line %q: OK %v body %q, Body says %v %q", line, l.OK, l.Body, ok, body)
			}
			if ok && !bytes.Equal(Frame(body), line) {
				t.Fatalf("verified line %q is not Frame of its body", line)
			}
			off = l.End
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.End != off {
			t.Fatalf("end %d, lines end at %d", res.End, off)
		}
		if rest := int64(len(data)) - (res.End - base); res.Torn != (rest > 0) {
			t.Fatalf("torn %v with %d bytes after the end", res.Torn, rest)
		}
		if body := bytes.ReplaceAll(data, []byte("\n"), nil); len(body) > 0 {
			if got, ok := Body(bytes.TrimSuffix(Frame(body), []byte("\n"))); !ok || !bytes.Equal(got, body) {
				t.Fatalf("Frame(%q) does not verify back: %q %v", body, got, ok)
			}
		}
	})
}
