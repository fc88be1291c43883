package memory

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"syscall"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/memory/vcdb"
)

// ErrStorage: the data directory could not be written or read (disk full,
// no permission, a read-only file system, a damaged vc.db page). Errors that
// wrap it are *StorageError: their message says what to do and what became
// of the request, and reads keep working.
var ErrStorage = errors.New("storage failure")

// StorageError is a failure of the data directory, with a message meant
// for the person or model that made the call.
type StorageError struct {
	// Message says what happened, what to do, and whether anything was
	// stored, e.g. "disk full: free space under /data and call again;
	// nothing was stored".
	Message string
	Err     error // the underlying error
}

func (e *StorageError) Error() string   { return e.Message }
func (e *StorageError) Unwrap() []error { return []error{ErrStorage, e.Err} }

// storageError turns a failed write into a StorageError when its cause is
// one a user can act on; outcome says what became of the request ("nothing
// was stored"). Other errors are returned as they are.
func (s *Store) storageError(err error, outcome string) error {
	if err == nil {
		return nil
	}
	if vcdb.IsDamaged(err) || errors.Is(err, bolt.ErrDatabaseNotOpen) {
		var se *StorageError
		if errors.As(err, &se) {
			return err
		}
		return &StorageError{Message: damagedMessage(s.dataDir(), s.ro != nil) + "; " + outcome, Err: err}
	}
	return FileError(err, s.dataDir(), "call", outcome)
}

// FileError is storageError for a write outside a store (a command's
// lock file in the data directory dir): a full disk, a read-only file
// system or a missing permission becomes a StorageError saying what to do
// before the caller's next try ("call" again, "run" it again) and what
// became of the request (outcome). Other errors, and StorageErrors, are
// returned as they are.
func FileError(err error, dir, again, outcome string) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	var msg string
	switch {
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || diskFullErrno(err):
		msg = "disk full: free space on the disk holding " + dir + " (or raise its quota), then " + again + " again; " + outcome
	case errors.Is(err, syscall.EROFS):
		msg = "the data directory " + dir + " is on a read-only file system; " + outcome
	case errors.Is(err, os.ErrPermission):
		msg = "no permission to write under " + dir + "; fix its ownership or permissions, then " + again + " again; " + outcome
	default:
		return err
	}
	return &StorageError{Message: msg, Err: err}
}

// damagedPage is the store's answer to a panic of bbolt in a vc.db call
// (vcdb.DB.Damaged): a page it read was not what it expects (one
// overwritten on disk). The call becomes a StorageError that names the
// repair, so the caller releases its locks and answers, and the server
// goes on serving what is intact. dir is the data directory as its users
// know it; snapshot, that this vc.db is a read-only directory's copy
// (readonly.go), which the server cannot repair (the directory's owner
// can).
func damagedPage(dir string, snapshot bool, log *slog.Logger) func(*vcdb.PanicError) error {
	if log == nil {
		log = slog.Default()
	}
	return func(pe *vcdb.PanicError) error {
		// The stack tells a damaged page from a bug of ours in a callback.
		log.Error("vc.db: a read or write of it panicked: taken as a damaged page", "panic", fmt.Sprint(pe.Value), "data_dir", dir)
		log.Debug("vc.db panic", "stack", string(debug.Stack()))
		return damagedDB(dir, snapshot, pe)
	}
}

// damagedDB is the error of a damaged vc.db: what to run, and that the
// master logs (what was acknowledged) are not in it.
func damagedDB(dir string, snapshot bool, err error) error {
	return &StorageError{Message: damagedMessage(dir, snapshot), Err: errors.Join(errDamagedDB, err)}
}

// errDamagedDB marks the errors of damagedDB.
var errDamagedDB = errors.New("vc.db is damaged")

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
