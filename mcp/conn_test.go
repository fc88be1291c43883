package mcp

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// TestServeConnSessions: several connections on one server are separate
// sessions, each with its own client info, served concurrently.
func TestServeConnSessions(t *testing.T) {
	s := mcpserver.NewMCPServer("t", "1")
	s.AddTool(mcpgo.NewTool("who"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		sess, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo)
		if !ok {
			return mcpgo.NewToolResultError("no session"), nil
		}
		return mcpgo.NewToolResultText(sess.GetClientInfo().Name), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var inits sync.Map
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			srvEnd, cliEnd := net.Pipe()
			name := fmt.Sprintf("host-%d", i)
			done := make(chan error, 1)
			go func() {
				done <- ServeConn(ctx, s, srvEnd, ConnOptions{SessionID: name + "-session",
					OnInitialize: func(info mcpgo.Implementation) { inits.Store(info.Name, true) }})
			}()
			c := client.NewClient(transport.NewIO(cliEnd, cliEnd, nil))
			if err := c.Start(ctx); err != nil {
				t.Error(err)
				return
			}
			req := mcpgo.InitializeRequest{}
			req.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
			req.Params.ClientInfo = mcpgo.Implementation{Name: name, Version: "1"}
			if _, err := c.Initialize(ctx, req); err != nil {
				t.Error(err)
				return
			}
			for range 50 {
				call := mcpgo.CallToolRequest{}
				call.Params.Name = "who"
				res, err := c.CallTool(ctx, call)
				if err != nil {
					t.Error(err)
					return
				}
				if got := res.Content[0].(mcpgo.TextContent).Text; got != name {
					t.Errorf("session of %s answered as %q", name, got)
					return
				}
			}
			c.Close()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("ServeConn: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("ServeConn did not end when its connection closed")
			}
		})
	}
	wg.Wait()
	for i := range 4 {
		if _, ok := inits.Load(fmt.Sprintf("host-%d", i)); !ok {
			t.Errorf("OnInitialize not called for host-%d", i)
		}
	}
}
