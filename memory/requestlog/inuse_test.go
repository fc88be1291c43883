package requestlog

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestInUseAndResume: Begin counts the processes that began since the
// last End (crashes in a row); End resets the count. A history resumed
// after crashes numbers Retention past its newest record for each of
// them (one process after a crash, itself killed before it wrote a
// record, gave numbers up to Retention past that record: the next must
// not give them again), one resumed after a clean stop right after it,
// and a history that has no file yet starts past them too.
func TestInUseAndResume(t *testing.T) {
	path := historyPath(t)
	dir := filepath.Dir(path)
	for i, want := range []int{0, 1, 2} {
		crashes, err := Begin(dir)
		if err != nil || crashes != want {
			t.Fatalf("Begin #%d: crashes %d (%v), want %d", i+1, crashes, err, want)
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
	if crashes, err := Begin(dir); err != nil || crashes != 0 {
		t.Fatalf("Begin after End: crashes %d (%v)", crashes, err)
	}
	// A mark of the first version held nothing: one crash at least.
	if err := os.WriteFile(filepath.Join(dir, InUse), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if crashes, err := Begin(dir); err != nil || crashes != 1 {
		t.Fatalf("Begin over an empty mark: crashes %d (%v), want 1", crashes, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the directory holds %d entries, want the mark and the markers' note only (no temporary file)", len(entries))
	}

	appendT(t, New(path, testFormat), nil, 3, "")
	for _, tc := range []struct {
		crashes int
		want    []int
	}{
		{0, []int{1, 2, 3, 4}},
		{1, []int{1, 2, 3, 4, 5 + Retention}},
		{2, []int{1, 2, 3, 4, 5 + Retention, 6 + 3*Retention}},
	} {
		appendT(t, New(path, testFormat).Resume(tc.crashes), nil, 1, "")
		if got := readSeqs(t, New(path, testFormat)); !slices.Equal(got, tc.want) {
			t.Errorf("after %d crashes: records %v, want %v", tc.crashes, got, tc.want)
		}
	}
	fresh := filepath.Join(dir, "other"+Ext)
	appendT(t, New(fresh, testFormat).Resume(2), nil, 1, "")
	if got := readSeqs(t, New(fresh, testFormat)); !slices.Equal(got, []int{1 + 2*Retention}) {
		t.Errorf("a new history after two crashes: records %v, want [%d]", got, 1+2*Retention)
	}
}
