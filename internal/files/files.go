// Package files holds the store's file-level helpers: opening its
// append-only logs, writing log bytes, replacing a file atomically and
// fsyncing directories, so that what is written survives a crash; copying files and fingerprinting
// directory trees, for the read-only snapshots and for tests that check a
// directory was left untouched.
package files

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// OpenAppendOnly opens (creating, owner-only, with its directory) one of
// the store's append-only files, such as the master and decisions logs,
// for reading and writing; what names the file in errors. A new file's
// directory entry is fsync'd so the file itself survives a crash.
func OpenAppendOnly(path, what string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create %s directory: %w", what, err)
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := SyncDir(filepath.Dir(path)); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

// WriteAt writes p to f at offset off. Every append to a data directory's
// own logs (master and decisions) goes through it, so that tests can set
// WriteHook to inject a full disk or hold a writer in its write. (A
// shared store's local cache of the shared logs is written without it: it
// is rebuilt from them.)
func WriteAt(f *os.File, p []byte, off int64) (int, error) {
	if WriteHook != nil {
		if err := WriteHook(f.Name()); err != nil {
			return 0, err
		}
	}
	return f.WriteAt(p, off)
}

// WriteHook, when set (tests only), runs before every WriteAt with the
// file's name and fails the write with its error.
var WriteHook func(path string) error

// SyncDir fsyncs the directory dir, so that the entries created or renamed
// in it survive a crash. A file system that cannot fsync a directory
// (os.ErrInvalid) is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory for fsync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

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

// AtomicWrite writes data to path via a temporary file in the same
// directory, fsync and rename, so a reader sees the old file or the new
// one, never part of either. It does not fsync the directory (SyncDir).
func AtomicWrite(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	return nil
}

// WindowsDevice reports whether name, as a file or directory name, is one
// of the devices Windows reserves whatever the case and the extension
// ("con", "NUL.txt", "com1.log"): such a file cannot be made there.
func WindowsDevice(name string) bool {
	stem, _, _ := strings.Cut(strings.ToLower(name), ".")
	switch stem {
	case "con", "prn", "aux", "nul":
		return true
	}
	return len(stem) == 4 && (strings.HasPrefix(stem, "com") || strings.HasPrefix(stem, "lpt")) && stem[3] >= '0' && stem[3] <= '9'
}
