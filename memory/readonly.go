package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// ErrReadOnly: the store serves a data directory it may not write (a
// read-only file system, a directory owned by another user, or
// Options.ReadOnly), so a call that would store, forget or change
// something is refused. Reads keep answering.
var ErrReadOnly = errors.New("read-only data directory")

// A data directory vc-mcp may not write is served from a snapshot: Open
// copies it into a private temporary directory and opens the copy, so the
// whole read path (loading a conversation, verifying its log, catching the
// index up, recording a recall in the request history) works as it always
// does, and the directory itself is never opened for writing. vc.db is
// copied inside a bbolt read transaction under bbolt's shared lock, so the
// copy is consistent, and a directory another vc-mcp process has open for
// writing is reported as locked rather than copied half-written. Calls that
// would store, forget or change anything are refused with ErrReadOnly;
// expand_topic and collapse_topic page the snapshot's working set for as
// long as the process runs. Close deletes the snapshot.
type readOnly struct {
	dir     string // the data directory served; never written
	scratch string // the snapshot opened (Options.Dir inside the store)
	reason  error  // why it may not be written; nil when asked for
}

// readOnlyEntries are the parts of a data directory a snapshot copies
// besides vc.db: what the store reads. Derived ones (the index, the
// vectors cache) save the snapshot their rebuild.
var readOnlyEntries = []string{logsDir, decisionsDir, indexDir, requestsDir, quarantineDir, itemVectorsDir, settingsFile}

// NotWritable says why vc-mcp may not write the data directory dir (a
// read-only file system, no permission for this user), or returns nil when
// it may, or when dir does not exist yet (Open creates it, or says why it
// cannot). It creates and removes one empty file to find out.
func NotWritable(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	for _, d := range []string{dir, filepath.Join(dir, logsDir)} {
		f, err := os.CreateTemp(d, ".vc-mcp-write-check-*")
		if err != nil {
			if isNotWritable(err) {
				return fmt.Errorf("cannot create a file in %s: %w", d, underlying(err))
			}
			continue // missing (created by Open) or another fault Open reports
		}
		name := f.Name()
		_ = f.Close()
		_ = os.Remove(name)
	}
	f, err := os.OpenFile(filepath.Join(dir, dbFile), os.O_RDWR, 0)
	if err == nil {
		_ = f.Close()
	} else if isNotWritable(err) {
		return fmt.Errorf("cannot write %s: %w", filepath.Join(dir, dbFile), underlying(err))
	}
	return nil
}

// underlying strips the path an *fs.PathError repeats.
func underlying(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func isNotWritable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// error is the refusal of a call that would write.
func (r *readOnly) error() error {
	why := "it was opened read-only"
	if r.reason != nil {
		why = "it cannot be written: " + r.reason.Error()
	}
	return &readOnlyError{fmt.Sprintf("the data directory %s is served read-only (%s), so nothing can be stored, forgotten or changed in it; "+
		"recall_context, find_quote, expand_topic, read_log and domain_status still answer. "+
		"To store again, make %s writable by the user running vc-mcp (or choose another data directory) and restart vc-mcp",
		r.dir, why, r.dir)}
}

// readOnlyError is a refusal whose message says it all; it wraps
// ErrReadOnly.
type readOnlyError struct{ msg string }

func (e *readOnlyError) Error() string { return e.msg }
func (e *readOnlyError) Unwrap() error { return ErrReadOnly }

// refuseWrite returns the read-only refusal when the store serves a
// snapshot, nil otherwise.
func (s *Store) refuseWrite() error {
	if s.ro == nil {
		return nil
	}
	return s.ro.error()
}

// snapshotDir copies the data directory dir into a new temporary directory
// and returns its path. A directory with no memory in it is an error: there
// is nothing to serve, and nothing could be stored.
func snapshotDir(dir string, lockTimeout time.Duration, log *slog.Logger) (scratch string, err error) {
	_, dbErr := os.Stat(filepath.Join(dir, dbFile))
	_, logErr := os.Stat(filepath.Join(dir, logsDir))
	if dbErr != nil && logErr != nil {
		return "", fmt.Errorf("%w: the data directory %s holds no vc-mcp memory and cannot be written", ErrReadOnly, dir)
	}
	removeStaleSnapshots(log)
	scratch, err = os.MkdirTemp("", snapshotPrefix+"*")
	if err != nil {
		return "", fmt.Errorf("create a snapshot of the read-only data directory %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(scratch)
			scratch = ""
		}
	}()
	copyIndex := true
	if dbErr == nil {
		if err := copyDB(filepath.Join(dir, dbFile), filepath.Join(scratch, dbFile), lockTimeout, log); err != nil {
			if errors.Is(err, bolt.ErrTimeout) {
				return "", lockedError(dir)
			}
			// Derived state: the snapshot remakes it from the logs.
			log.Warn("vc.db of the read-only data directory could not be read; the snapshot remakes it from the master logs", "data_dir", dir, "err", err)
			_ = os.Remove(filepath.Join(scratch, dbFile))
			copyIndex = false
		}
	}
	for _, name := range readOnlyEntries {
		if name == indexDir && !copyIndex {
			continue
		}
		if err := copyTree(filepath.Join(dir, filepath.FromSlash(name)), filepath.Join(scratch, filepath.FromSlash(name))); err != nil {
			return "", fmt.Errorf("snapshot the read-only data directory %s: %w", dir, err)
		}
	}
	return scratch, nil
}

// snapshotPrefix names the snapshots in the temporary directory.
const snapshotPrefix = "vc-mcp-read-only-"

// removeStaleSnapshots deletes the snapshots of processes that ended
// without closing their store (killed): nobody holds their vc.db's lock
// any more. Snapshots younger than a minute are left alone, as one may be
// in the middle of being copied.
func removeStaleSnapshots(log *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), snapshotPrefix+"*"))
	for _, d := range dirs {
		info, err := os.Stat(d)
		if err != nil || !info.IsDir() || time.Since(info.ModTime()) < time.Minute {
			continue
		}
		err = boltDB{dir: d, log: log}.guard(func(*bolt.DB) error {
			db, err := bolt.Open(filepath.Join(d, dbFile), 0o600, &bolt.Options{Timeout: 50 * time.Millisecond, ReadOnly: true})
			if err != nil {
				return err
			}
			return db.Close()
		})
		if err != nil {
			continue // held (or not ours to judge)
		}
		if err := os.RemoveAll(d); err == nil {
			log.Info("removed the snapshot of a read-only data directory left by a process that ended", "snapshot", d)
		}
	}
}

// copyDB copies a bbolt file through a read transaction, holding the
// shared lock a writer excludes.
func copyDB(src, dst string, lockTimeout time.Duration, log *slog.Logger) error {
	var db *bolt.DB
	err := boltDB{dir: filepath.Dir(src), log: log}.guard(func(*bolt.DB) (err error) {
		db, err = bolt.Open(src, 0o400, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
		return err
	})
	if err != nil {
		return err
	}
	err = boltDB{DB: db, dir: filepath.Dir(src), log: log}.guard(func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error { return tx.CopyFile(dst, 0o600) })
	})
	return errors.Join(err, db.Close())
}

// copyTree copies the regular files under src (a file or a directory) to
// dst. A missing src copies nothing.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == src && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o700)
		case d.Type().IsRegular():
			return files.Copy(path, target, 0o600)
		default:
			return nil // sockets, links: not the store's
		}
	})
}
