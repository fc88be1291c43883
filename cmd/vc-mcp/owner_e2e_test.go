package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
)

const (
	anaToken = "ana-0123456789abcdef0123456789abcdef"
	boToken  = "bo-fedcba9876543210fedcba9876543210"
)

// httpClient is an MCP client over Streamable HTTP sending token.
func httpClient(t *testing.T, base, token string) (*client.Client, error) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		return nil, err
	}
	return c, nil
}

// TestHTTPOwners: `serve --http` with a token file naming two owners, over
// real HTTP with the mcp-go client, on the data directory alone and on
// PostgreSQL: each token's conversations are refused to the other token on
// read and write, find_quote over scope "all" covers the caller's
// conversations and unowned ones, and a wrong token gets no session.
func TestHTTPOwners(t *testing.T) {
	for _, store := range []string{"bbolt", "postgres"} {
		t.Run(store, func(t *testing.T) {
			tokens := filepath.Join(t.TempDir(), "tokens")
			if err := os.WriteFile(tokens, []byte("# owner token\nana "+anaToken+"\n\nbo "+boToken+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"--auth-token-file", tokens}
			if store == "postgres" {
				args = append(args, "--store", pgtest.URL(t))
			}
			base, _ := startHTTP(t, t.TempDir(), args...)
			ana, err := httpClient(t, base, anaToken)
			if err != nil {
				t.Fatal(err)
			}
			initialize(t, ana)
			bo, err := httpClient(t, base, boToken)
			if err != nil {
				t.Fatal(err)
			}
			initialize(t, bo)

			mustOK(t, ana, "compact_context", map[string]any{"conversation_id": "ana-notes", "messages": []any{msg("user", "The heron migration survey starts in April."), msg("assistant", "Noted: April.")}})
			mustOK(t, bo, "compact_context", map[string]any{"conversation_id": "bo-notes", "messages": []any{msg("user", "The heron feeder needs new seed.")}})

			refused := func(name string, args map[string]any) {
				t.Helper()
				res := call(t, bo, name, args)
				if !res.IsError || !strings.Contains(text(res), "another owner") {
					t.Errorf("%s on ana's conversation with bo's token: isError %v, %q; want a refusal naming another owner", name, res.IsError, text(res))
				}
			}
			refused("recall_context", map[string]any{"conversation_id": "ana-notes", "message": "when does the heron survey start?"})
			refused("find_quote", map[string]any{"conversation_id": "ana-notes", "query": "heron"})
			refused("domain_status", map[string]any{"conversation_id": "ana-notes"})
			refused("compact_context", map[string]any{"conversation_id": "ana-notes", "messages": []any{msg("user", "bo writes here")}})
			refused("forget", map[string]any{"conversation_id": "ana-notes", "query": "heron"})

			var fq struct {
				Quotes []struct {
					ConversationID string `json:"conversation_id"`
				} `json:"quotes"`
			}
			structured(t, mustOK(t, bo, "find_quote", map[string]any{"query": "heron", "scope": "all"}), &fq)
			var convs []string
			for _, q := range fq.Quotes {
				convs = append(convs, q.ConversationID)
			}
			if !slices.Equal(convs, []string{"bo-notes"}) {
				t.Errorf("find_quote scope all with bo's token: %v, want bo-notes only", convs)
			}
			res := mustOK(t, ana, "recall_context", map[string]any{"conversation_id": "ana-notes", "message": "when does the heron survey start?", "max_tokens": 400})
			if !strings.Contains(text(res), "April") {
				t.Errorf("ana's recall of her conversation: %q", text(res))
			}
			// The owner writes on.
			mustOK(t, ana, "compact_context", map[string]any{"conversation_id": "ana-notes", "messages": []any{msg("user", "Second survey day is in May.")}})

			if c, err := httpClient(t, base, "not-a-token-at-all-0000000000"); err == nil {
				req := mcpgo.InitializeRequest{}
				req.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
				req.Params.ClientInfo = mcpgo.Implementation{Name: "e2e", Version: "1"}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, ierr := c.Initialize(ctx, req)
				cancel()
				if ierr == nil {
					t.Error("a wrong token initialized a session")
				}
			}
		})
	}
}
