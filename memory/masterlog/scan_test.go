package masterlog

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"
)

func FuzzScanLog(f *testing.F) {
	f.Add([]byte(`{"v":1,"seq":1,"role":"user","content":"hi","at":"2024-01-01T00:00:00Z","hash":"x"}` + "\n"))
	f.Add([]byte("{\"v\":1,\"seq\":1}\n{torn"))
	f.Add([]byte(`[4,1,"user","","The staging port is 8443.","2024-03-01T09:00:00Z","2026-11-23T12:00:00Z","2e00f16f"]` + "\n" + `[4,2,"assistant","","Noted.",null,"2026-11-23T12:00:00Z",{"id":"m-2"},"67389c7a"]` + "\n[4,3,"))
	f.Add([]byte("\n\n\xff"))
	f.Add([]byte(`{"v":2,"seq":1,"role":"user","content":"hi","at":"0001-01-01T00:00:00Z","hash":"","crc":"00000000"}` + "\n"))
	f.Add([]byte("\x00\x00\x00{\"v\":1,\"seq\":3}\n"))
	f.Add([]byte(`[4,1,"user","","a","2024-03-01T09:00:00Z","2026-11-23T12:00:00Z","x"]` + "\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		last := int64(0)
		end, err := Scan(bytes.NewReader(data), 0, func(fr Frame) error {
			if fr.Start < last || fr.End > int64(len(data)) || fr.End < fr.Start || fr.Seq <= 0 {
				t.Fatalf("bad frame %d-%d (seq %d) of %d", fr.Start, fr.End, fr.Seq, len(data))
			}
			if !bytes.Equal(data[fr.Start:fr.End], fr.Line) {
				t.Fatalf("frame bytes differ from the input at %d", fr.Start)
			}
			rec, err := fr.Record()
			if err != nil {
				t.Fatalf("verified frame does not decode: %v", err)
			}
			if s, ok := lineContent(fr.Line); ok && s != rec.Content {
				t.Fatalf("content read from the line %q, decoded %q", s, rec.Content)
			}
			last = fr.End
			return nil
		}, func(d Damage) error {
			if d.Start < last || d.End > int64(len(data)) || d.End < d.Start || !bytes.Equal(data[d.Start:d.End], d.Data) {
				t.Fatalf("bad damage range %d-%d of %d", d.Start, d.End, len(data))
			}
			last = d.End
			return nil
		})
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		if end < last || end > int64(len(data)) {
			t.Fatalf("end %d outside %d..%d", end, last, len(data))
		}
		// The end is after a newline, or the input's end when its last
		// line is a record that lost only its newline.
		if end > 0 && data[end-1] != '\n' && (end != int64(len(data)) || last <= int64(bytes.LastIndexByte(data, '\n'))) {
			t.Fatalf("end %d is not after a newline, nor after a last record", end)
		}
	})
}

// FuzzLogDamage writes a framed log, overwrites some of its bytes, and
// checks that every record the damage did not touch is read back intact and
// that no damaged record is served.
func FuzzLogDamage(f *testing.F) {
	f.Add(uint8(20), uint16(300), []byte("GARBAGE!"))
	f.Add(uint8(3), uint16(0), []byte("\n\n"))
	f.Add(uint8(9), uint16(120), []byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, n uint8, at uint16, garbage []byte) {
		var buf bytes.Buffer
		var ranges [][2]int64
		var lines [][]byte
		for i := 1; i <= int(n%40)+1; i++ {
			line, err := Encode(Record{Seq: i, Role: "user", Content: fmt.Sprintf("message %d with some words", i), At: time.Unix(int64(i), 0).UTC(), Hash: "h"})
			if err != nil {
				t.Fatal(err)
			}
			ranges = append(ranges, [2]int64{int64(buf.Len()), int64(buf.Len() + len(line))})
			lines = append(lines, line)
			buf.Write(line)
			buf.WriteByte('\n')
		}
		data := buf.Bytes()
		lo := int64(at) % int64(len(data))
		hi := min(int64(len(data)), lo+int64(len(garbage)))
		changed := copy(data[lo:hi], garbage) > 0
		got := map[int]bool{}
		_, err := Scan(bytes.NewReader(data), 0, func(fr Frame) error {
			if fr.Seq < 1 || fr.Seq > len(lines) || !bytes.Equal(fr.Line, lines[fr.Seq-1]) {
				t.Fatalf("served a record that was not written: seq %d %q", fr.Seq, fr.Line)
			}
			got[fr.Seq] = true
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range ranges {
			// A record survives when neither its bytes nor its newline were
			// touched, and it is not the last line with its newline intact.
			touched := changed && lo < r[1]+1 && hi > r[0]
			if !touched && !got[i+1] {
				t.Fatalf("record %d (bytes %d-%d) untouched by damage at %d-%d but lost", i+1, r[0], r[1], lo, hi)
			}
		}
	})
}

// TestLineContentMatchesDecode: the content read straight from a version 4
// line is the decoded record's, for every kind of text; a line that is not
// a verified version 4 record is left to the whole decoder.
func TestLineContentMatchesDecode(t *testing.T) {
	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    Record
	}{
		{"plain", Record{Seq: 1, Role: "user", Content: "the cache job failed on friday"}},
		{"empty", Record{Seq: 2, Role: "assistant", Content: ""}},
		{"named, timed", Record{Seq: 3, Role: "user", Name: "Caroline", Content: "I went to the LGBTQ support group", Timestamp: &ts}},
		{"escapes", Record{Seq: 4, Role: "user", Content: "quote \" backslash \\ tab \t newline \n html <b>&amp;</b> \u2028"}},
		{"unicode", Record{Seq: 5, Role: "user", Content: "Grüße, 東京 🚀 — ok"}},
		{"invalid utf-8", Record{Seq: 6, Role: "user", Content: "bad \xff byte"}},
		{"name with a quote", Record{Seq: 7, Role: "user", Name: `O"Neil, [x]`, Content: "a, b, c"}},
		{"rare members", Record{Seq: 8, Role: "tool", Content: "[1,2]", ToolCallID: "call_1", Hash: "abc"}},
		{"numbers", Record{Seq: 1234567, Role: "user", Content: "-1e5, 3.14"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.At = ts
			line, err := Encode(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Decode(line)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := lineContent(line)
			if !ok || got != want.Content {
				t.Fatalf("lineContent = %q, %v; decoded %q", got, ok, want.Content)
			}
			// One flipped byte: the checksum fails, and so must the shortcut.
			bad := slices.Clone(line)
			bad[len(bad)/2] ^= 0x20
			if s, ok := lineContent(bad); ok {
				t.Fatalf("a damaged line gave %q", s)
			}
		})
	}
	for _, line := range []string{``, `[`, `{"v":1,"seq":1,"role":"user","content":"x"}`, `[4,1,"user","",`} {
		if s, ok := lineContent([]byte(line)); ok {
			t.Errorf("lineContent(%q) = %q, want not ok", line, s)
		}
	}
}
