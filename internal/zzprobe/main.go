package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/bench"
)

func main() {
	ctx := context.Background()
	dir := os.Args[1]
	st, err := memory.Open(ctx, memory.Options{Dir: dir})
	if err != nil {
		panic(err)
	}
	syn := bench.Generate(10000, 1)
	for i := 0; i < len(syn.Turns); i += 100 {
		if _, err := st.Ingest(ctx, memory.IngestRequest{ConversationID: "default", Messages: syn.Messages(i, min(i+100, len(syn.Turns)))}); err != nil {
			panic(err)
		}
	}
	st.Close()
	q, _ := syn.Queries(200)
	b, _ := json.Marshal(q)
	os.WriteFile(os.Args[2], b, 0o644)
	fmt.Println("ok")
}
