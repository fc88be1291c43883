package decisionlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func openT(t *testing.T, path string) *Log {
	t.Helper()
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func appendT(t *testing.T, l *Log, body string, sync bool) int64 {
	t.Helper()
	end, err := l.Append([]byte(body), sync)
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// TestLog: a new log (and its directory) is created owner-only; appends go
// at its end, framed, and report it; a reopened log ends where it did.
func TestLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions", "c.log")
	l := openT(t, path)
	if l.Path() != path || l.End() != 0 {
		t.Fatalf("new log: path %q end %d", l.Path(), l.End())
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm()&0o077 != 0 && os.PathSeparator == '/' {
		t.Fatalf("new log file: %v %v", st, err)
	}
	a, b := `{"kind":"a"}`, `{"kind":"bb"}`
	want := string(Frame([]byte(a)))
	if end := appendT(t, l, a, false); end != int64(len(want)) || l.End() != end {
		t.Fatalf("first append ends at %d (End %d), want %d", end, l.End(), len(want))
	}
	want += string(Frame([]byte(b)))
	if end := appendT(t, l, b, true); end != int64(len(want)) {
		t.Fatalf("second append ends at %d, want %d", end, len(want))
	}
	if got := readFile(t, path); got != want {
		t.Fatalf("file %q, want %q", got, want)
	}
	if err := l.Sync(); err != nil { // nothing to fsync
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]byte(a), true); err == nil {
		t.Fatal("append to a closed log succeeded")
	}
	l = openT(t, path)
	defer l.Close()
	if l.End() != int64(len(want)) {
		t.Fatalf("reopened log ends at %d, want %d", l.End(), len(want))
	}
}

// TestLogTornTail: a torn last line is left by Open and overwritten by the
// next append, whether it was longer or shorter than the new record;
// damaged complete lines stay where they are.
func TestLogTornTail(t *testing.T) {
	good := string(Frame([]byte(`{"kind":"a"}`)))
	bad := "c678c119 {\"kind\":\"tagz\"}\n"
	next := `{"kind":"next"}`
	for _, tc := range []struct{ name, before, want string }{
		{"long torn tail", good + strings.Repeat("x", 200), good + string(Frame([]byte(next)))},
		{"short torn tail", good + "1", good + string(Frame([]byte(next)))},
		{"torn tail only", "c678c1", string(Frame([]byte(next)))},
		{"damaged line kept", good + bad + "torn", good + bad + string(Frame([]byte(next)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.log")
			if err := os.WriteFile(path, []byte(tc.before), 0o600); err != nil {
				t.Fatal(err)
			}
			l := openT(t, path)
			defer l.Close()
			if untorn := int64(strings.LastIndexByte(tc.before, '\n') + 1); l.End() != untorn {
				t.Fatalf("End %d, want %d", l.End(), untorn)
			}
			if got := readFile(t, path); got != tc.before {
				t.Fatalf("Open changed the file to %q", got)
			}
			if end := appendT(t, l, next, true); end != int64(len(tc.want)) {
				t.Fatalf("append ends at %d, want %d", end, len(tc.want))
			}
			if got := readFile(t, path); got != tc.want {
				t.Fatalf("file %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLogAppendAll: several records go in one write; none, or a body that
// is empty or holds a newline, writes nothing.
func TestLogAppendAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	l := openT(t, path)
	defer l.Close()
	bodies := [][]byte{[]byte(`{"kind":"a"}`), []byte(`{"kind":"b"}`), []byte(`{"kind":"c"}`)}
	var want []byte
	for _, b := range bodies {
		want = AppendFrame(want, b)
	}
	if end, err := l.AppendAll(bodies, true); err != nil || end != int64(len(want)) {
		t.Fatalf("AppendAll: %d, %v; want %d", end, err, len(want))
	}
	if end, err := l.AppendAll(nil, true); err != nil || end != int64(len(want)) {
		t.Fatalf("AppendAll(nil): %d, %v", end, err)
	}
	for _, bad := range [][][]byte{{[]byte("{}"), nil}, {[]byte("{\n}")}, {{}}} {
		if _, err := l.AppendAll(bad, true); err == nil {
			t.Errorf("AppendAll(%q) succeeded", bad)
		}
	}
	if got := readFile(t, path); got != string(want) || l.End() != int64(len(want)) {
		t.Fatalf("file %q (End %d), want %q", got, l.End(), want)
	}
}

// TestLogWriteFails: a failed write leaves the end where it was, and the
// next append goes there.
func TestLogWriteFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	l := openT(t, path)
	defer l.Close()
	first := appendT(t, l, `{"kind":"a"}`, false)
	files.WriteHook = func(string) error { return syscall.ENOSPC }
	_, err := l.Append([]byte(`{"kind":"lost"}`), true)
	files.WriteHook = nil
	if !errors.Is(err, syscall.ENOSPC) || l.End() != first {
		t.Fatalf("failed append: %v, End %d; want ENOSPC, %d", err, l.End(), first)
	}
	appendT(t, l, `{"kind":"b"}`, true)
	want := string(Frame([]byte(`{"kind":"a"}`))) + string(Frame([]byte(`{"kind":"b"}`)))
	if got := readFile(t, path); got != want {
		t.Fatalf("file %q, want %q", got, want)
	}
	if _, err := Open(filepath.Join(path, "not-a-dir", "c.log")); err == nil {
		t.Fatal("Open under a file succeeded")
	}
}

// TestLogPartialWriteIsCutBack: a write the disk took part of (here two
// whole lines of three, then ENOSPC) leaves no record behind it: the
// store was told the append failed, so the next Open must not read it.
func TestLogPartialWriteIsCutBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	l := openT(t, path)
	first := appendT(t, l, `{"kind":"a"}`, true)
	bodies := [][]byte{[]byte(`{"kind":"x1"}`), []byte(`{"kind":"x2"}`), []byte(`{"kind":"x3"}`)}
	files.WriteHook = func(p string) error {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		part := append(Frame(bodies[0]), Frame(bodies[1])...)
		if _, err := f.WriteAt(part, first); err != nil {
			return err
		}
		return syscall.ENOSPC
	}
	_, err := l.AppendAll(bodies, true)
	files.WriteHook = nil
	if !errors.Is(err, syscall.ENOSPC) || l.End() != first {
		t.Fatalf("failed append: %v, End %d; want ENOSPC, %d", err, l.End(), first)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, path), string(Frame([]byte(`{"kind":"a"}`))); got != want {
		t.Fatalf("file after the failed append %q, want %q", got, want)
	}
	var bodiesRead []string
	if _, err := Scan(strings.NewReader(readFile(t, path)), 0, func(ln Line) error {
		bodiesRead = append(bodiesRead, string(ln.Body))
		return nil
	}); err != nil || len(bodiesRead) != 1 {
		t.Fatalf("records read back: %q, %v; want the one before the failed append", bodiesRead, err)
	}
}
