package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestAddAlias: an alias maps later turns to its tag, is refused when it
// is a tag already, and survives losing vc.db (replayed from decisions).
func TestAddAlias(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", []Message{msg("user", "", "Our database is PostgreSQL and the database runs on one node.", t0)})
	if got, err := s.Aliases(ctx, "c"); err != nil || len(got) != 0 {
		t.Fatalf("aliases before: %v %v", got, err)
	}
	got, err := s.AddAlias(ctx, "c", "Datastore", "database")
	if err != nil || got["datastore"] != "database" {
		t.Fatalf("AddAlias: %v %v", got, err)
	}
	res := ingest(t, s, "c", []Message{msg("user", "", "The datastore needs a nightly backup.", t0.Add(1e9))})
	if !slices.Contains(res.Tags, "database") {
		t.Errorf("a turn saying the alias got tags %v, want database", res.Tags)
	}
	for _, tt := range []struct{ alias, tag string }{
		{"database", "database"}, // the tag itself
		{"postgres", "database"}, // already a tag
		{"whatever", "no-such"},  // no such tag
		{"!!!", "database"},      // nothing usable
	} {
		if _, err := s.AddAlias(ctx, "c", tt.alias, tt.tag); !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNotFound) {
			t.Errorf("AddAlias(%q, %q): %v, want a caller error", tt.alias, tt.tag, err)
		}
	}
	s.Close()
	if err := os.RemoveAll(filepath.Join(dir, dbFile)); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t, Options{Dir: dir})
	if got, err := s2.Aliases(ctx, "c"); err != nil || got["datastore"] != "database" || len(got) != 1 {
		t.Errorf("aliases after vc.db was rebuilt: %v %v", got, err)
	}
}
