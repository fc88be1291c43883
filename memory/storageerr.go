package memory

import (
	"errors"
	"os"
	"syscall"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
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
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	dir := s.dataDir()
	var msg string
	switch {
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || diskFullErrno(err):
		msg = "disk full: free space on the disk holding " + dir + " (or raise its quota), then call again; " + outcome
	case errors.Is(err, syscall.EROFS):
		msg = "the data directory " + dir + " is on a read-only file system; " + outcome
	case errors.Is(err, os.ErrPermission):
		msg = "no permission to write under " + dir + "; fix its ownership or permissions, then call again; " + outcome
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, bolt.ErrDatabaseNotOpen):
		msg = damagedMessage(dir, s.ro != nil) + "; " + outcome
	default:
		return err
	}
	return &StorageError{Message: msg, Err: err}
}
