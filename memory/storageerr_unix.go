//go:build !windows

package memory

func diskFullErrno(error) bool { return false }
