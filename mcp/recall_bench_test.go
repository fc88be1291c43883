package mcp

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/bench"
)

// BenchmarkRecallTool times recall_context through the MCP adapter (an
// in-process mcp-go client: the adapter and the library's JSON-RPC, no
// transport) beside memory's Recall on the same store and queries: the
// difference is what the adapter costs a recall.
func BenchmarkRecallTool(b *testing.B) {
	ctx := context.Background()
	st, err := memory.Open(ctx, memory.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	syn := bench.Generate(5000, 1)
	for i := 0; i < len(syn.Turns); i += 100 {
		if _, err := st.Ingest(ctx, memory.IngestRequest{ConversationID: "bench", Messages: syn.Messages(i, min(i+100, len(syn.Turns)))}); err != nil {
			b.Fatal(err)
		}
	}
	queries, _ := syn.Queries(100)
	b.Run("store", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := st.Recall(ctx, memory.RecallRequest{ConversationID: "bench", Message: queries[i%len(queries)], MaxTokens: 2000}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("tool", func(b *testing.B) {
		c, err := client.NewInProcessClient(NewServer(st, Options{Version: "bench"}))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		init := mcpgo.InitializeRequest{}
		init.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
		init.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "1"}
		if _, err := c.Initialize(ctx, init); err != nil {
			b.Fatal(err)
		}
		i := 0
		for b.Loop() {
			req := mcpgo.CallToolRequest{}
			req.Params.Name = "recall_context"
			req.Params.Arguments = map[string]any{"conversation_id": "bench", "message": queries[i%len(queries)], "max_tokens": 2000}
			res, err := c.CallTool(ctx, req)
			if err != nil || res.IsError {
				b.Fatalf("recall_context: %v %+v", err, res)
			}
			i++
		}
	})
}
