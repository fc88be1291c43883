package memory

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

func FuzzScanLog(f *testing.F) {
	f.Add([]byte(`{"v":1,"seq":1,"role":"user","content":"hi","at":"2024-01-01T00:00:00Z","hash":"x"}` + "\n"))
	f.Add([]byte("{\"v\":1,\"seq\":1}\n{torn"))
	f.Add([]byte("\n\n\xff"))
	f.Add([]byte(`{"v":2,"seq":1,"role":"user","content":"hi","at":"0001-01-01T00:00:00Z","hash":"","crc":"00000000"}` + "\n"))
	f.Add([]byte("\x00\x00\x00{\"v\":1,\"seq\":3}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		last := int64(0)
		end, err := scanLog(bytes.NewReader(data), 0, func(fr frame) error {
			if fr.Start < last || fr.End > int64(len(data)) || fr.End < fr.Start || fr.Seq <= 0 {
				t.Fatalf("bad frame %d-%d (seq %d) of %d", fr.Start, fr.End, fr.Seq, len(data))
			}
			if !bytes.Equal(data[fr.Start:fr.End], fr.line) {
				t.Fatalf("frame bytes differ from the input at %d", fr.Start)
			}
			if _, err := fr.record(); err != nil {
				t.Fatalf("verified frame does not decode: %v", err)
			}
			last = fr.End
			return nil
		}, func(d logDamage) error {
			if d.Start < last || d.End > int64(len(data)) || d.End < d.Start || !bytes.Equal(data[d.Start:d.End], d.Data) {
				t.Fatalf("bad damage range %d-%d of %d", d.Start, d.End, len(data))
			}
			last = d.End
			return nil
		})
		if err != nil {
			t.Fatalf("scanLog: %v", err)
		}
		if end < last || end > int64(len(data)) {
			t.Fatalf("end %d outside %d..%d", end, last, len(data))
		}
		if end > 0 && data[end-1] != '\n' {
			t.Fatalf("end %d is not after a newline", end)
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
			line, err := encodeRecord(logRecord{Seq: i, Role: "user", Content: fmt.Sprintf("message %d with some words", i), At: time.Unix(int64(i), 0).UTC(), Hash: "h"})
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
		_, err := scanLog(bytes.NewReader(data), 0, func(fr frame) error {
			if fr.Seq < 1 || fr.Seq > len(lines) || !bytes.Equal(fr.line, lines[fr.Seq-1]) {
				t.Fatalf("served a record that was not written: seq %d %q", fr.Seq, fr.line)
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
