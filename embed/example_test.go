package embed_test

import (
	"context"
	"fmt"
	"math"

	"github.com/vc-mcp/vc-mcp/embed"
)

func ExampleTokenizer_Encode() {
	tok, err := embed.LoadTokenizer("testdata/tiny")
	if err != nil {
		panic(err)
	}
	fmt.Println(tok.Encode("Café state-of-the-art 東京!"))
	// Output: [101 7668 2110 1011 1997 1011 1996 1011 2396 1879 1755 999 102]
}

func ExampleLazy() {
	l := embed.NewLazy("testdata/no-such-model", nil)
	l.Start(context.Background())
	if _, err := l.Wait(context.Background()); err != nil {
		ok, why := l.Ready()
		fmt.Println(ok, why)
	}
	// Output: false no model at testdata/no-such-model (run `vc-mcp model pull`)
}

func ExampleModel_Embed() {
	// Load converts pytorch_model.bin on first use and caches the result
	// next to it (or in the user cache dir when the directory is read-only);
	// ReadOnly keeps the conversion in memory.
	m, err := embed.Load(context.Background(), "testdata/tiny", &embed.Options{ReadOnly: true})
	if err != nil {
		panic(err)
	}
	vecs, err := m.Embed(context.Background(), []string{"that caching trick for the feed", "  "})
	if err != nil {
		panic(err)
	}
	norm := 0.0
	for _, x := range vecs[0] {
		norm += float64(x) * float64(x)
	}
	fmt.Printf("dim %d, norm %.4f, blank text: %v\n", m.Dim(), math.Sqrt(norm), vecs[1] == nil)
	// Output: dim 32, norm 1.0000, blank text: true
}
