package memory

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

// vc.db is compacted in place when the store closes, if free pages (or
// the unused part of half-filled ones) are much of it. bbolt never returns pages: the file keeps the high-water mark
// of its largest transaction (a compaction rewrites most topic summaries
// and segment blocks while the old pages are still in use), so at 10,000
// turns a quarter of it was free pages (1.69 MB; 1.28 MB compacted, 11 ms).
//
// The file keeps its inode: bbolt's lock (flock on the file) is what
// decides which process owns the data directory, and a process waiting
// for it holds the file open, so replacing the file by a rename would let
// that process lock and use the old, unlinked one. Instead, while this
// process still holds the lock:
//
//  1. bbolt copies the live pages into vc.db.compacting (bolt.Compact),
//     which is synced and renamed to vc.db.compacted (synced directory);
//  2. its pages are written over vc.db from the start, the file is cut to
//     their end and synced;
//  3. vc.db.compacted is removed; then the lock is released.
//
// A crash during 2 leaves vc.db damaged beside a complete
// vc.db.compacted: the next open (finishCompaction, with the file locked)
// copies it again before bbolt reads vc.db. A crash before 2 leaves vc.db
// as it was. vc.db is derived state in any case (`vc-mcp rebuild`).
const (
	compactingSuffix = ".compacting"
	compactedSuffix  = ".compacted"
	// Compact when free and unused page bytes are at least this share of
	// the file (and compactMinFree bytes).
	compactMinShare = 8 // 1/8
)

// compactMinFree is the fewest free bytes worth a compaction (a variable
// so that tests reach it with small stores).
var compactMinFree int64 = 128 << 10

var errNoFileLock = errors.New("file locking not supported here")

// compactInPlace compacts db's file as described above. db is open with
// no transaction running and this process holds its lock; the caller
// closes db right after (bbolt's map of the file is not read again). It
// reports whether it compacted.
func compactInPlace(db *bolt.DB) (bool, error) {
	if !canLockFile {
		return false, nil
	}
	path := db.Path()
	hwm, used, err := dbUse(db)
	if err != nil {
		return false, err
	}
	if waste := hwm - used; waste < compactMinFree || waste*compactMinShare < hwm {
		return false, nil
	}
	tmp, ready := path+compactingSuffix, path+compactedSuffix
	_ = os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return false, fmt.Errorf("compact vc.db: %w", err)
	}
	var size int64
	err = bolt.Compact(dst, db, 1<<20)
	if err == nil {
		err = dst.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	}
	if err = errors.Join(err, dst.Close()); err != nil || size >= hwm {
		_ = os.Remove(tmp)
		if err != nil {
			return false, fmt.Errorf("compact vc.db: %w", err)
		}
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

// finishCompaction completes a compaction a crash interrupted (see above)
// before bbolt opens path: with the file locked, it copies
// vc.db.compacted over it again. When another process holds the lock it
// does nothing (that process finishes its own compaction, or did this
// when it opened).
func finishCompaction(path string) error {
	ready := path + compactedSuffix
	if _, err := os.Stat(ready); err != nil {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil // no vc.db: nothing to finish (Rebuild removes both)
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
	src, err := bolt.Open(ready, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("finish compacting vc.db: %w", err)
	}
	var size int64
	err = src.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	if err = errors.Join(err, src.Close()); err != nil {
		return fmt.Errorf("finish compacting vc.db: %w", err)
	}
	if err := copyPages(path, ready, size); err != nil {
		return err
	}
	if err := os.Remove(ready); err != nil {
		return fmt.Errorf("finish compacting vc.db: %w", err)
	}
	return files.SyncDir(filepath.Dir(path))
}
