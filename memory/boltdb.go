package memory

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// boltDB is vc.db: bbolt, with a damaged page made an error. bbolt panics
// when a page it reads is not what it expects (one overwritten on disk).
// Its View and Update roll the transaction back as the panic passes; here
// the panic becomes a StorageError that names the repair, so the caller
// releases its locks and answers, and the server goes on serving what is
// intact.
type boltDB struct {
	*bolt.DB
	dir string
	log *slog.Logger
	// snapshot: this vc.db is a read-only directory's copy (readonly.go),
	// which the server cannot repair; the directory's owner can.
	snapshot bool
}

func (d boltDB) View(fn func(*bolt.Tx) error) (err error) {
	defer d.recoverDamage(&err)
	return d.DB.View(fn)
}

func (d boltDB) Update(fn func(*bolt.Tx) error) (err error) {
	defer d.recoverDamage(&err)
	return d.DB.Update(fn)
}

// recoverDamage turns a panic inside a vc.db transaction into the damaged
// store's error; it is deferred.
func (d boltDB) recoverDamage(err *error) {
	p := recover()
	if p == nil {
		return
	}
	log := d.log
	if log == nil {
		log = slog.Default()
	}
	// The stack tells a damaged page from a bug of ours in a callback.
	log.Error("vc.db: a read or write of it panicked: taken as a damaged page", "panic", fmt.Sprint(p), "data_dir", d.dir)
	log.Debug("vc.db panic", "stack", string(debug.Stack()))
	*err = damagedDB(d.dir, d.snapshot, fmt.Errorf("%w: bbolt: %v", berrors.ErrInvalid, p))
}

// damagedDB is the error of a damaged vc.db: what to run, and that the
// master logs (what was acknowledged) are not in it.
func damagedDB(dir string, snapshot bool, err error) error {
	return &StorageError{Message: damagedMessage(dir, snapshot), Err: err}
}

// damagedMessage says that vc.db in dir is damaged and who repairs it how:
// whoever stops vc-mcp, or, for a read-only directory's copy (snapshot),
// the directory's owner, as this server cannot.
func damagedMessage(dir string, snapshot bool) string {
	who := ": stop vc-mcp"
	if snapshot {
		who = ", and this server serves a read-only copy of it that it cannot repair: have the directory's owner stop vc-mcp"
	}
	return "vc.db in " + dir + " is damaged" + who + " and run `vc-mcp rebuild --data-dir " + dir +
		"` (it is remade from the master logs, which hold every stored message; nothing is lost)"
}

// guard runs f, a pass over the whole of vc.db (compaction, trimming at
// Close), with a damaged page made an error.
func (d boltDB) guard(f func(*bolt.DB) error) (err error) {
	defer d.recoverDamage(&err)
	return f(d.DB)
}

// probeDB checks, read-only, that the vc.db at path holds every page its
// meta page names, before it is opened for use: bbolt reads those pages
// through a memory map, and a file cut short below them faults the
// process (SIGBUS) at the first read past its end, which no recover
// catches. A missing or empty file passes (bbolt makes it); a lock another
// process holds is bolt.ErrTimeout after timeout.
func probeDB(path string, timeout time.Duration) error {
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		return nil
	}
	db, err := openReadOnly(path, timeout)
	if err != nil {
		return err
	}
	err = db.View(func(tx *bolt.Tx) error { return cutShort(tx, path) })
	return errors.Join(err, db.Close())
}

// openReadOnly opens the vc.db at path for reading, under bbolt's shared
// lock (bolt.ErrTimeout after timeout). Opening reads only its meta pages;
// a caller calls cutShort before reading any other page.
func openReadOnly(path string, timeout time.Duration) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil && strings.HasPrefix(err.Error(), "file size too small") {
		// bbolt has no sentinel for a file shorter than its two meta
		// pages (TestAnUnusableDBFileNamesTheRepair pins the message).
		return nil, fmt.Errorf("%w: %v", berrors.ErrInvalid, err)
	}
	return db, err
}

// cutShort says whether the vc.db file at path ends before the pages tx's
// meta names: then reading them through bbolt's map would fault. Its size
// is read here, under the lock tx holds: a writer that held the file
// while the caller waited may have grown it.
func cutShort(tx *bolt.Tx, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if need := tx.Size(); need > st.Size() {
		return fmt.Errorf("%w: vc.db is %d bytes but its pages reach byte %d: the file was cut short", berrors.ErrInvalid, st.Size(), need)
	}
	return nil
}

// isDamagedDB reports whether err, from opening vc.db, says the file is
// not a usable bbolt file (as opposed to a lock, a permission, a disk).
func isDamagedDB(err error) bool {
	return errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch)
}
