package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// corpus is the small fixture most tests search.
func corpus() []Doc {
	return []Doc{
		{ID: "c1/t1", Conversation: "c1", Kind: "turn", Text: "The quick brown fox jumps over the lazy dog", Speaker: "Alice"},
		{ID: "c1/t2", Conversation: "c1", Kind: "turn", Text: "Alice's cat sleeps on the warm windowsill all afternoon", Speaker: "Bob"},
		{ID: "c1/s1", Conversation: "c1", Kind: "segment", Text: "Summary: a discussion of foxes, dogs and cats"},
		{ID: "c2/t1", Conversation: "c2", Kind: "turn", Text: "The brown fox is quick and clever", Speaker: "alice"},
		{ID: "c2/t2", Conversation: "c2", Kind: "turn", Text: "Deploy the database migration on Friday", Speaker: "Carol"},
		{ID: "c2/g1", Conversation: "c2", Kind: "tag", Text: "Tag summary: database deployments and migrations"},
	}
}

// testTexts holds the text of every document the tests index, by ID (the
// index keeps none; phrases and highlighting read it through DocText).
// Tests run one at a time: one that reuses an ID stores its own text
// before searching.
var testTexts sync.Map

func rememberTexts(docs []Doc) {
	for _, d := range docs {
		testTexts.Store(d.ID, d.Text)
	}
}

func testDocText(id string) (string, bool) {
	v, ok := testTexts.Load(id)
	if !ok {
		return "", false
	}
	return v.(string), true
}

