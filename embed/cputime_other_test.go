//go:build !unix

package embed

import "time"

// cpuTime is not measured here; the cpu-ms figures read 0.
func cpuTime() time.Duration { return 0 }
