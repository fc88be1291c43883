//go:build unix

package main

import "syscall"

// processAlive reports whether a process with this pid exists (signal 0).
func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }
