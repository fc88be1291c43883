package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	f.Fuzz(func(t *testing.T, data []byte) {
		last := int64(0)
		end, err := scanLog(bytes.NewReader(data), 0, func(fr frame) error {
			if fr.Start < last || fr.End > int64(len(data)) || fr.End < fr.Start || fr.Seq <= 0 {
				t.Fatalf("bad frame %d-%d (seq %d) of %d", fr.Start, fr.End, fr.Seq, len(data))
			}
			if !bytes.Equal(data[fr.Start:fr.End], fr.line) {
				t.Fatalf("frame bytes differ from the input at %d", fr.Start)
			}
			rec, err := fr.record()
			if err != nil {
				t.Fatalf("verified frame does not decode: %v", err)
			}
			if s, ok := lineContent(fr.line); ok && s != rec.Content {
				t.Fatalf("content read from the line %q, decoded %q", s, rec.Content)
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

// Version 3 and 4 lines leave the hash out when the record's fields give it, and
// reading gives the same hash; a record whose fields do not give it keeps
// it.
func TestRecordHashLeftOutWhenDerivable(t *testing.T) {
	plain := recordFrom(1, mustNorm(t, msg("user", "Ana", "  the port is 8443  ", t0)), t0)
	untimed := recordFrom(2, mustNorm(t, Message{Role: "assistant", Content: json.RawMessage(`"noted"`)}), t0)
	forgotten := logRecord{Seq: 3, Role: "user", At: t0, Hash: plain.Hash, Forgotten: true}
	spaced := plain
	spaced.Seq, spaced.Raw = 4, json.RawMessage(`[ {"type": "text", "text": "the port is 8443"} ]`)
	spaced.Hash = recordHash(spaced) // hashed as sent, with its spaces
	for _, tt := range []struct {
		name     string
		r        logRecord
		withHash bool
	}{
		{"plain", plain, false},
		{"untimed", untimed, false},
		{"forgotten placeholder", forgotten, true},
		{"raw content JSON re-spaces", spaced, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			line, err := encodeRecord(tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(line, []byte(`[4,`+strconv.Itoa(tt.r.Seq)+`,`)) {
				t.Fatalf("line %s", line)
			}
			if got := bytes.Contains(line, []byte(`"hash":`)); got != tt.withHash {
				t.Fatalf("hash written %v, want %v: %s", got, tt.withHash, line)
			}
			back, err := decodeRecord(line)
			if err != nil {
				t.Fatal(err)
			}
			if back.Hash != tt.r.Hash || back.Content != tt.r.Content {
				t.Fatalf("decoded hash %q content %q, want %q %q", back.Hash, back.Content, tt.r.Hash, tt.r.Content)
			}
		})
	}
}

// A log written in format version 2 (every line with its hash) reads as
// before, and new version 3 records follow it in the same file.
func TestVersion2LogStillReads(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	path := s.logPath("old")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var old bytes.Buffer
	for i, m := range chat(6, t0) {
		r := recordFrom(i+1, mustNorm(t, m), t0)
		r.V = logVersionHashed
		body, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&old, `%s,"crc":"%08x"}`+"\n", body[:len(body)-1], crc32.Checksum(body, castagnoli))
	}
	if !bytes.Contains(old.Bytes(), []byte(`{"v":2,"seq":1,`)) || !bytes.Contains(old.Bytes(), []byte(`"hash":"`)) {
		t.Fatalf("not a version 2 log: %.200s", old.Bytes())
	}
	writeOldLog(t, path, old.Bytes())
	s = openTest(t, Options{Dir: dir})
	if got := readable(t, s, "old"); len(got) != 6 {
		t.Fatalf("%d version 2 turns readable, want 6", len(got))
	}
	// The same messages sent again are recognised by their hash.
	if res := ingest(t, s, "old", chat(6, t0)); res.Stored != 0 {
		t.Fatalf("resending the version 2 turns stored %d again", res.Stored)
	}
	ingest(t, s, "old", []Message{msg("user", "Ana", "written as version 4", t0.Add(time.Hour))})
	if got := readable(t, s, "old"); len(got) != 7 || got[7] != "written as version 4" {
		t.Fatalf("after a write: %v", got)
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasPrefix(data, old.Bytes()) || !bytes.HasPrefix(data[old.Len():], []byte(`[4,7,`)) || bytes.Contains(data[old.Len():], []byte(`"hash"`)) {
		t.Fatalf("version 2 bytes changed or the new record is not version 4 without its hash:\n%s", data[old.Len():])
	}
}

// TestVersion3LogStillReads: a log of version 3 lines (JSON objects, the
// hash left out when the fields give it, one a forgotten-style record
// that keeps it) reads as before, its messages are recognised when
// resent, and new records follow as version 4 in the same file.
func TestVersion3LogStillReads(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	path := s.logPath("old")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var old bytes.Buffer
	msgs := chat(6, t0)
	for i, m := range msgs {
		r := recordFrom(i+1, mustNorm(t, m), t0.Add(1234567*time.Nanosecond)) // version 3 kept nanoseconds
		r.At = t0.Add(1234567 * time.Nanosecond)
		r.V = logVersionObject
		if i != 2 {
			r.Hash = "" // the fields give it
		} else {
			r.ID = "kept-hash" // not part of the hash: written with it all the same
		}
		body, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&old, `%s,"crc":"%08x"}`+"\n", body[:len(body)-1], crc32.Checksum(body, castagnoli))
	}
	if !bytes.HasPrefix(old.Bytes(), []byte(`{"v":3,"seq":1,`)) || bytes.Count(old.Bytes(), []byte(`"hash":"`)) != 1 || !bytes.Contains(old.Bytes(), []byte(`.001234567Z"`)) {
		t.Fatalf("not a version 3 log: %.300s", old.Bytes())
	}
	writeOldLog(t, path, old.Bytes())
	s = openTest(t, Options{Dir: dir})
	got := readable(t, s, "old")
	if len(got) != 6 {
		t.Fatalf("%d version 3 turns readable, want 6", len(got))
	}
	for i := range msgs {
		if want := mustNorm(t, msgs[i]).Text; got[i+1] != want {
			t.Errorf("turn %d reads %q, want %q", i+1, got[i+1], want)
		}
	}
	if res := ingest(t, s, "old", msgs); res.Stored != 0 {
		t.Fatalf("resending the version 3 turns stored %d again", res.Stored)
	}
	ingest(t, s, "old", []Message{msg("user", "Ana", "written as version 4", t0.Add(time.Hour))})
	if got := readable(t, s, "old"); len(got) != 7 || got[7] != "written as version 4" {
		t.Fatalf("after a write: %v", got)
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasPrefix(data, old.Bytes()) || !bytes.HasPrefix(data[old.Len():], []byte(`[4,7,"user","Ana","written as version 4",`)) {
		t.Fatalf("version 3 bytes changed or the new record is not version 4:\n%s", data[old.Len():])
	}
	// Reopened, the mixed log reads whole, and a rebuild gives the same.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Rebuild(context.Background(), Options{Dir: dir}, nil); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	if got := readable(t, s, "old"); len(got) != 7 || got[3] != mustNorm(t, msgs[2]).Text || got[7] != "written as version 4" {
		t.Fatalf("after a rebuild: %v", got)
	}
}

// messageHash is "<len>:<part>|" over the parts, as it was written with
// fmt: stored hashes (resends, tombstones, decisions) keep matching.
func TestMessageHashParts(t *testing.T) {
	for i, in := range []turnInput{
		{Role: "user", Text: "  hi  "},
		{Role: "assistant", Name: "Ana", Text: "ünïcode ✓", Raw: json.RawMessage(`[{"type":"text"}]`), ToolCalls: json.RawMessage(`[1]`), ToolCallID: "c1", HasTime: true, Timestamp: t0.Add(1500 * time.Millisecond)},
		{Role: "tool", ToolCallID: "x", HasTime: true, Timestamp: time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("", 3600))},
	} {
		h := sha256.New()
		ts := ""
		if in.HasTime {
			ts = in.Timestamp.Format(time.RFC3339Nano)
		}
		for _, part := range []string{in.Role, in.Name, strings.TrimSpace(in.Text), string(in.Raw), string(in.ToolCalls), in.ToolCallID, ts} {
			fmt.Fprintf(h, "%d:%s|", len(part), part)
		}
		var want [32]byte
		copy(want[:], h.Sum(nil))
		if got := messageHash(in); got != want {
			t.Errorf("case %d: hash %x, want %x", i, got, want)
		}
	}
}

// TestLineContentMatchesDecode: the content read straight from a version 4
// line is the decoded record's, for every kind of text; a line that is not
// a verified version 4 record is left to the whole decoder.
func TestLineContentMatchesDecode(t *testing.T) {
	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    logRecord
	}{
		{"plain", logRecord{Seq: 1, Role: "user", Content: "the cache job failed on friday"}},
		{"empty", logRecord{Seq: 2, Role: "assistant", Content: ""}},
		{"named, timed", logRecord{Seq: 3, Role: "user", Name: "Caroline", Content: "I went to the LGBTQ support group", Timestamp: &ts}},
		{"escapes", logRecord{Seq: 4, Role: "user", Content: "quote \" backslash \\ tab \t newline \n html <b>&amp;</b> \u2028"}},
		{"unicode", logRecord{Seq: 5, Role: "user", Content: "Grüße, 東京 🚀 — ok"}},
		{"invalid utf-8", logRecord{Seq: 6, Role: "user", Content: "bad \xff byte"}},
		{"name with a quote", logRecord{Seq: 7, Role: "user", Name: `O"Neil, [x]`, Content: "a, b, c"}},
		{"rare members", logRecord{Seq: 8, Role: "tool", Content: "[1,2]", ToolCallID: "call_1", Hash: "abc"}},
		{"numbers", logRecord{Seq: 1234567, Role: "user", Content: "-1e5, 3.14"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.At = ts
			line, err := encodeRecord(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			want, err := decodeRecord(line)
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

// writeOldLog puts a log written by an earlier version at path.
func writeOldLog(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
