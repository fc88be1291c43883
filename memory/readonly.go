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
	"github.com/vc-mcp/vc-mcp/memory/vcdb"
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
// long as the process runs, and a forget's dry run answers. Close deletes
// the snapshot.
type readOnly struct {
	dir     string   // the data directory served; never written
	scratch string   // the snapshot opened (Options.Dir inside the store)
	lock    *bolt.DB // held while the snapshot is in use (snapshotLock)
	reason  error    // why it may not be written; nil when asked for
}

// removeSnapshot deletes the snapshot, after the store using it closed.
func (r *readOnly) removeSnapshot() error {
	err := r.lock.Close()
	if rerr := os.RemoveAll(r.scratch); rerr != nil {
		err = errors.Join(err, fmt.Errorf("remove the snapshot of the read-only data directory: %w", rerr))
	}
	return err
}

// readOnlyEntries are the parts of a data directory a snapshot copies
// besides vc.db: what the store reads. Derived ones (the index, the
// vectors cache) save the snapshot their rebuild.
var readOnlyEntries = []string{logsDir, decisionsDir, indexDir, requestsDir, quarantineDir, itemVectorsDir, settingsFile}

// writtenEntries are the parts of a data directory a writable store must
// be able to write: without one of them it cannot store anything. The
// derived parts (the index, request histories, caches) are left out: a
// file there that this user may not write (left by one run as root) costs
// warnings and retries, as it always did, not the whole memory.
var writtenEntries = []string{dbFile, logsDir, decisionsDir}

// NotWritable says why vc-mcp may not write the data directory dir (a
// read-only file system, no permission for this user on the directory, on
// vc.db or on a master or decisions log), or returns nil when it may, or
// when dir does not exist yet (Open creates it, or says why it cannot). On
// Unix it writes nothing (see writable).
func NotWritable(dir string) error {
	if err := NotWritableDir(dir); err != nil {
		return err
	}
	for _, name := range writtenEntries {
		root := filepath.Join(dir, name)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // missing, or unreadable: the copy says so
			}
			return notWritable(p)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// NotWritableDir is NotWritable for the directory itself, not the files in
// it: whether this process may create files there, as a shared server
// must (its socket and log). It asks once, where NotWritable asks about
// every log.
func NotWritableDir(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	return notWritable(dir)
}

// notWritable says why path cannot be written, or nil (also when that
// cannot be told).
func notWritable(p string) error {
	if err := writable(p); err != nil && isNotWritable(err) {
		return fmt.Errorf("cannot write %s: %w", p, underlying(err))
	}
	return nil
}

func isNotWritable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// error is the refusal of a call that would write.
func (r *readOnly) error() error {
	why, fix := "it was opened read-only", "open it again without read-only (--read-only, VC_READ_ONLY, read_only)"
	if r.reason != nil {
		why = "it cannot be written: " + r.reason.Error()
		fix = fmt.Sprintf("make %s and everything in it writable by the user running vc-mcp (e.g. chown -R that user %s) and restart vc-mcp, or choose another data directory", r.dir, r.dir)
	}
	return &readOnlyError{fmt.Sprintf("the data directory %s is served read-only (%s), so nothing can be stored, forgotten or changed in it; "+
		"recall_context, find_quote, expand_topic, read_log and domain_status still answer. To store again, %s",
		r.dir, why, fix)}
}

// readOnlyError is a refusal whose message says it all; it wraps
// ErrReadOnly.
type readOnlyError struct{ msg string }

func (e *readOnlyError) Error() string { return e.msg }
func (e *readOnlyError) Unwrap() error { return ErrReadOnly }

// ReadOnly reports whether the store serves a read-only snapshot of its
// data directory (see readOnly): calls that would write are refused.
func (s *Store) ReadOnly() bool { return s.ro != nil }

// refuseWrite returns the read-only refusal when the store serves a
// snapshot, nil otherwise.
func (s *Store) refuseWrite() error {
	if s.ro == nil {
		return nil
	}
	return s.ro.error()
}

// snapshotDir copies the data directory dir into a new temporary
// directory and returns its path and the lock that marks it in use (see
// removeStaleSnapshots); on error nothing is left behind. A directory with
// no memory in it is an error: there is nothing to serve, and nothing could
// be stored. The master and decisions logs must be copied whole; the
// derived parts (vc.db, the index, request histories, caches) are left out
// when they cannot be read, and the snapshot remakes what it needs.
func snapshotDir(dir string, lockTimeout time.Duration, log *slog.Logger) (scratch string, lock *bolt.DB, err error) {
	_, dbErr := os.Stat(filepath.Join(dir, dbFile))
	_, logErr := os.Stat(filepath.Join(dir, logsDir))
	if dbErr != nil && logErr != nil {
		return "", nil, &readOnlyError{fmt.Sprintf("the data directory %s holds no vc-mcp memory and cannot be written", dir)}
	}
	removeStaleSnapshots(log)
	tmp, err := os.MkdirTemp("", snapshotPrefix+"*")
	if err != nil {
		return "", nil, fmt.Errorf("create a snapshot of the read-only data directory %s: %w", dir, err)
	}
	done := false
	defer func() {
		if !done {
			if lock != nil {
				_ = lock.Close()
			}
			_ = os.RemoveAll(tmp)
		}
	}()
	if lock, err = bolt.Open(filepath.Join(tmp, snapshotLock), 0o600, &bolt.Options{Timeout: time.Second}); err != nil {
		return "", nil, fmt.Errorf("lock the snapshot %s: %w", tmp, err)
	}
	copyIndex := true
	if dbErr == nil {
		// A compaction cut short by a crash leaves the whole file in
		// vc.db.compacted and vc.db possibly half overwritten; the next
		// writable open finishes it (vcdb.FinishCompaction).
		src := filepath.Join(dir, dbFile)
		if _, err := os.Stat(src + vcdb.CompactedSuffix); err == nil {
			src += vcdb.CompactedSuffix
		}
		if err := copyDB(src, filepath.Join(tmp, dbFile), lockTimeout, log); err != nil {
			if errors.Is(err, bolt.ErrTimeout) {
				return "", nil, lockedError(dir)
			}
			log.Warn("vc.db of the read-only data directory could not be read; the snapshot remakes it from the master logs", "data_dir", dir, "err", err)
			_ = os.Remove(filepath.Join(tmp, dbFile))
			copyIndex = false // its watermarks went with vc.db
		}
	}
	for _, name := range readOnlyEntries {
		if name == indexDir && !copyIndex {
			continue
		}
		target := filepath.Join(tmp, filepath.FromSlash(name))
		err := copyTree(filepath.Join(dir, filepath.FromSlash(name)), target)
		switch {
		case err == nil:
		case name == logsDir || name == decisionsDir:
			return "", nil, fmt.Errorf("snapshot the read-only data directory %s: %w", dir, err)
		default:
			log.Warn("a derived part of the read-only data directory could not be read; the snapshot does without it", "data_dir", dir, "part", name, "err", err)
			if err := os.RemoveAll(target); err != nil {
				return "", nil, fmt.Errorf("snapshot the read-only data directory %s: %w", dir, err)
			}
		}
	}
	done = true
	return tmp, lock, nil
}

const (
	// snapshotPrefix names the snapshots in the temporary directory.
	snapshotPrefix = "vc-mcp-read-only-"
	// snapshotLock is the bbolt file whose lock a snapshot's process
	// holds from the snapshot's first moment to its removal.
	snapshotLock = "snapshot.lock"
)

// removeStaleSnapshots deletes the snapshots of processes that ended
// without closing their store (killed): nobody holds their lock any more.
// One without a lock file is a minute old at least before it is taken for
// dead, as its process may be between creating it and locking it.
func removeStaleSnapshots(log *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), snapshotPrefix+"*"))
	for _, d := range dirs {
		info, err := os.Stat(d)
		if err != nil || !info.IsDir() {
			continue
		}
		lockPath := filepath.Join(d, snapshotLock)
		if _, err := os.Stat(lockPath); errors.Is(err, fs.ErrNotExist) {
			if time.Since(info.ModTime()) < time.Minute {
				continue
			}
		} else if err := vcdb.Guard(damagedPage(d, false, log), func() error {
			db, err := bolt.Open(lockPath, 0o600, &bolt.Options{Timeout: 20 * time.Millisecond, ReadOnly: true})
			if err != nil {
				return err
			}
			return db.Close()
		}); err != nil {
			continue // held: alive (or not ours to judge)
		}
		if err := os.RemoveAll(d); err == nil {
			log.Info("removed the snapshot of a read-only data directory left by a process that ended", "snapshot", d)
		}
	}
}

