package requestlog

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// testRec is a record as a test writes it: package memory's has more
// fields, the same id, seq and scope.
type testRec struct {
	ID     string `json:"id"`
	Seq    int    `json:"seq"`
	Scope  string `json:"scope,omitempty"`
	Budget int    `json:"budget"`
}

func (r *testRec) SetSeq(seq int)               { r.Seq, r.ID = seq, "r"+strconv.Itoa(seq) }
func (r *testRec) MarshalLine() ([]byte, error) { return json.Marshal(r) }
func (r *testRec) ScopeAll() bool               { return r.Scope == "all" }

var testFormat = Format{
	Seq: func(line []byte) int {
		var r testRec
		if json.Unmarshal(line, &r) != nil {
			return 0
		}
		return r.Seq
	},
	ScopeAll: func(data []byte) bool { return bytes.Contains(data, []byte(`"scope":"all"`)) },
}

func historyPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "requests", "c"+Ext)
}

// appendT appends n records to h (with w, when not nil) and writes them.
func appendT(t *testing.T, h *History, w *Writer, n int, scope string) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := h.Append(&testRec{Budget: 1000 + i, Scope: scope}, w, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
}

// readSeqs reads h's records' sequence numbers, oldest first.
func readSeqs(t *testing.T, h *History) []int {
	t.Helper()
	lines, err := h.Read()
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, line := range lines {
		if seq := testFormat.Seq(line); seq > 0 {
			out = append(out, seq)
		}
	}
	return out
}

// TestMemberIsOneGzipWrite: a record's member is byte for byte what gzip
// at BestSpeed makes of its line and newline, as histories have always
// been written.
func TestMemberIsOneGzipWrite(t *testing.T) {
	line := []byte(`{"id":"r1","seq":1,"budget":1000,"memory":{"turn_ids":["t1","t2"]}}`)
	var want bytes.Buffer
	zw, err := gzip.NewWriterLevel(&want, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(append(slices.Clone(line), '\n'))
	zw.Close()
	got, err := appendMember([]byte("before"), line)
	if err != nil || !bytes.Equal(got, append([]byte("before"), want.Bytes()...)) {
		t.Fatalf("member %x, %v; want %x after the bytes before", got, err, want.Bytes())
	}
}

// TestWriterWritesWhatIsSent: records appended through the writer are
// numbered from 1 and written in order, by the time Stop returns.
func TestWriterWritesWhatIsSent(t *testing.T) {
	path := historyPath(t)
	h := New(path, testFormat)
	w := StartWriter(func(err error) { t.Error(err) })
	for i := 0; i < 100; i++ {
		r := &testRec{Budget: i}
		if err := h.Append(r, w, nil); err != nil || r.Seq != i+1 || r.ID != "r"+strconv.Itoa(i+1) {
			t.Fatalf("append %d: %+v, %v", i, r, err)
		}
	}
	w.Stop()
	got := readSeqs(t, New(path, testFormat))
	if len(got) != 100 || got[0] != 1 || got[99] != 100 || !slices.IsSorted(got) {
		t.Fatalf("history holds %v, want 1 to 100", got)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), MarkersMade)); err != nil {
		t.Errorf("a new histories' directory says nothing of markers: %v", err)
	}
}

// TestHistoryDamage: a member cut short at the end is cut off on the next
// open and the numbering goes on; a damaged member inside loses its
// record only.
func TestHistoryDamage(t *testing.T) {
	path := historyPath(t)
	appendT(t, New(path, testFormat), nil, 4, "")
	f, err := load(path, true, nil)
	if err != nil || len(f.ends) != 4 {
		t.Fatalf("%d members, %v", len(f.ends), err)
	}
	// Damage the second member's compressed bytes, then cut the last
	// member short.
	data := append([]byte(nil), f.data...)
	for i := f.ends[0] + 12; i < f.ends[0]+20; i++ {
		data[i] ^= 0xff
	}
	data = data[:f.ends[3]-5]
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h := New(path, testFormat) // as the next process does
	if got := readSeqs(t, h); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("after damage: records %v, want [1 3] (2 damaged, 4 cut short)", got)
	}
	appendT(t, h, nil, 1, "")
	if got := readSeqs(t, h); !slices.Equal(got, []int{1, 3, 4}) {
		t.Fatalf("after one more: records %v, want the new one numbered 4 last", got)
	}
}

// TestNumberingReadsBackToADecodableRecord: numbering reads the newest
// members only, so it must step back over members that are damaged or hold
// no record that decodes, and start at 1 when none does.
func TestNumberingReadsBackToADecodableRecord(t *testing.T) {
	member := func(body string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(body))
		zw.Close()
		return b.Bytes()
	}
	rec := func(seq int) []byte {
		return member(`{"id":"r` + strconv.Itoa(seq) + `","seq":` + strconv.Itoa(seq) + "}\n")
	}
	broken := func(m []byte) []byte {
		m = append([]byte(nil), m...)
		for i := 12; i < len(m)-8; i++ {
			m[i] ^= 0xff
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		members [][]byte
		next    int
	}{
		{"none", nil, 1},
		{"whole", [][]byte{rec(1), rec(2), rec(3)}, 4},
		{"last not JSON", [][]byte{rec(1), rec(2), member("not json\n")}, 3},
		{"last damaged", [][]byte{rec(1), rec(2), broken(rec(3))}, 3},
		{"last two unreadable", [][]byte{rec(1), rec(7), member("{}\n"), broken(rec(9))}, 8},
		{"nothing decodes", [][]byte{member("x\n"), broken(rec(2))}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c"+Ext)
			if err := os.WriteFile(path, bytes.Join(tc.members, nil), 0o600); err != nil {
				t.Fatal(err)
			}
			h := New(path, testFormat)
			if err := h.Open(); err != nil || h.Next() != tc.next {
				t.Errorf("next %d, %v; want %d", h.Next(), err, tc.next)
			}
		})
	}
}

