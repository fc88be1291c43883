package requestlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// InUse names the file a process keeps in a directory of histories while
// it writes them: Begin makes it, End removes it once everything queued
// is written. It holds how many processes have begun since the last End.
const InUse = "in-use"

// Begin marks dir's histories as in use by this process and returns how
// many processes before it, in a row, stopped without End: crashes (kill
// -9, a power cut), after each of which records that process had
// numbered, and whose ids its callers were given, may never have been
// written. Histories opened with Resume(crashes) number their records
// past all of those. The mark is made durable (written, synced, renamed
// into place, directory synced) before Begin returns.
//
// Why a count: a process started after a crash numbers from Retention
// past the newest record written; killed in turn before it wrote one, it
// leaves the newest record where it was, and the next process must start
// Retention past the numbers it gave, not at them again.
func Begin(dir string) (crashes int, err error) {
	path := filepath.Join(dir, InUse)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		crashes, err = strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || crashes < 1 {
			crashes = 1 // an empty or unreadable mark (a mark of the first version, or torn): at least one
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return 0, fmt.Errorf("request histories: %w", err)
	}
	if err := makeDir(dir); err != nil {
		return crashes, fmt.Errorf("request histories: mark them in use: %w", err)
	}
	if err := files.AtomicWrite(path, []byte(strconv.Itoa(crashes+1)+"\n")); err != nil {
		return crashes, fmt.Errorf("request histories: mark them in use: %w", err)
	}
	return crashes, nil
}

// End removes Begin's mark: the histories in dir were written to the end
// (their queues flushed). A mark End cannot remove makes the next Begin
// report a crash, which only costs a gap in the numbering.
func End(dir string) error {
	if err := os.Remove(filepath.Join(dir, InUse)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("request histories: %w", err)
	}
	return nil
}

// Resume makes the history number its records crashes×Retention past the
// newest one its file holds, rather than right after it (crashes: what
// Begin returned). Each crashed process may have numbered up to Retention
// records it never wrote (at most Retention wait unwritten in a queue),
// and their numbers, already given to its callers as request ids, must
// not name other records now. A full disk that made a process drop
// records (each drop is logged) can have used more numbers than that.
// Resume is called before the history is used; it returns h.
func (h *History) Resume(crashes int) *History {
	h.mu.Lock()
	h.skip = max(0, crashes) * Retention
	h.mu.Unlock()
	return h
}
