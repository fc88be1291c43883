package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/mcp"
	"github.com/vc-mcp/vc-mcp/memory/bench"
)

// benchBM25Serve is "vc-mcp bench bm25-serve": the baseline `bench scale`
// times beside recall_context through the protocol. It serves one tool,
// search, over MCP on stdio: a plain in-memory BM25 over the synthetic
// conversation of --turns and --seed (the turns `bench scale` stores),
// answering with the top hits as text. Same transport code and library as
// `vc-mcp serve`, so the two differ only in what answers.
func benchBM25Serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench bm25-serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	turns := fs.Int("turns", 10000, "turns of the synthetic conversation to index")
	seed := fs.Uint64("seed", 1, "generator seed (as bench scale's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *turns < 1 {
		return errors.New("bench bm25-serve: --turns must be at least 1")
	}
	syn := bench.Generate(*turns, *seed)
	docs := make([]string, *turns)
	for i := range docs {
		docs[i] = syn.Turns[i].Content
	}
	count, err := bench.NewCounter()
	if err != nil {
		return fmt.Errorf("bench bm25-serve: %w", err)
	}
	x := bench.NewBM25Search(docs).WithTokens(count.Count)
	srv := mcpserver.NewMCPServer("bm25-baseline", buildVersion(), mcpserver.WithToolCapabilities(false))
	srv.AddTool(mcpgo.NewTool("search",
		mcpgo.WithDescription("Plain BM25 search over the stored turns; returns the best turns as text."),
		mcpgo.WithString("query", mcpgo.Required(), mcpgo.Description("what to search for")),
		mcpgo.WithNumber("limit", mcpgo.Description("how many turns (default 10)")),
		mcpgo.WithNumber("max_tokens", mcpgo.Description("instead of limit: the best turns that fit in this many cl100k tokens")),
	), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		q, err := req.RequireString("query")
		if err != nil {
			return mcpgo.NewToolResultError(err.Error()), nil
		}
		if m := req.GetInt("max_tokens", 0); m != 0 {
			if m < 1 || m > 1_000_000 {
				return mcpgo.NewToolResultError(fmt.Sprintf("max_tokens must be between 1 and 1000000 (got %d)", m)), nil
			}
			return mcpgo.NewToolResultText(x.AnswerBudget(q, m)), nil
		}
		k := req.GetInt("limit", 10)
		if k < 1 || k > 1000 {
			return mcpgo.NewToolResultError(fmt.Sprintf("limit must be between 1 and 1000 (got %d)", k)), nil
		}
		return mcpgo.NewToolResultText(x.Answer(q, k)), nil
	})
	return mcp.ServeStdioWith(ctx, srv, stdin, stdout, mcp.StdioOptions{})
}
