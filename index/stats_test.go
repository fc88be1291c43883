package index

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// The same documents must score the same however they reached the index:
// one batch, or one write each with replaced versions in between (many
// segments, deleted documents not merged away yet). A rebuilt index then
// answers exactly as the one it replaces.
func TestScoresIndependentOfSegmentLayout(t *testing.T) {
	ctx := context.Background()
	final := make([]Doc, 40)
	for i := range final {
		final[i] = Doc{ID: fmt.Sprintf("c/t%d", i+1), Conversation: "c", Kind: "turn",
			Text: fmt.Sprintf("turn %d about the postgres migration and the kyoto ryokan, item %d", i+1, i*7)}
	}
	oneBatch, err := Open(filepath.Join(t.TempDir(), "a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer oneBatch.Close()
	if err := oneBatch.Add(ctx, final); err != nil {
		t.Fatal(err)
	}
	piecemeal, err := Open(filepath.Join(t.TempDir(), "b"), &Options{FlushDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer piecemeal.Close()
	for i, d := range final {
		old := d
		old.Text = fmt.Sprintf("an older draft %d with words like zebra%d quokka%d that vanish later", i, i, i)
		if err := piecemeal.Add(ctx, []Doc{old}); err != nil {
			t.Fatal(err)
		}
		if err := piecemeal.Add(ctx, []Doc{d}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"postgres migration", "kyoto ryokan item 21", "turn"} {
		a, err := oneBatch.Search(ctx, Query{Text: q, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		b, err := piecemeal.Search(ctx, Query{Text: q, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != len(b) || len(a) == 0 {
			t.Fatalf("%q: %d hits vs %d", q, len(a), len(b))
		}
		for i := range a {
			if a[i].ID != b[i].ID || a[i].Score != b[i].Score {
				t.Errorf("%q hit %d: %s %.6f in one batch, %s %.6f written piecemeal", q, i, a[i].ID, a[i].Score, b[i].ID, b[i].Score)
			}
		}
	}
}
