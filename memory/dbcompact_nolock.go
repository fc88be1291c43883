//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package memory

import "os"

// canLockFile: without flock(2) (Windows maps and locks the file its own
// way), vc.db is not compacted in place.
const canLockFile = false

func tryLockFile(*os.File) (bool, error) { return false, errNoFileLock }

func unlockFile(*os.File) {}
