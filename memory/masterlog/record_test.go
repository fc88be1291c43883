package masterlog

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"
)

var t0 = time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)

// hashed gives r its message's hash, as the store does when it stores a
// message.
func hashed(r Record) Record {
	r.Hash = recordHash(r)
	return r
}

// Version 3 and 4 lines leave the hash out when the record's fields give it, and
// reading gives the same hash; a record whose fields do not give it keeps
// it.
func TestRecordHashLeftOutWhenDerivable(t *testing.T) {
	ts := t0
	plain := hashed(Record{Seq: 1, Role: "user", Name: "Ana", Content: "  the port is 8443  ", Timestamp: &ts, At: t0})
	untimed := hashed(Record{Seq: 2, Role: "assistant", Content: "noted", At: t0})
	forgotten := Record{Seq: 3, Role: "user", At: t0, Hash: plain.Hash, Forgotten: true}
	spaced := plain
	spaced.Seq, spaced.Raw = 4, json.RawMessage(`[ {"type": "text", "text": "the port is 8443"} ]`)
	spaced.Hash = recordHash(spaced) // hashed as sent, with its spaces
	for _, tt := range []struct {
		name     string
		r        Record
		withHash bool
	}{
		{"plain", plain, false},
		{"untimed", untimed, false},
		{"forgotten placeholder", forgotten, true},
		{"raw content JSON re-spaces", spaced, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			line, err := Encode(tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(line, []byte(`[4,`+strconv.Itoa(tt.r.Seq)+`,`)) {
				t.Fatalf("line %s", line)
			}
			if got := bytes.Contains(line, []byte(`"hash":`)); got != tt.withHash {
				t.Fatalf("hash written %v, want %v: %s", got, tt.withHash, line)
			}
			back, err := Decode(line)
			if err != nil {
				t.Fatal(err)
			}
			if back.Hash != tt.r.Hash || back.Content != tt.r.Content {
				t.Fatalf("decoded hash %q content %q, want %q %q", back.Hash, back.Content, tt.r.Hash, tt.r.Content)
			}
		})
	}
}

// TestPackageDocRecordsVerify: the version 4 line the package comment
// shows as the format's example verifies and decodes to what the comment
// says it holds.
func TestPackageDocRecordsVerify(t *testing.T) {
	data, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("//")))
		if !bytes.HasPrefix(line, []byte("[4,")) {
			continue
		}
		n++
		r, err := Decode(line)
		if err != nil {
			t.Errorf("documented record %s: %v", line, err)
			continue
		}
		if r.Seq != 7 || r.Role != "user" || r.Name != "Ana" || r.Content != "yes" || r.Timestamp == nil {
			t.Errorf("documented record %s decodes to %+v", line, r)
		}
	}
	if n == 0 {
		t.Fatal("no version 4 record in the package comment")
	}
}
