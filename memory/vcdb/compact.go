package vcdb

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// The files of a compaction in place, beside vc.db (see the package
// comment): the copy being made, and the complete copy being written
// over vc.db.
const (
	CompactingSuffix = ".compacting"
	CompactedSuffix  = ".compacted"
)

const (
	// Compact when free and unused page bytes are at least this share of
	// the file (1/compactMinShare) and compactMinFree bytes.
	compactMinShare = 8
	compactMinFree  = 128 << 10
)

var errNoFileLock = errors.New("file locking not supported here")

// Compact compacts d's file in place, keeping its inode (see the package
// comment), when free pages and the unused part of pages are much of it;
// it reports whether it did. d is open for writing with no transaction
// running and this process holds its lock; the caller closes d right
// after (bbolt's map of the file is not read again). A panic is made an
// error as by View.
func (d DB) Compact() (compacted bool, err error) {
	return d.compact(false)
}

// Scrub compacts d's file in place whatever that saves, so that no free
// page keeps the bytes of a value deleted from it (after a forget): every
// byte of the file is then written by the compaction. As Compact, it
// keeps the file's inode: a process waiting for its lock gets this file,
// never an unlinked copy of it. Without compaction in place
// (!CompactsInPlace) it does nothing and reports false: the caller
// rewrites the file once closed (Rewrite).
func (d DB) Scrub() (scrubbed bool, err error) {
	return d.compact(true)
}

func (d DB) compact(always bool) (compacted bool, err error) {
	err = Guard(d.Damaged, func() (err error) {
		compacted, err = compactInPlace(d.DB, always)
		return err
	})
	return compacted, err
}

// compactInPlace compacts db's file in place when that saves enough, or
// always.
func compactInPlace(db *bolt.DB, always bool) (bool, error) {
	if !CompactsInPlace {
		return false, nil
	}
	path := db.Path()
	hwm, used, err := dbUse(db)
	if err != nil {
		return false, err
	}
	if waste := hwm - used; !always && (waste < compactMinFree || waste*compactMinShare < hwm) {
		return false, nil
	}
	tmp, ready := path+CompactingSuffix, path+CompactedSuffix
	size, err := compactInto(tmp, db)
	if err != nil {
		return false, err
	}
	if size >= hwm && !always {
		_ = os.Remove(tmp)
		return false, nil
	}
	if err := syncFile(tmp); err != nil {
		_ = os.Remove(tmp)
		return false, err
	}
	if err := os.Rename(tmp, ready); err != nil {
		_ = os.Remove(tmp)
		return false, fmt.Errorf("compact vc.db: %w", err)
	}
	if err := files.SyncDir(filepath.Dir(path)); err != nil {
		return false, err
	}
	if err := copyPages(path, ready, size); err != nil {
		return false, err // vc.db.compacted stays: the next open finishes
	}
	if err := os.Remove(ready); err != nil {
		return true, fmt.Errorf("compact vc.db: %w", err)
	}
	return true, files.SyncDir(filepath.Dir(path))
}

// compactInto copies src's live pages into a new bbolt file at tmp (one
// there is replaced) and returns the size of its pages; on an error tmp
// is removed.
func compactInto(tmp string, src *bolt.DB) (size int64, err error) {
	_ = os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return 0, fmt.Errorf("compact vc.db: %w", err)
	}
	dst.AllocSize = growStep
	err = bolt.Compact(dst, src, 1<<20)
	if err == nil {
		err = dst.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	}
	if err = errors.Join(err, dst.Close()); err != nil {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("compact vc.db: %w", err)
	}
	return size, nil
}

// dbUse returns db's high-water mark and the bytes its buckets' pages
// hold: what is neither is free pages and the unused part of pages
// (bbolt fills pages written in random key order, as a rebuild writes the
// topic summaries, about half; a compaction fills them).
func dbUse(db *bolt.DB) (hwm, used int64, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		hwm = tx.Size()
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			st := b.Stats()
			used += int64(st.LeafInuse + st.BranchInuse)
			return nil
		})
	})
	return hwm, used, err
}

