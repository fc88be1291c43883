package vcdb

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// growStep is how much Open's vc.db grows by once it is past its first
// growStep bytes. bbolt's default (16 MiB) makes the file the next power
// of two above its high-water mark below that size, up to twice what it
// holds (4 MiB for 2.1 MiB of pages); in steps of 256 KiB the file is at
// most that much larger than its pages, for a truncate and an fsync per
// step of growth (about 15 at 10,000 turns). Windows maps the whole file
// and grows it in powers of two regardless.
const growStep = 256 << 10

// DB is an open vc.db: bbolt's DB, whose View and Update (and Compact and
// Trim) turn a panic of bbolt on a damaged page into an error.
type DB struct {
	*bolt.DB
	// Damaged, when set, makes the error a call returns when bbolt
	// panicked in it; it is called as the panic is recovered, so the
	// stack (runtime/debug.Stack) still shows where it was raised. Unset,
	// the call returns the *PanicError itself.
	Damaged func(*PanicError) error
}

// PanicError is the error of a call in which bbolt panicked: a page it
// read was not what it expects (one overwritten on disk), or, rarely, the
// caller's function has a bug. It wraps bbolt's ErrInvalid, so IsDamaged
// reports it.
type PanicError struct {
	Value any // what was passed to panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("%v: bbolt: %v", berrors.ErrInvalid, e.Value) }
func (e *PanicError) Unwrap() error { return berrors.ErrInvalid }

// View runs fn in a read transaction, as bolt.DB.View does, with a panic
// made an error.
func (d DB) View(fn func(*bolt.Tx) error) error {
	return Guard(d.Damaged, func() error { return d.DB.View(fn) })
}

// Update runs fn in a write transaction, as bolt.DB.Update does, with a
// panic made an error (bbolt rolls the transaction back).
func (d DB) Update(fn func(*bolt.Tx) error) error {
	return Guard(d.Damaged, func() error { return d.DB.Update(fn) })
}

// Guard runs f, which opens or reads a bbolt file, with a panic made an
// error: damaged's answer to it, or the *PanicError when damaged is nil.
func Guard(damaged func(*PanicError) error, f func() error) (err error) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		pe := &PanicError{Value: p}
		if damaged == nil {
			err = pe
			return
		}
		err = damaged(pe)
	}()
	return f()
}

// IsDamaged reports whether err, from opening or reading vc.db, says the
// file is not a usable bbolt file (as opposed to a lock, a permission, a
// disk).
func IsDamaged(err error) bool {
	return errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch)
}

// Open opens the vc.db at path for use, as bolt.Open does with o (mode
// 0600), once its pages are known to be in the file (probe): a missing or
// empty file is made. An error IsDamaged reports says the file cannot be
// used; bolt.ErrTimeout, that another process holds it (after o.Timeout).
// damaged is as DB.Damaged, for a panic of bbolt while it opens the file.
// A caller calls FinishCompaction first.
func Open(path string, o *bolt.Options, damaged func(*PanicError) error) (*bolt.DB, error) {
	timeout := time.Duration(0)
	if o != nil {
		timeout = o.Timeout
	}
	if err := probe(path, timeout); err != nil {
		return nil, err
	}
	var db *bolt.DB
	if err := Guard(damaged, func() (err error) {
		db, err = bolt.Open(path, 0o600, o)
		return err
	}); err != nil {
		return nil, err
	}
	db.AllocSize = growStep
	return db, nil
}

// probe checks, read-only, that the vc.db at path holds every page its
// meta page names, before it is opened for use: bbolt reads those pages
// through a memory map, and a file cut short below them faults the
// process (SIGBUS) at the first read past its end, which no recover
// catches. A missing or empty file passes (bbolt makes it); a lock another
// process holds is bolt.ErrTimeout after timeout.
func probe(path string, timeout time.Duration) error {
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		return nil
	}
	db, err := OpenReadOnly(path, timeout)
	if err != nil {
		return err
	}
	err = db.View(func(tx *bolt.Tx) error { return CutShort(tx, path) })
	return errors.Join(err, db.Close())
}

// OpenReadOnly opens the vc.db at path for reading, under bbolt's shared
// lock (bolt.ErrTimeout after timeout). Opening reads only its meta pages;
// a caller calls CutShort before reading any other page.
func OpenReadOnly(path string, timeout time.Duration) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil && strings.HasPrefix(err.Error(), "file size too small") {
		// bbolt has no sentinel for a file shorter than its two meta
		// pages (TestOpenRefusesAnUnusableFile pins the message).
		return nil, fmt.Errorf("%w: %v", berrors.ErrInvalid, err)
	}
	return db, err
}

// CutShort says whether the vc.db file at path ends before the pages tx's
// meta names: then reading them through bbolt's map would fault. Its size
// is read here, under the lock tx holds: a writer that held the file
// while the caller waited may have grown it.
func CutShort(tx *bolt.Tx, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if need := tx.Size(); need > st.Size() {
		return fmt.Errorf("%w: vc.db is %d bytes but its pages reach byte %d: the file was cut short", berrors.ErrInvalid, st.Size(), need)
	}
	return nil
}
