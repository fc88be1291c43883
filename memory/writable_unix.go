//go:build unix

package memory

import "golang.org/x/sys/unix"

// writable asks the kernel whether this process may write path (for a
// directory: create and remove entries), without writing anything. It is
// access(2): the kernel's own answer, with ACLs, read-only mounts and
// root's rights (by the real ids, which are the effective ones: vc-mcp is
// never set-uid). faccessat's AT_EACCESS is not used: on kernels before
// 5.8 x/sys emulates it from the mode bits alone.
func writable(path string) error {
	return unix.Access(path, unix.W_OK)
}
