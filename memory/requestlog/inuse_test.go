package requestlog

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestInUseAndResume: Begin reports a crash when the mark of the process
// before is still there; End removes it. A history resumed after a crash
// numbers Retention past its newest record, one resumed after a clean stop
// right after it, and a history that has no file yet (the crashed process
// may have numbered records for it too) starts past them.
func TestInUseAndResume(t *testing.T) {
	path := historyPath(t)
	dir := filepath.Dir(path)
	for i, want := range []bool{false, true, true} {
		crashed, err := Begin(dir)
		if err != nil || crashed != want {
			t.Fatalf("Begin #%d: crashed %v (%v), want %v", i+1, crashed, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, MarkersMade)); err != nil {
		t.Errorf("Begin made the directory without the markers' note: %v", err)
	}
	if err := End(dir); err != nil {
		t.Fatal(err)
	}
	if err := End(dir); err != nil {
		t.Errorf("End without a mark: %v", err)
	}
	if crashed, err := Begin(dir); err != nil || crashed {
		t.Fatalf("Begin after End: crashed %v (%v)", crashed, err)
	}

	appendT(t, New(path, testFormat), nil, 3, "")
	for _, tc := range []struct {
		afterCrash bool
		want       []int
	}{
		{false, []int{1, 2, 3, 4}},
		{true, []int{1, 2, 3, 4, 5 + Retention}},
	} {
		appendT(t, New(path, testFormat).Resume(tc.afterCrash), nil, 1, "")
		if got := readSeqs(t, New(path, testFormat)); !slices.Equal(got, tc.want) {
			t.Errorf("after crash %v: records %v, want %v", tc.afterCrash, got, tc.want)
		}
	}
	fresh := filepath.Join(dir, "other"+Ext)
	appendT(t, New(fresh, testFormat).Resume(true), nil, 1, "")
	if got := readSeqs(t, New(fresh, testFormat)); !slices.Equal(got, []int{1 + Retention}) {
		t.Errorf("a new history after a crash: records %v, want [%d]", got, 1+Retention)
	}
}
