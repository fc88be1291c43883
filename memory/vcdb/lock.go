//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package vcdb

import (
	"errors"
	"os"
	"syscall"
)

// CompactsInPlace says whether DB.Compact and FinishCompaction do
// anything here: they need flock(2), the lock bbolt takes on vc.db.
const CompactsInPlace = true

// tryLockFile takes an exclusive flock on f without waiting.
func tryLockFile(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
