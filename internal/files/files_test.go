package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestChanges(t *testing.T) {
	tests := []struct {
		name          string
		before, after map[string]string
		want          []string
	}{
		{"same", map[string]string{"a": "1", "d/": "t"}, map[string]string{"a": "1", "d/": "t"}, nil},
		{"changed", map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1", "b": "3"}, []string{"changed b"}},
		{"added and removed", map[string]string{"a": "1", "b": "2"}, map[string]string{"b": "2", "c": "3", "0": "x"}, []string{"removed a", "added 0", "added c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Changes(tt.before, tt.after); !slices.Equal(got, tt.want) {
				t.Errorf("Changes = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStateSeesEveryWrite: a copy, a rewrite with the same bytes (only the
// time moves), and a file added then removed (only the directory's time
// moves) each change the state.
func TestStateSeesEveryWrite(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "a")
	if err := os.WriteFile(src, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{src, dir} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	state := func() map[string]string {
		st, err := State(dir)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	s0 := state()
	if err := Copy(src, filepath.Join(dir, "sub", "b"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := Changes(s0, state()); !slices.Equal(got, []string{"changed ./", "added sub/", "added sub/b"}) {
		t.Errorf("after a copy: %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "b")); err != nil || string(b) != "one" {
		t.Errorf("copy holds %q, %v", b, err)
	}
	if err := Copy(src, filepath.Join(dir, "sub", "b"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("copy over an existing file: %v, want fs.ErrExist", err)
	}
	s1 := state()
	if err := os.WriteFile(src, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := Changes(s1, state()); !slices.Equal(got, []string{"changed a"}) {
		t.Errorf("after rewriting the same bytes: %q", got)
	}
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	s2 := state()
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	if got := Changes(s2, state()); !slices.Equal(got, []string{"changed ./"}) {
		t.Errorf("after a file came and went: %q", got)
	}
}

// TestAppendOnlyWrites: OpenAppendOnly creates the file and its directory
// owner-only and keeps what an earlier open wrote; WriteAt writes at its
// offset, and WriteHook fails it before anything is written.
func TestAppendOnlyWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "a.jsonl")
	f, err := OpenAppendOnly(path, "test log")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := WriteAt(f, []byte("one\n"), 0); n != 4 || err != nil {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Fatalf("new file: %v, %v", st.Mode(), err)
	}
	if f, err = OpenAppendOnly(path, "test log"); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	full := errors.New("disk full")
	var hooked string
	WriteHook = func(p string) error { hooked = p; return full }
	_, err = WriteAt(f, []byte("two\n"), 4)
	WriteHook = nil
	if !errors.Is(err, full) || hooked != path {
		t.Fatalf("hooked write: %v on %q", err, hooked)
	}
	if _, err := WriteAt(f, []byte("two\n"), 4); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("file holds %q, %v", b, err)
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		t.Errorf("SyncDir: %v", err)
	}
	if err := SyncDir(filepath.Join(filepath.Dir(path), "missing")); err == nil {
		t.Error("SyncDir of a missing directory succeeded")
	}
	if _, err := OpenAppendOnly(filepath.Join(path, "below a file"), "test log"); err == nil || !strings.Contains(err.Error(), "test log") {
		t.Errorf("opening below a file: %v, want an error naming the test log", err)
	}
}

func TestAtomicWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	for _, data := range []string{"first\n", "second, longer\n", ""} {
		if err := AtomicWrite(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != data {
			t.Fatalf("after writing %q: %q, %v", data, got, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want the one written (no temporary file left)", len(entries))
	}
	if err := AtomicWrite(filepath.Join(dir, "missing", "x"), []byte("x")); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}