func openTemp(t testing.TB, docs []Doc) *Index {
	t.Helper()
	rememberTexts(docs)
	ix, err := Open(filepath.Join(t.TempDir(), "idx"), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := ix.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if len(docs) > 0 {
		if err := ix.Add(context.Background(), docs); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	return ix
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func sortedIDs(hits []Hit) []string {
	out := ids(hits)
	sort.Strings(out)
	return out
}

func search(t *testing.T, ix *Index, q Query) []Hit {
	t.Helper()
	if q.DocText == nil {
		q.DocText = testDocText
	}
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("Search(%+v): %v", q, err)
	}
	return hits
}

func TestSearchFilters(t *testing.T) {
	ix := openTemp(t, corpus())
	tests := []struct {
		name string
		q    Query
		want []string // sorted
	}{
		{"all conversations", Query{Text: "fox"}, []string{"c1/s1", "c1/t1", "c2/t1"}},
		{"stemmed plural matches", Query{Text: "migrations"}, []string{"c2/g1", "c2/t2"}},
		{"conversation c1", Query{Text: "fox", Conversations: []string{"c1"}}, []string{"c1/s1", "c1/t1"}},
		{"conversation c2", Query{Text: "fox", Conversations: []string{"c2"}}, []string{"c2/t1"}},
		{"conversation prefix is not a match", Query{Text: "fox", Conversations: []string{"c"}}, nil},
		{"conversation case matters", Query{Text: "fox", Conversations: []string{"C1"}}, nil},
		{"two conversations", Query{Text: "fox database", Conversations: []string{"c1", "c2"}}, []string{"c1/s1", "c1/t1", "c2/g1", "c2/t1", "c2/t2"}},
		{"unknown conversation", Query{Text: "fox", Conversations: []string{"nope"}}, nil},
		{"kind segment", Query{Text: "fox", Kinds: []string{"segment"}}, []string{"c1/s1"}},
		{"kinds turn and tag", Query{Text: "fox database", Kinds: []string{"turn", "tag"}}, []string{"c1/t1", "c2/g1", "c2/t1", "c2/t2"}},
		{"speaker any case", Query{Text: "fox", Speaker: "ALICE"}, []string{"c1/t1", "c2/t1"}},
		{"speaker with spaces", Query{Text: "fox", Speaker: " alice "}, []string{"c1/t1", "c2/t1"}},
		{"speaker other", Query{Text: "fox", Speaker: "bob"}, nil},
		{"speaker and conversation", Query{Text: "fox", Speaker: "alice", Conversations: []string{"c2"}}, []string{"c2/t1"}},
		{"ids", Query{Text: "fox", IDs: []string{"c2/t1", "c1/s1"}}, []string{"c1/s1", "c2/t1"}},
		{"ids empty admits none", Query{Text: "fox", IDs: []string{}}, nil},
		{"ids unknown", Query{Text: "fox", IDs: []string{"nope"}}, nil},
		{"all filters", Query{Text: "fox cat", Conversations: []string{"c1"}, Kinds: []string{"turn"}, Speaker: "bob", IDs: []string{"c1/t2", "c2/t1"}}, []string{"c1/t2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sortedIDs(search(t, ix, tt.q))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHitFields(t *testing.T) {
	ix := openTemp(t, corpus())
	hits := search(t, ix, Query{Text: "windowsill"})
	if len(hits) != 1 {
		t.Fatalf("got %d hits, want 1", len(hits))
	}
	got := hits[0]
	got.Score = 0
	want := Hit{ID: "c1/t2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if hits[0].Score <= 0 {
		t.Errorf("got score %v, want > 0", hits[0].Score)
	}
}

func TestRanking(t *testing.T) {
	ix := openTemp(t, []Doc{
		{ID: "a", Conversation: "c", Kind: "turn", Text: "kubernetes cluster upgrade failed during the night"},
		{ID: "b", Conversation: "c", Kind: "turn", Text: "the cluster is fine"},
		{ID: "c", Conversation: "c", Kind: "turn", Text: "kubernetes"},
		{ID: "d", Conversation: "c", Kind: "turn", Text: "lunch was pasta"},
		{ID: "e", Conversation: "c", Kind: "turn", Text: "we talked about lunch and about the cluster"},
	})
	tests := []struct {
		name string
		q    Query
		want []string // in rank order
	}{
		// a holds both terms; c is a short document with the rarer term.
		{"more matched terms rank first", Query{Text: "kubernetes cluster"}, []string{"a", "c", "b", "e"}},
		{"repeated query terms change nothing", Query{Text: "kubernetes kubernetes kubernetes cluster"}, []string{"a", "c", "b", "e"}},
		{"equal scores break ties by id", Query{Text: "pasta lunch", Limit: 1}, []string{"d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(search(t, ix, tt.q)); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScoringModelIsBM25(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	for _, step := range []string{"created", "reopened"} {
		ix, err := Open(dir, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		m, ok := ix.bi.Mapping().(*mapping.IndexMappingImpl)
		if !ok || m.ScoringModel != "bm25" {
			t.Errorf("%s: got mapping %T scoring %q, want bm25", step, ix.bi.Mapping(), m.ScoringModel)
		}
		if err := ix.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

func TestPhrases(t *testing.T) {
	ix := openTemp(t, corpus())
	tests := []struct {
		name   string
		q      Query
		want   []string
		ranked bool // compare in rank order, else as sets
	}{
		// Shorter documents win on BM25 alone ...
		{"no phrase", Query{Text: "fox"}, []string{"c2/t1", "c1/s1", "c1/t1"}, true},
		// ... until the phrase match lifts c1/t1.
		{"phrase boosts", Query{Text: "fox", Phrases: []string{"quick brown fox"}}, []string{"c1/t1", "c2/t1", "c1/s1"}, true},
		{"reversed phrase adds nothing", Query{Text: "fox", Phrases: []string{"fox brown"}}, []string{"c2/t1", "c1/s1", "c1/t1"}, true},
		{"required phrase filters", Query{Text: "fox", Phrases: []string{"quick brown fox"}, RequirePhrases: true}, []string{"c1/t1"}, false},
		{"required phrase with stop word gap", Query{Phrases: []string{"jumps over the lazy dog"}, RequirePhrases: true}, []string{"c1/t1"}, false},
		{"phrase only", Query{Phrases: []string{"brown fox"}}, []string{"c1/t1", "c2/t1"}, false},
		{"any phrase without require", Query{Phrases: []string{"brown fox", "warm windowsill"}}, []string{"c1/t1", "c1/t2", "c2/t1"}, false},
		{"all required phrases must match", Query{Phrases: []string{"brown fox", "lazy dog"}, RequirePhrases: true}, []string{"c1/t1"}, false},
		{"required phrase absent", Query{Text: "fox", Phrases: []string{"purple fox"}, RequirePhrases: true}, nil, false},
		{"stop-word phrase ignored", Query{Text: "database", Phrases: []string{"the and of"}, RequirePhrases: true}, []string{"c2/g1", "c2/t2"}, false},
		{"required phrase respects filter", Query{Phrases: []string{"brown fox"}, RequirePhrases: true, Conversations: []string{"c2"}}, []string{"c2/t1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ids(search(t, ix, tt.q))
			if !tt.ranked {
				sort.Strings(got)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPhraseBoostRaisesScore(t *testing.T) {
	ix := openTemp(t, corpus())
	plain := search(t, ix, Query{Text: "brown fox", Conversations: []string{"c1"}, Kinds: []string{"turn"}})
	boosted := search(t, ix, Query{Text: "brown fox", Phrases: []string{"brown fox"}, Conversations: []string{"c1"}, Kinds: []string{"turn"}})
	if len(plain) != 1 || len(boosted) != 1 {
		t.Fatalf("got %d and %d hits, want 1 and 1", len(plain), len(boosted))
	}
	if boosted[0].Score <= plain[0].Score {
		t.Errorf("got boosted score %v, want > plain %v", boosted[0].Score, plain[0].Score)
	}
}

func TestOddQueryText(t *testing.T) {
	ix := openTemp(t, corpus())
	tests := []struct {
		name     string
		q        Query
		wantHits bool
	}{
		{"empty", Query{}, false},
		{"whitespace", Query{Text: " \t\n "}, false},
		{"stop words only", Query{Text: "the and of a is"}, false},
		{"stop-word phrases only", Query{Phrases: []string{"the", "of a"}}, false},
		{"empty phrases", Query{Phrases: []string{"", " "}, RequirePhrases: true}, false},
		{"filters without text", Query{Conversations: []string{"c1"}}, false},
		{"query syntax is plain text", Query{Text: `title:foo AND +bar -baz ~ ^ " ( ) [ ] { } / \ *`}, false},
		{"syntax around a real term", Query{Text: `+fox -dog text:cat^5 "lazy`}, true},
		{"syntax in phrases", Query{Phrases: []string{`"fox" AND (dog)`, `\`, `*`}, RequirePhrases: true}, false},
		{"regexp and wildcard look-alikes", Query{Text: `/f.*x/ fo? f*`}, false},
		{"invalid utf-8", Query{Text: "fox \xff\xfe\xfd", Phrases: []string{"brown \xc3"}}, true},
		{"only invalid utf-8", Query{Text: "\xff\xfe", Phrases: []string{"\x80"}}, false},
		{"nul and control bytes", Query{Text: "fox\x00\x01\x1b[0m"}, true},
		{"very long text", Query{Text: strings.Repeat("fox lazy dog quantum ", 5000)}, true},
		{"many phrases", Query{Phrases: slices.Repeat([]string{"brown fox"}, 500)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.DocText = testDocText
			hits, err := ix.Search(context.Background(), tt.q)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if got := len(hits) > 0; got != tt.wantHits {
				t.Errorf("got hits %v, want hits %v", ids(hits), tt.wantHits)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	var docs []Doc
	for i := range 1200 {
		docs = append(docs, Doc{ID: fmt.Sprintf("c/t%04d", i), Conversation: "c", Kind: "turn", Text: fmt.Sprintf("note number %d about gardening", i)})
	}
	ix := openTemp(t, docs)
	tests := []struct {
		limit, want int
	}{
		{-5, DefaultLimit},
		{0, DefaultLimit},
		{1, 1},
		{25, 25},
		{1000, 1000},
		{1001, MaxLimit},
		{1 << 30, MaxLimit},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			if got := len(search(t, ix, Query{Text: "gardening", Limit: tt.limit})); got != tt.want {
				t.Errorf("got %d hits, want %d", got, tt.want)
			}
		})
	}
}

func TestAddReplaceDelete(t *testing.T) {
	ctx := context.Background()
	ix := openTemp(t, corpus())
	count := func() uint64 {
		t.Helper()
		n, err := ix.Count()
		if err != nil {
			t.Fatalf("Count: %v", err)
		}
		return n
	}
	if got, want := count(), uint64(len(corpus())); got != want {
		t.Fatalf("got count %d, want %d", got, want)
	}

	// Replace: same ID, new text and new conversation.
	if err := ix.Add(ctx, []Doc{{ID: "c1/t1", Conversation: "c3", Kind: "turn", Text: "penguins on ice"}}); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if got, want := count(), uint64(len(corpus())); got != want {
		t.Errorf("after replace: got count %d, want %d", got, want)
	}
	if got := sortedIDs(search(t, ix, Query{Text: "lazy"})); len(got) != 0 {
		t.Errorf("old text still found: %v", got)
	}
	hits := search(t, ix, Query{Text: "penguin", Conversations: []string{"c3"}})
	if len(hits) != 1 || hits[0].ID != "c1/t1" {
		t.Errorf("got %+v, want the replaced c1/t1 in c3", hits)
	}
	if got := search(t, ix, Query{Text: "penguin", Conversations: []string{"c1"}}); len(got) != 0 {
		t.Errorf("replaced doc still in old conversation: %v", ids(got))
	}

	// Duplicate IDs in one call: the last one wins.
	if err := ix.Add(ctx, []Doc{
		{ID: "dup", Conversation: "c", Kind: "turn", Text: "first walrus"},
		{ID: "dup", Conversation: "c", Kind: "turn", Text: "second narwhal"},
	}); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if got := ids(search(t, ix, Query{Text: "walrus narwhal"})); !slices.Equal(got, []string{"dup"}) {
		t.Errorf("got %v, want [dup]", got)
	}
	if got := search(t, ix, Query{Text: "walrus"}); len(got) != 0 {
		t.Errorf("got %v, want the first duplicate replaced", ids(got))
	}

	// Delete, including unknown IDs and an empty list.
	if err := ix.Delete(ctx, []string{"c1/t1", "dup", "no-such-id"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := ix.Delete(ctx, nil); err != nil {
		t.Fatalf("Delete(nil): %v", err)
	}
	if got, want := count(), uint64(len(corpus())-1); got != want {
		t.Errorf("after delete: got count %d, want %d", got, want)
	}
	if got := search(t, ix, Query{Text: "penguin narwhal"}); len(got) != 0 {
		t.Errorf("deleted docs still found: %v", ids(got))
	}
}

func TestAddErrors(t *testing.T) {
	ix := openTemp(t, nil)
	tests := []struct {
		name    string
		ctx     func() context.Context
		docs    []Doc
		wantErr error
	}{
		{"empty id", context.Background, []Doc{{ID: "ok", Text: "x"}, {Text: "no id"}}, ErrInvalidDoc},
		{"cancelled", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, []Doc{{ID: "a", Text: "x"}}, context.Canceled},
		{"nil docs", context.Background, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ix.Add(tt.ctx(), tt.docs)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("got error %v, want %v", err, tt.wantErr)
			}
			if n, _ := ix.Count(); n != 0 {
				t.Errorf("got count %d after a failed Add, want 0", n)
			}
		})
	}
}

func TestBatchSplitting(t *testing.T) {
	ix, err := Open(filepath.Join(t.TempDir(), "idx"), &Options{BatchSize: 7})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer ix.Close()
	docs := synthDocs(100, 3)
	if err := ix.Add(context.Background(), docs); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if n, err := ix.Count(); err != nil || n != 100 {
		t.Errorf("got count %d, %v, want 100", n, err)
	}
	var del []string
	for _, d := range docs[:50] {
		del = append(del, d.ID)
	}
	if err := ix.Delete(context.Background(), del); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n, err := ix.Count(); err != nil || n != 50 {
		t.Errorf("got count %d, %v, want 50", n, err)
	}
}

func TestReopenPersists(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "nested", "idx")
	ix, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	// Many tiny batches, then one big one, then a delete: all must survive Close.
	for _, d := range corpus() {
		if err := ix.Add(ctx, []Doc{d}); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	big := synthDocs(3000, 1)
	if err := ix.Add(ctx, big); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if err := ix.Delete(ctx, []string{"c2/t2"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	want := search(t, ix, Query{Text: "fox database garden", Limit: 50})
	if err := ix.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := ix.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := ix.Search(ctx, Query{Text: "fox"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Search after Close: got %v, want ErrClosed", err)
	}
	if err := ix.Add(ctx, corpus()); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: got %v, want ErrClosed", err)
	}

	ix2, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer ix2.Close()
	n, err := ix2.Count()
	if wantN := uint64(len(corpus()) - 1 + len(big)); err != nil || n != wantN {
		t.Errorf("got count %d, %v, want %d", n, err, wantN)
	}
	got := search(t, ix2, Query{Text: "fox database garden", Limit: 50})
	if !slices.Equal(ids(got), ids(want)) {
		t.Errorf("after reopen got %v, want %v", ids(got), ids(want))
	}
}

func TestUncleanShutdownIsCorrupt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	ix, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := ix.Add(context.Background(), corpus()); err != nil {
		t.Fatalf("Add: %v", err)
	}
	// A crash: Bleve is closed without our final flush.
	if err := ix.bi.Close(); err != nil {
		t.Fatalf("bleve Close: %v", err)
	}
	if _, err := Open(dir, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("got error %v, want ErrCorrupt", err)
	}
}

func TestOpenExistingEmptyDir(t *testing.T) {
	dir := t.TempDir() // exists and is empty
	ix, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := ix.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestOpenCorrupt(t *testing.T) {
	build := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "idx")
		ix, err := Open(dir, nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if err := ix.Add(context.Background(), corpus()); err != nil {
			t.Fatalf("Add: %v", err)
		}
		if err := ix.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		return dir
	}
	write := func(t *testing.T, path, data string) {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		wantErr error
	}{
		{"garbage meta", func(t *testing.T, dir string) { write(t, filepath.Join(dir, "index_meta.json"), "{not json") }, ErrCorrupt},
		{"missing meta", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "index_meta.json")) }, ErrCorrupt},
		{"unknown index type", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "index_meta.json"), `{"storage":"x","index_type":"nope"}`)
		}, ErrCorrupt},
		{"garbage root.bolt", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "store", "root.bolt"), strings.Repeat("garbage!", 4096))
		}, ErrCorrupt},
		{"truncated segments", func(t *testing.T, dir string) {
			files, _ := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
			if len(files) == 0 {
				t.Fatal("no segment files to damage")
			}
			for _, f := range files {
				write(t, f, "short")
			}
		}, ErrCorrupt},
		{"unrelated directory", func(t *testing.T, dir string) {
			os.RemoveAll(dir)
			os.MkdirAll(dir, 0o755)
			write(t, filepath.Join(dir, "notes.txt"), "hello")
		}, ErrCorrupt},
		{"path is a file", func(t *testing.T, dir string) {
			os.RemoveAll(dir)
			write(t, dir, "hello")
		}, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := build(t)
			tt.damage(t, dir)
			ix, err := Open(dir, nil)
			if err == nil {
				ix.Close()
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			// The documented recovery: delete and rebuild.
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			ix, err = Open(dir, nil)
			if err != nil {
				t.Fatalf("Open after delete: %v", err)
			}
			if err := ix.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

func TestOpenLocked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	ix, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer ix.Close()
	// bbolt's flock is per open file, so a second Open in this process
	// conflicts just like another process would.
	_, err = Open(dir, &Options{LockTimeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || errors.Is(err, ErrCorrupt) {
		t.Errorf("got error %v, want ErrLocked and not ErrCorrupt", err)
	}
}

func TestConcurrentAddSearch(t *testing.T) {
	ix := openTemp(t, corpus())
	ctx := context.Background()
	docs := synthDocs(400, 2)
	rememberTexts(docs)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < len(docs); i += 2 {
				if err := ix.Add(ctx, docs[i:i+1]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 100 {
				hits, err := ix.Search(ctx, Query{Text: "fox garden meeting", Conversations: []string{"c1"}, Highlight: true, DocText: testDocText})
				if err != nil {
					errs <- err
					return
				}
				for _, h := range hits {
					if !strings.HasPrefix(h.ID, "c1/") {
						errs <- fmt.Errorf("hit %s from another conversation in a c1 search", h.ID)
						return
					}
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			if _, err := ix.Count(); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, err := ix.Count(); err != nil || n != uint64(len(corpus())+len(docs)) {
		t.Errorf("got count %d, %v, want %d", n, err, len(corpus())+len(docs))
	}
}

func TestCloseWaitsForAdds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	ix, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	docs := synthDocs(300, 4)
	var added sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range docs {
		added.Go(func() {
			if err := ix.Add(context.Background(), docs[i:i+1]); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !errors.Is(err, ErrClosed) {
				t.Errorf("Add: %v", err)
			}
		})
	}
	if err := ix.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	added.Wait()
	ix, err = Open(dir, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer ix.Close()
	// Every Add that reported success before Close must be on disk.
	if n, err := ix.Count(); err != nil || n != uint64(ok) {
		t.Errorf("got count %d, %v, want %d", n, err, ok)
	}
}

// Filters select documents; they must not change their scores.
func TestFiltersKeepScores(t *testing.T) {
	ix := openTemp(t, corpus())
	tests := []struct {
		name    string
		q       Query // without filters
		filters func(*Query)
	}{
		{"conversations", Query{Text: "fox cat database dog"}, func(q *Query) { q.Conversations = []string{"c2", "c1"} }},
		{"one conversation", Query{Text: "fox cat database dog"}, func(q *Query) { q.Conversations = []string{"c1"} }},
		{"kinds", Query{Text: "fox cat database dog"}, func(q *Query) { q.Kinds = []string{"turn", "segment", "tag"} }},
		{"speaker", Query{Text: "fox cat database dog"}, func(q *Query) { q.Speaker = "alice" }},
		{"ids", Query{Text: "fox cat database dog"}, func(q *Query) { q.IDs = []string{"c1/t1", "c1/t2", "c1/s1", "c2/t1", "c2/t2", "c2/g1"} }},
		{"all with phrase", Query{Text: "fox cat dog", Phrases: []string{"brown fox"}}, func(q *Query) {
			q.Conversations, q.Kinds, q.Speaker = []string{"c1"}, []string{"turn"}, "Alice"
			q.IDs = []string{"c1/t1", "c1/t2"}
		}},
		{"required phrase", Query{Text: "fox dog", Phrases: []string{"brown fox"}, RequirePhrases: true}, func(q *Query) { q.Conversations = []string{"c1", "c2"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[string]float64{}
			for _, h := range search(t, ix, tt.q) {
				want[h.ID] = h.Score
			}
			q := tt.q
			tt.filters(&q)
			hits := search(t, ix, q)
			if len(hits) == 0 {
				t.Fatal("got no hits")
			}
			for _, h := range hits {
				if w, ok := want[h.ID]; !ok || !(math.Abs(h.Score-w) <= 1e-9) { // NaN fails too
					t.Errorf("%s: got score %v, want %v", h.ID, h.Score, w)
				}
			}
		})
	}
}

func TestSearchCancelled(t *testing.T) {
	ix := openTemp(t, corpus())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Search(ctx, Query{Text: "fox"}); !errors.Is(err, context.Canceled) {
		t.Errorf("got error %v, want context.Canceled", err)
	}
}

// TestOtherSchemaIsOutdated: an index written with another schema opens
// as ErrOutdated (a rebuild, not damage) and still as ErrCorrupt, which is
// what makes callers rebuild.
func TestOtherSchemaIsOutdated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ix")
	ix, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	bi, err := bleve.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	b := bi.NewBatch()
	b.SetInternal(schemaKey, []byte("vc-mcp-index-1"))
	if err := persist(bi, b, nil); err != nil {
		t.Fatal(err)
	}
	if err := bi.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, nil)
	if !errors.Is(err, ErrOutdated) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a schema-1 index: %v, want ErrOutdated and ErrCorrupt", err)
	}
}
