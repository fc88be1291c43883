//go:build unix

package memory

import "golang.org/x/sys/unix"

// writable asks the kernel whether this process may write path (for a
// directory: create and remove entries), by its effective ids and the
// file system's mount flags, without writing anything.
func writable(path string) error {
	return unix.Faccessat(unix.AT_FDCWD, path, unix.W_OK, unix.AT_EACCESS)
}
