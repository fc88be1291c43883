//go:build windows

package memory

import (
	"errors"
	"syscall"
)

// diskFullErrno recognises Windows' own disk-full codes
// (ERROR_HANDLE_DISK_FULL, ERROR_DISK_FULL).
func diskFullErrno(err error) bool {
	var en syscall.Errno
	return errors.As(err, &en) && (en == 39 || en == 112)
}
