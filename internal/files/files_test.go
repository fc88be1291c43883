package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
