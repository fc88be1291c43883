package index

import (
	"context"
	"strings"
	"testing"
)

// FuzzSearch feeds arbitrary text and phrases into Search on a small real
// index; it must neither panic nor return an error, and filters must hold.
func FuzzSearch(f *testing.F) {
	for _, seed := range []struct {
		text, phrase string
		require      bool
	}{
		{"fox", "brown fox", false},
		{`title:foo AND +bar -baz ~ ^ " ( ) [ ] { } / \ *`, `"quoted"`, true},
		{"\xff\xfe", "\x00", false},
		{"", "", true},
		{"the of and", "to be or not to be", true},
		{"fo*x~2 /re.*gexp/ field:>5", "a b c d e f g", false},
	} {
		f.Add(seed.text, seed.phrase, seed.require)
	}
	ix := openTemp(f, corpus())
	f.Fuzz(func(t *testing.T, text, phrase string, require bool) {
		for _, q := range []Query{
			{Text: text, Phrases: []string{phrase}, RequirePhrases: require, Highlight: true, DocText: testDocText},
			{Text: text + " " + phrase, Conversations: []string{"c2"}, Speaker: phrase, Highlight: true, DocText: testDocText},
		} {
			hits, err := ix.Search(context.Background(), q)
			if err != nil {
				t.Fatalf("Search(%+v): %v", q, err)
			}
			for _, h := range hits {
				if len(q.Conversations) > 0 && !strings.HasPrefix(h.ID, "c2/") {
					t.Errorf("hit %s from another conversation in a c2 search", h.ID)
				}
			}
		}
	})
}
