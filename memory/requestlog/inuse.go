package requestlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// InUse names the file a process keeps in a directory of histories while
// it writes them: Begin makes it, End removes it once everything queued
// is written.
const InUse = "in-use"

// Begin marks dir's histories as in use by this process, and says whether
// the process before it stopped without End: a crash (kill -9, a power
// cut), after which records it had numbered, and whose ids its callers
// were given, may never have been written. Histories opened with
// Resume(true) then number their records past those (see Resume). The
// mark is made durable (file and directory synced) before Begin returns.
func Begin(dir string) (crashed bool, err error) {
	path := filepath.Join(dir, InUse)
	if _, err := os.Stat(path); err == nil {
		return true, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("request histories: %w", err)
	}
	f, err := create(path)
	if err != nil {
		return false, fmt.Errorf("request histories: mark them in use: %w", err)
	}
	err = errors.Join(f.Sync(), f.Close())
	if err == nil {
		err = files.SyncDir(dir)
	}
	if err != nil {
		_ = os.Remove(path)
		return false, fmt.Errorf("request histories: mark them in use: %w", err)
	}
	return false, nil
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

// Resume, with afterCrash set (Begin said the last process crashed),
// makes the history number its records Retention past the newest one its
// file holds, rather than right after it: the crashed process may have
// numbered records it never wrote, and their numbers, already given to
// its callers as request ids, must not name other records now. At most
// Retention records wait unwritten in a queue; a full disk that made the
// process drop records (each drop is logged) can have used more numbers
// than that. Resume is called before the history is used; it returns h.
func (h *History) Resume(afterCrash bool) *History {
	h.mu.Lock()
	h.afterCrash = afterCrash
	h.mu.Unlock()
	return h
}
