//go:build !unix

package memory

import (
	"io/fs"
	"os"
)

// writable tells whether this process may write path: a file by its
// read-only attribute (no handle is opened, which on Windows would keep a
// running server from renaming or removing it meanwhile), a directory by
// creating and removing an empty file in it (Windows has no access check
// that answers for its ACLs). Open does not ask when the store is asked
// to be read-only, so a read-only start writes nothing.
func writable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		if info.Mode().Perm()&0o200 == 0 {
			return &fs.PathError{Op: "write", Path: path, Err: fs.ErrPermission}
		}
		return nil
	}
	f, err := os.CreateTemp(path, ".vc-mcp-write-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}
