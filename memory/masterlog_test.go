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
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

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
		r.V = masterlog.VersionHashed
		body, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&old, `%s,"crc":"%08x"}`+"\n", body[:len(body)-1], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
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
		r.V = masterlog.VersionObject
		if i != 2 {
			r.Hash = "" // the fields give it
		} else {
			r.ID = "kept-hash" // not part of the hash: written with it all the same
		}
		body, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&old, `%s,"crc":"%08x"}`+"\n", body[:len(body)-1], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
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
