package memory

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// TestWarmStartLoadsRecentConversations: a server's store loads the
// conversations written most recently in the background after Open, so a
// host's first recall does not wait for the load; the others load on
// demand, and Close right after Open waits for the load in flight.
func TestWarmStartLoadsRecentConversations(t *testing.T) {
	dir := t.TempDir()
	now := t0
	s := openTest(t, Options{Dir: dir, Now: func() time.Time { return now }})
	for i, id := range []string{"old", "older", "newest", "newer"} {
		now = t0.Add(time.Duration([]int{2, 1, 4, 3}[i]) * time.Hour)
		ingest(t, s, id, chat(4, t0))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTest(t, Options{Dir: dir, WarmConversations: 2})
	if s.warmDone == nil {
		t.Fatal("Open loads nothing ahead")
	}
	<-s.warmDone
	s.mu.Lock()
	loaded := slices.Sorted(maps.Keys(s.convs))
	s.mu.Unlock()
	if !slices.Equal(loaded, []string{"newer", "newest"}) {
		t.Fatalf("loaded ahead %q, want the two written last", loaded)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for range 20 {
		s := openTest(t, Options{Dir: dir, WarmConversations: 4})
		if err := s.Close(); err != nil {
			t.Fatalf("Close right after Open: %v", err)
		}
	}
}
