package index_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/vc-mcp/vc-mcp/index"
)

func ExampleIndex_Search() {
	dir, err := os.MkdirTemp("", "index-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ix, err := index.Open(filepath.Join(dir, "fts"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ix.Close()

	ctx := context.Background()
	docs := []index.Doc{
		{ID: "trip/t1", Conversation: "trip", Kind: "turn", Speaker: "user",
			Text: "We should book the flights to Lisbon before prices go up."},
		{ID: "trip/t2", Conversation: "trip", Kind: "turn", Speaker: "assistant",
			Text: "Flight prices to Lisbon usually rise in May."},
		{ID: "work/t1", Conversation: "work", Kind: "turn", Speaker: "user",
			Text: "The Lisbon office booked the meeting room."},
	}
	// The index keeps no text: the caller's copy gives the excerpts.
	texts := map[string]string{}
	for _, d := range docs {
		texts[d.ID] = d.Text
	}
	if err = ix.Add(ctx, docs); err != nil {
		log.Fatal(err)
	}

	hits, err := ix.Search(ctx, index.Query{
		Text:          "when did we book flights to Lisbon?",
		Conversations: []string{"trip"},
		Highlight:     true,
		// Highlighting (and phrases) read the text from the caller.
		DocText: func(id string) (string, bool) { s, ok := texts[id]; return s, ok },
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Println(h.ID, index.Fragments(texts[h.ID], h.Matches))
	}
	fmt.Println(index.Analyze("when did we book flights to Lisbon?"))
	// Output:
	// trip/t1 [We should **book** the **flights** to **Lisbon** before prices go up.]
	// trip/t2 [**Flight** prices to **Lisbon** usually rise in May.]
	// [book flight lisbon]
}
