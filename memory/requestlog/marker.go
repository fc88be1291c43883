package requestlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const (
	// MarkerExt ends the name of a history's scope-all marker,
	// <file>.scope-all beside <file>.jsonl.gz.
	MarkerExt = ".scope-all"
	// MarkersMade names the file that says a directory's histories all
	// have their markers (those of earlier versions were looked through).
	MarkersMade = "scope-all-markers-made"
)

// markerPath is the scope-all marker beside the history at h.path.
func (h *History) markerPath() string {
	return strings.TrimSuffix(h.path, Ext) + MarkerExt
}

// markLocked makes the history's scope-all marker, if it is not there.
// h.mu is held.
func (h *History) markLocked() error {
	if err := mark(h.markerPath()); err != nil {
		return err
	}
	h.marked = true
	return nil
}

// syncMarker keeps the history's scope-all marker in step with its
// records after a trim or rewrite; has says the file holds a scope-all
// record. The marker is made when it does (again, if it was removed by
// hand), and removed when neither the file nor the queue holds one (a
// scope-all record is queued only once its marker is made, under h.mu,
// which this holds). h.file is held.
func (h *History) syncMarker(has bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if has {
		return h.markLocked()
	}
	if slices.ContainsFunc(h.queue, func(e entry) bool { return e.scopeAll }) {
		return nil
	}
	if err := os.Remove(h.markerPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the request history's scope-all marker: %w", err)
	}
	h.marked = false
	return nil
}

// mark makes the marker at path, if it is not there.
func mark(path string) error {
	f, err := create(path)
	if err != nil {
		return fmt.Errorf("mark the request history: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("mark the request history: %w", err)
	}
	return nil
}

// ScopeAll lists the histories in dir that hold records of recalls over
// every conversation (those with a marker), by file name without Ext,
// sorted. The first call on a directory written by an earlier version
// looks through every history once (with f.ScopeAll) and marks those that
// do; a history it cannot read is marked. A marker it cannot make is an
// error, returned with the names, and the next call looks through the
// histories again.
func ScopeAll(dir string, f Format) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list request histories: %w", err)
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), MarkerExt); ok && !e.IsDir() {
			names = append(names, name)
		}
	}
	var merr error
	if _, err := os.Stat(filepath.Join(dir, MarkersMade)); errors.Is(err, fs.ErrNotExist) {
		var marked []string
		marked, merr = markOld(dir, entries, f)
		names = append(names, marked...)
	}
	slices.Sort(names)
	return slices.Compact(names), merr
}

// makeDir makes the histories' directory dir, if it is not there, and
// says in it that its histories need no looking through for markers
// (markOld): they are all written with them.
func makeDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, MarkersMade), nil, 0o600)
}

// markOld marks the histories in dir that hold a scope-all record and
// have no marker (written before markers were), then records that it ran;
// it returns the file names it marked. A history it cannot read is
// marked: the forget then decodes it. A marker it cannot make is an
// error, and the next call looks through the histories again; the names
// marked are returned with it.
func markOld(dir string, entries []fs.DirEntry, f Format) ([]string, error) {
	var marked []string
	var errs []error
	have := map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), MarkerExt); ok {
			have[name] = true
		}
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), Ext)
		var data []byte
		var err error
		if ok {
			if data, err = os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				data, err = gunzipAll(data)
			}
		} else if name, ok = strings.CutSuffix(e.Name(), PlainExt); ok {
			data, err = os.ReadFile(filepath.Join(dir, e.Name()))
		}
		if !ok || e.IsDir() || have[name] || err == nil && !f.ScopeAll(data) {
			continue
		}
		if err := mark(filepath.Join(dir, name+MarkerExt)); err != nil {
			errs = append(errs, err)
			continue
		}
		have[name] = true
		marked = append(marked, name)
	}
	if len(errs) > 0 {
		return marked, errors.Join(errs...)
	}
	if err := os.WriteFile(filepath.Join(dir, MarkersMade), nil, 0o600); err != nil {
		return marked, fmt.Errorf("mark the request histories: %w", err)
	}
	return marked, nil
}

// create opens path for writing, creating it, and the histories'
// directory first when it is not there (not made yet, or removed by hand
// since).
func create(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err = makeDir(filepath.Dir(path)); err == nil {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
		}
	}
	return f, err
}
