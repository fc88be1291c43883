package index

import (
	"context"
	"testing"
)

// TestOnlyIn: the answer follows what the index holds, through adds,
// replacements, deletions and a reopen.
func TestOnlyIn(t *testing.T) {
	ctx := context.Background()
	ix := openTemp(t, corpus())
	check := func(step string, convs []string, want bool) {
		t.Helper()
		if got := ix.OnlyIn(convs); got != want {
			t.Fatalf("%s: OnlyIn(%q) = %v, want %v", step, convs, got, want)
		}
	}
	check("two conversations", []string{"c1"}, false)
	check("two conversations", []string{"c2"}, false)
	check("two conversations", []string{"c1", "c2"}, true)
	check("two conversations", []string{"c2", "c1", "c2"}, true)
	check("none named", nil, false)
	check("unknown", []string{"zz"}, false)
	// Replacing c1's documents changes no count.
	if err := ix.Add(ctx, corpus()[:3]); err != nil {
		t.Fatal(err)
	}
	check("after replacing", []string{"c1", "c2"}, true)
	check("after replacing", []string{"c1"}, false)
	if err := ix.Delete(ctx, []string{"c2/t1", "c2/t2", "c2/g1"}); err != nil {
		t.Fatal(err)
	}
	check("after deleting c2", []string{"c1"}, true)
	if err := ix.Add(ctx, []Doc{{ID: "c3/t1", Conversation: "c3", Kind: "turn", Text: "a new one"}}); err != nil {
		t.Fatal(err)
	}
	check("a third added (pending)", []string{"c1"}, false)
	many := []string{"c1", "c3", "a", "b", "c", "d", "e", "f", "g"}
	check("more than eight named", many, false)
	// The filtered and unfiltered searches agree when OnlyIn says so.
	if err := ix.Delete(ctx, []string{"c3/t1"}); err != nil {
		t.Fatal(err)
	}
	check("c3 gone", []string{"c1"}, true)
	a := search(t, ix, Query{Text: "fox dog cat summary", Limit: 10, Conversations: []string{"c1"}})
	b := search(t, ix, Query{Text: "fox dog cat summary", Limit: 10})
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("filtered %v, unfiltered %v", ids(a), ids(b))
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Score != b[i].Score {
			t.Fatalf("filtered and unfiltered differ at %d: %v vs %v", i, a[i], b[i])
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed", []string{"c1"}, false)
}
