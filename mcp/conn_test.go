package mcp

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
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

// TestServeConnSurvivesAPanickingPrompt: mcp-go recovers tool and resource
// handlers only. A prompt whose memory call panics gets an error answer
// naming it, and the session (and the process, every host's) goes on.
func TestServeConnSurvivesAPanickingPrompt(t *testing.T) {
	mem := newFakeMemory()
	mem.panicOn = "Recall"
	s := NewServer(mem, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srvEnd, cliEnd := net.Pipe()
	go func() { _ = ServeConn(ctx, s, srvEnd, ConnOptions{SessionID: "panicky"}) }()
	c := client.NewClient(transport.NewIO(cliEnd, cliEnd, nil))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "host", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	get := mcpgo.GetPromptRequest{}
	get.Params.Name = "recall"
	get.Params.Arguments = map[string]string{"topic": "the garden"}
	_, err := c.GetPrompt(ctx, get)
	if err == nil || !strings.Contains(err.Error(), "prompts/get failed on a bug") {
		t.Fatalf("prompt whose handler panics: %v, want an error naming prompts/get", err)
	}
	call := mcpgo.CallToolRequest{}
	call.Params.Name = "domain_status"
	if res, err := c.CallTool(ctx, call); err != nil || res.IsError {
		t.Fatalf("the session after the panic: %+v, %v", res, err)
	}
}

// TestSamplingIDsStartApart: each session numbers its sampling requests
// from its own random start, so a host's late answer to a request of a
// shared server that has since restarted cannot match a request of the new
// one (both used to start at 1).
func TestSamplingIDsStartApart(t *testing.T) {
	a := newConnSession(ConnOptions{SessionID: "before"}, io.Discard)
	b := newConnSession(ConnOptions{SessionID: "after"}, io.Discard)
	x, y := a.nextID.Add(1), b.nextID.Add(1)
	if x == y || x <= 1 || y <= 1 || x >= 1<<53 || y >= 1<<53 {
		t.Fatalf("first sampling ids %d and %d: want two different ids, neither 1, both exact in a JSON number", x, y)
	}
}

// TestServeConnOnInitializeOnce: a client of the stateless protocol sends
// its info with every request; OnInitialize (the "host connected" line of
// the shared server's log) still runs once per session, as for a client of
// the legacy handshake.
func TestServeConnOnInitializeOnce(t *testing.T) {
	for _, version := range []string{mcpgo.LATEST_LEGACY_PROTOCOL_VERSION, mcpgo.LATEST_PROTOCOL_VERSION} {
		t.Run(version, func(t *testing.T) {
			s := mcpserver.NewMCPServer("t", "1")
			s.AddTool(mcpgo.NewTool("noop"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText("ok"), nil
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var calls []string
			srvEnd, cliEnd := net.Pipe()
			go func() {
				_ = ServeConn(ctx, s, srvEnd, ConnOptions{SessionID: "once", OnInitialize: func(info mcpgo.Implementation) {
					mu.Lock()
					calls = append(calls, info.Name)
					mu.Unlock()
				}})
			}()
			c := client.NewClient(transport.NewIO(cliEnd, cliEnd, nil))
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req := mcpgo.InitializeRequest{}
			req.Params.ProtocolVersion = version
			req.Params.ClientInfo = mcpgo.Implementation{Name: "cli", Version: "1"}
			if _, err := c.Initialize(ctx, req); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				call := mcpgo.CallToolRequest{}
				call.Params.Name = "noop"
				if _, err := c.CallTool(ctx, call); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(calls) != 1 || calls[0] != "cli" {
				t.Errorf("OnInitialize ran for %q; want once, for \"cli\"", calls)
			}
		})
	}
}
