//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package vcdb

import "os"

// CompactsInPlace: without flock(2) (Windows maps and locks the file its
// own way), vc.db is not compacted in place.
const CompactsInPlace = false

func tryLockFile(*os.File) (bool, error) { return false, errNoFileLock }

func unlockFile(*os.File) {}
