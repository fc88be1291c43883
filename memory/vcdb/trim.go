package vcdb

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Trim cuts d's file down to its high-water mark before the store lets
// it go (see the package comment): bbolt grows the file ahead of its
// pages (growStep at a time past the first step, up to 256 KiB unused at
// the end: 0.27 MB of 3.05 at 10,000 turns). It runs while this process
// still holds the file's lock, with no transaction open, so no other
// process sees the file meanwhile; bbolt reads nothing past the
// high-water mark. A d closed already (a failed open) is left alone, and
// on Windows, which cannot truncate a mapped file, it does nothing. A
// panic is made an error as by View.
func (d DB) Trim() error {
	return Guard(d.Damaged, func() error { return trim(d.DB) })
}

func trim(db *bolt.DB) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	var hwm int64
	if err := db.View(func(tx *bolt.Tx) error {
		hwm = tx.Size()
		return nil
	}); errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return nil // closed already (a failed open): nothing to trim
	} else if err != nil {
		return fmt.Errorf("trim %s: %w", db.Path(), err)
	}
	fi, err := os.Stat(db.Path())
	if err != nil {
		return fmt.Errorf("trim %s: %w", db.Path(), err)
	}
	if hwm <= 0 || fi.Size() <= hwm {
		return nil
	}
	if err := os.Truncate(db.Path(), hwm); err != nil {
		return fmt.Errorf("trim %s: %w", db.Path(), err)
	}
	return nil
}
