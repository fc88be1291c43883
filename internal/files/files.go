// Package files copies files and fingerprints directory trees, for the
// store's read-only snapshots and for tests that check a directory was
// left untouched.
package files

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Copy copies the regular file src to dst, which must not exist, creating
// dst's directory (owner-only) and giving dst the permissions perm.
func Copy(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// State fingerprints the tree under dir: each file by its content's
// SHA-256 and its modification time, each directory by its modification
// time (which changes when an entry is added or removed), keyed by path
// relative to dir (directories end in "/"). Two equal states mean no file
// under dir was written, added or removed in between; modes and owners are
// not compared.
func State(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel+"/"] = info.ModTime().String()
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%x %s", sha256.Sum256(b), info.ModTime())
		return nil
	})
	return out, err
}

// Changes lists how after differs from before: entries changed, added and
// removed, one line each, sorted by path within each kind.
func Changes(before, after map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(before) {
		if v, ok := after[k]; !ok {
			out = append(out, "removed "+k)
		} else if v != before[k] {
			out = append(out, "changed "+k)
		}
	}
	for _, k := range sortedKeys(after) {
		if _, ok := before[k]; !ok {
			out = append(out, "added "+k)
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
