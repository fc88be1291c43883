//go:build !unix

package memory

import (
	"os"
)

// writable tries whether this process may write path: a directory by
// creating and removing an empty file in it, a file by opening it for
// writing. (Windows has no access check that answers for its ACLs.)
func writable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		return f.Close()
	}
	f, err := os.CreateTemp(path, ".vc-mcp-write-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}
