//go:build !windows

package share

import (
	"errors"
	"os/exec"
	"syscall"
)

// detach starts the owner in a session of its own, so that neither the
// host's signals to its process group nor the bridge's death reach it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