// TestTrimAfterOutsideChange: the history is trimmed at the member ends
// this history knows, unless the file changed under it (here another
// history on the same file trimmed it): then it is read again, and the
// newest records are still the ones kept, whole and in order.
func TestTrimAfterOutsideChange(t *testing.T) {
	path := historyPath(t)
	h := New(path, testFormat)
	appendT(t, h, nil, Retention+20, "")
	other := New(path, testFormat)
	if err := other.Open(); err != nil {
		t.Fatal(err)
	}
	other.file.Lock()
	err := other.trim(7)
	other.file.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	appendT(t, h, nil, 2*Retention, "")
	total := 3*Retention + 20
	recs := readSeqs(t, h)
	all, err := load(path, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(records(all.lines, testFormat.Seq)); n != len(all.ends) || all.good != len(all.data) {
		t.Fatalf("file holds %d records in %d members, %d of %d bytes whole", n, len(all.ends), all.good, len(all.data))
	}
	if len(recs) < Retention || recs[len(recs)-1] != total {
		t.Fatalf("got %d records, newest %d; want at least %d, newest %d", len(recs), recs[len(recs)-1], Retention, total)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i] != recs[i-1]+1 {
			t.Fatalf("record %d is seq %d after %d: not contiguous", i, recs[i], recs[i-1])
		}
	}
}

// TestRetention: a history is trimmed to the newest Retention records
// once it holds half as many more, and never holds more than that.
func TestRetention(t *testing.T) {
	path := historyPath(t)
	h := New(path, testFormat)
	n := Retention + Retention/2 + 10
	appendT(t, h, nil, n, "")
	got := readSeqs(t, h)
	if len(got) > Retention+Retention/2 || got[len(got)-1] != n || got[0] > n-Retention+1 {
		t.Fatalf("history holds %d records, %d to %d; want at most %d, the newest %d ending at %d", len(got), got[0], got[len(got)-1], Retention+Retention/2, Retention, n)
	}
	f, err := load(path, true, nil)
	if err != nil || len(f.ends) != len(got) || f.good != len(f.data) {
		t.Fatalf("file holds %d members for %d records, %d of %d bytes whole, %v", len(f.ends), len(got), f.good, len(f.data), err)
	}
}

// TestPlainHistoryMovesIn: a history written as plain JSON lines by an
// earlier version is moved into the compressed file, each record line as
// it was and before the compressed file's records; those both hold (a
// move cut short) are kept once, the compressed file's. The plain file is
// removed and the numbering goes on.
func TestPlainHistoryMovesIn(t *testing.T) {
	plainRec := func(seq int) string {
		return `{"id":"r` + strconv.Itoa(seq) + `","seq":` + strconv.Itoa(seq) + `,"budget":7}`
	}
	gzRec := func(seq int) string {
		return `{"id":"r` + strconv.Itoa(seq) + `","seq":` + strconv.Itoa(seq) + `,"budget":1000}`
	}
	for _, tc := range []struct {
		name       string
		plain      []string
		compressed []string
		want       []string
	}{
		{"plain only", []string{plainRec(1), "not json", `{"id":"r2","seq":2,"extra":true}`}, nil,
			[]string{plainRec(1), `{"id":"r2","seq":2,"extra":true}`}},
		{"move cut short", []string{plainRec(1), plainRec(2)}, []string{gzRec(1), gzRec(2)}, []string{gzRec(1), gzRec(2)}},
		{"newer compressed", []string{plainRec(1), plainRec(2)}, []string{gzRec(3)}, []string{plainRec(1), plainRec(2), gzRec(3)}},
		{"empty plain", nil, []string{gzRec(1)}, []string{gzRec(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := historyPath(t)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			var gz []byte
			for _, line := range tc.compressed {
				var err error
				if gz, err = appendMember(gz, []byte(line)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(path, gz, 0o600); err != nil {
				t.Fatal(err)
			}
			legacy := filepath.Join(filepath.Dir(path), "c"+PlainExt)
			var plain []byte
			for _, line := range tc.plain {
				plain = append(append(plain, line...), '\n')
			}
			if err := os.WriteFile(legacy, plain, 0o600); err != nil {
				t.Fatal(err)
			}
			h := New(path, testFormat)
			lines, err := h.Read()
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(lines))
			for i, line := range lines {
				got[i] = string(line)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("lines %q, want %q", got, tc.want)
			}
			if _, err := os.Stat(legacy); !os.IsNotExist(err) {
				t.Fatalf("the plain history is still there: %v", err)
			}
			if want := testFormat.Seq([]byte(tc.want[len(tc.want)-1])) + 1; h.Next() != want {
				t.Fatalf("next %d after the move, want %d", h.Next(), want)
			}
		})
	}
}