// copyPages writes the first size bytes of from over path, cuts path to
// size and syncs it.
func copyPages(path, from string, size int64) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("compact vc.db: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("compact vc.db: %w", err)
	}
	n, err := io.Copy(dst, io.LimitReader(src, size))
	if err == nil && n != size {
		err = fmt.Errorf("%s holds %d bytes, want %d", from, n, size)
	}
	if err == nil {
		err = dst.Truncate(size)
	}
	if err == nil {
		err = dst.Sync()
	}
	if err = errors.Join(err, dst.Close()); err != nil {
		return fmt.Errorf("compact vc.db: %w", err)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("compact vc.db: %w", err)
	}
	err = f.Sync()
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("compact vc.db: %w", err)
	}
	return nil
}

// FinishCompaction completes a compaction in place that a crash
// interrupted (see the package comment), before bbolt opens path: with
// the file locked, it copies vc.db.compacted over it again. When another
// process holds the lock it does nothing (that process finishes its own
// compaction, or did this when it opened); with no vc.db neither. A
// vc.db.compacted that is itself damaged (cut short, overwritten) is an
// error IsDamaged reports: vc.db may be half written over with it, so
// neither file can be used (package memory rebuilds vc.db from the logs).
func FinishCompaction(path string) error {
	ready := path + CompactedSuffix
	if _, err := os.Stat(ready); err != nil {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil // no vc.db: nothing to finish (a rebuild removes both)
	}
	defer f.Close()
	locked, err := tryLockFile(f)
	if err != nil || !locked {
		return nil
	}
	defer unlockFile(f)
	if _, err := os.Stat(ready); err != nil {
		return nil // finished meanwhile
	}
	size, err := compactedSize(path)
	if err != nil {
		return err
	}
	if err := copyPages(path, ready, size); err != nil {
		return err
	}
	if err := os.Remove(ready); err != nil {
		return fmt.Errorf("finish compacting vc.db: %w", err)
	}
	return files.SyncDir(filepath.Dir(path))
}

// VerifyCompacted checks, read-only, that the vc.db.compacted beside the
// vc.db at path, which a compaction in place a crash cut short left, can
// finish it (FinishCompaction); an error IsDamaged reports says it
// cannot.
func VerifyCompacted(path string) error {
	_, err := compactedSize(path)
	return err
}

// compactedSize returns the size of the pages of path's vc.db.compacted,
// after checking the file holds them.
func compactedSize(path string) (int64, error) {
	ready := path + CompactedSuffix
	var size int64
	err := Guard(nil, func() error {
		src, err := OpenReadOnly(ready, time.Second)
		if err != nil {
			return err
		}
		err = src.View(func(tx *bolt.Tx) error {
			size = tx.Size()
			return CutShort(tx, ready)
		})
		return errors.Join(err, src.Close())
	})
	if err != nil {
		// vc.db may be half written over with it: neither can be used.
		return 0, fmt.Errorf("finish compacting vc.db: %s, the copy to write over it, cannot be used: %w", filepath.Base(ready), err)
	}
	return size, nil
}

// Rewrite copies the closed vc.db at path into a fresh file and renames
// that over it, so that no freed page keeps old bytes (after a forget),
// where Scrub cannot (no compaction in place: Windows, where a rename
// over a file another process has open fails instead of leaving that
// process an unlinked copy). Unlike Scrub it replaces the file: it runs
// after the store has let the file go.
func Rewrite(path string) error {
	src, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("compact %s: %w", path, err)
	}
	defer src.Close()
	tmp := path + ".compact"
	if _, err := compactInto(tmp, src); err != nil {
		return err
	}
	_ = src.Close()
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("compact %s: %w", path, err)
	}
	return files.SyncDir(filepath.Dir(path))
}
