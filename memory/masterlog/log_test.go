package masterlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLogAppendReadCut: records appended at the committed end read back
// by their byte ranges, open or released; an append past the file's real
// end is refused; Cut, Replace and Successor leave the file they say.
func TestLogAppendReadCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "c.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	recs := []Record{
		hashed(Record{Seq: 1, Role: "user", Name: "Ana", Content: "the port is 8443", At: t0}),
		hashed(Record{Seq: 2, Role: "assistant", Content: "noted \"8443\"", At: t0, ID: "m-2"}),
	}
	ranges, err := l.Append(0, recs)
	if err != nil {
		t.Fatal(err)
	}
	size, err := l.Size()
	if err != nil || size != ranges[1][1]+1 || ranges[1][0] != ranges[0][1]+1 {
		t.Fatalf("size %d (%v), ranges %v", size, err, ranges)
	}
	check := func(when string) {
		t.Helper()
		for i, r := range ranges {
			got, err := l.Read(r[0], r[1])
			if err != nil || got.Content != recs[i].Content || got.Hash != recs[i].Hash || got.ID != recs[i].ID {
				t.Fatalf("%s: record %d reads %+v, %v", when, i+1, got, err)
			}
			if s, err := l.ReadContent(r[0], r[1]); err != nil || s != recs[i].Content {
				t.Fatalf("%s: content %d reads %q, %v", when, i+1, s, err)
			}
		}
		if _, err := l.Read(ranges[0][0], ranges[0][1]-1); !errors.Is(err, ErrDamaged) {
			t.Fatalf("%s: a wrong range reads %v, want ErrDamaged", when, err)
		}
	}
	check("open")
	if err := l.Release(); err != nil || l.IsOpen() {
		t.Fatalf("release: %v, open %v", err, l.IsOpen())
	}
	check("released")
	if _, err := l.Append(size+1, recs[:1]); !errors.Is(err, errShrunk) {
		t.Fatalf("append past the end: %v", err)
	}
	if err := l.Cut(ranges[1][0]); err != nil {
		t.Fatal(err)
	}
	if size, _ := l.Size(); size != ranges[1][0] {
		t.Fatalf("cut to %d, size %d", ranges[1][0], size)
	}
	data, _ := os.ReadFile(path)
	if err := l.Replace(append(data, data...)); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil { // Windows cannot rename over an open file
		t.Fatal(err)
	}
	n, err := l.Successor(data)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if !n.IsOpen() || n.Path() != path {
		t.Fatalf("successor open %v at %q", n.IsOpen(), n.Path())
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Fatalf("after the successor: %q", got)
	}
	if err := n.AppendLines(ranges[0][1], nil); err == nil {
		t.Fatal("AppendLines at a wrong end succeeded")
	}
	line, _ := Encode(recs[1])
	if err := n.AppendLines(int64(len(data)), [][]byte{line}); err != nil {
		t.Fatal(err)
	}
	if got, err := n.Read(int64(len(data)), int64(len(data)+len(line))); err != nil || got.Seq != 2 {
		t.Fatalf("appended line reads %+v, %v", got, err)
	}
}
