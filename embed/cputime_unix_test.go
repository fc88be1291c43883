//go:build unix

package embed

import (
	"syscall"
	"time"
)

// cpuTime is the process's user plus system CPU time: a throughput figure
// that holds up better than wall time on a machine shared with other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
