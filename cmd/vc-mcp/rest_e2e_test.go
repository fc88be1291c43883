package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// TestBinaryCompletionsSubscriptionsLinks drives the built binary over
// stdio and Streamable HTTP: a subscription gets its update after an
// exchange is stored, a completion lists the conversation, and find_quote's
// resource link reads back the quoted turn. (The mcp package's tests cover
// every transport and case in process.)
func TestBinaryCompletionsSubscriptionsLinks(t *testing.T) {
	for _, tr := range []string{"stdio", "streamable"} {
		t.Run(tr, func(t *testing.T) {
			var c *client.Client
			if tr == "stdio" {
				c = startStdio(t, t.TempDir()).c
			} else {
				base, _ := startHTTP(t, t.TempDir())
				var err error
				if c, err = client.NewStreamableHttpClient(base+"/mcp", transport.WithContinuousListening()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				if err := c.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				initialize(t, c)
			}
			var mu sync.Mutex
			updated := map[string]bool{}
			c.OnNotification(func(n mcpgo.JSONRPCNotification) {
				if n.Method == mcpgo.MethodNotificationResourceUpdated {
					mu.Lock()
					updated[n.Params.AdditionalFields["uri"].(string)] = true
					mu.Unlock()
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId("sub-1"),
				Method: "resources/subscribe", Params: map[string]any{"uri": "virtualcontext://conversations/lab/turns/t1"}})
			if err != nil || resp.Error != nil {
				t.Fatalf("subscribe: %v %+v", err, resp)
			}
			mustOK(t, c, "compact_context", map[string]any{"conversation_id": "lab", "messages": []any{msg("user", "The centrifuge in room 4 is booked on Tuesdays.")}})
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				mu.Lock()
				ok := updated["virtualcontext://conversations/lab/turns/t1"]
				mu.Unlock()
				if ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no resources/updated for the subscribed turn")
				}
			}

			creq := mcpgo.CompleteRequest{}
			creq.Params.Ref = mcpgo.PromptReference{Type: "ref/prompt", Name: "recall"}
			creq.Params.Argument = mcpgo.CompleteArgument{Name: "conversation_id", Value: "la"}
			cres, err := c.Complete(ctx, creq)
			if err != nil || !slices.Equal(cres.Completion.Values, []string{"lab"}) {
				t.Fatalf("complete conversation_id: %+v %v", cres, err)
			}

			res := mustOK(t, c, "find_quote", map[string]any{"conversation_id": "lab", "query": "centrifuge"})
			var link mcpgo.ResourceLink
			for _, ct := range res.Content {
				if l, ok := ct.(mcpgo.ResourceLink); ok {
					link = l
				}
			}
			if link.URI != "virtualcontext://conversations/lab/turns/t1" {
				t.Fatalf("find_quote links: got %+v", res.Content)
			}
			rreq := mcpgo.ReadResourceRequest{}
			rreq.Params.URI = link.URI
			rr, err := c.ReadResource(ctx, rreq)
			if err != nil {
				t.Fatal(err)
			}
			var turn struct {
				Text string `json:"text"`
				Role string `json:"role"`
			}
			body := rr.Contents[0].(mcpgo.TextResourceContents).Text
			if err := json.Unmarshal([]byte(body), &turn); err != nil || turn.Role != "user" || !strings.Contains(turn.Text, "room 4") {
				t.Fatalf("turn resource: %s (%v)", body, err)
			}
		})
	}
}