// copyDB copies a bbolt file through a read transaction, holding the
// shared lock a writer excludes.
func copyDB(src, dst string, lockTimeout time.Duration, log *slog.Logger) error {
	damaged := damagedPage(filepath.Dir(src), false, log)
	var db *bolt.DB
	err := vcdb.Guard(damaged, func() (err error) {
		db, err = bolt.Open(src, 0o400, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
		return err
	})
	if err != nil {
		return err
	}
	err = vcdb.DB{DB: db, Damaged: damaged}.View(func(tx *bolt.Tx) error {
		if err := vcdb.CutShort(tx, src); err != nil {
			return err
		}
		return tx.CopyFile(dst, 0o600)
	})
	return errors.Join(err, db.Close())
}

// copyTree copies the regular files under src (a file or a directory) to
// dst, following symbolic links (a logs directory kept elsewhere) and
// skipping anything that is neither a file nor a directory. A missing src
// copies nothing; a link that leads nowhere is an error, since what it
// stood for would be missing from the copy.
func copyTree(src, dst string) error {
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	return copyFollowing(src, dst, info, map[string]bool{})
}

func copyFollowing(src, dst string, info fs.FileInfo, seen map[string]bool) error {
	switch {
	case info.Mode().IsRegular():
		return files.Copy(src, dst, 0o600)
	case !info.IsDir():
		return nil
	}
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if seen[real] {
		return nil // a link back up the tree
	}
	seen[real] = true
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(src, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			return err // a link that leads nowhere, or unreadable
		}
		if err := copyFollowing(p, filepath.Join(dst, e.Name()), fi, seen); err != nil {
			return err
		}
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
