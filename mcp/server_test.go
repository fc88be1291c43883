package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/memory"
)

func startClient(t *testing.T, mem Memory) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(NewServer(mem, Options{Version: "test"}))
	if err != nil {
		t.Fatalf("NewInProcessClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcpgo.Implementation{Name: "test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	if !strings.Contains(res.Instructions, "recall_context") {
		t.Fatalf("instructions %q do not mention recall_context", res.Instructions)
	}
	return c
}

func callTool(t *testing.T, c *client.Client, name string, args any) *mcpgo.CallToolResult {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

func firstText(t *testing.T, res *mcpgo.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("result has no content")
	}
	tc, ok := res.Content[0].(mcpgo.TextContent)
	if !ok {
		t.Fatalf("first content block is %T, want text", res.Content[0])
	}
	return tc.Text
}

func TestToolsRoundTrip(t *testing.T) {
	mem := newFakeMemory()
	c := startClient(t, mem)

	res := callTool(t, c, "compact_context", map[string]any{
		"conversation_id": "proj:vc-mcp",
		"messages": []any{
			map[string]any{"role": "user", "content": "My sister Alice moved to Lisbon in May.", "timestamp": "2025-05-01T10:00:00Z"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Noted: Alice lives in Lisbon."}},
				"tool_calls": []any{map[string]any{"id": "c1", "type": "function"}}},
			map[string]any{"role": "tool", "content": nil, "tool_call_id": "c1"},
		},
	})
	if res.IsError {
		t.Fatalf("compact_context: isError: %s", firstText(t, res))
	}
	var ing memory.IngestResult
	decodeStructured(t, res, &ing)
	if got, want := ing.Stored, 3; got != want {
		t.Errorf("stored: got %d, want %d", got, want)
	}

	res = callTool(t, c, "recall_context", map[string]any{"message": "where does Alice live", "conversation_id": "proj:vc-mcp"})
	if res.IsError {
		t.Fatalf("recall_context: %s", firstText(t, res))
	}
	text := firstText(t, res)
	if !strings.Contains(text, "Alice moved to Lisbon") || strings.HasPrefix(text, "{") {
		t.Errorf("recall first block: got %q, want the plain-text context", text)
	}
	var rec memory.RecallResult
	decodeStructured(t, res, &rec)
	if got, want := rec.Breakdown.Budget, defaultRecallTokens; got != want {
		t.Errorf("recall default budget: got %d, want %d", got, want)
	}

	res = callTool(t, c, "expand_topic", map[string]any{"tag": "general", "depth": "full", "conversation_id": "proj:vc-mcp"})
	if res.IsError || !strings.Contains(firstText(t, res), "Lisbon") {
		t.Errorf("expand_topic: got %q (isError %v), want the topic content", firstText(t, res), res.IsError)
	}
	res = callTool(t, c, "collapse_topic", map[string]any{"tag": "general", "conversation_id": "proj:vc-mcp"})
	var col memory.CollapseResult
	decodeStructured(t, res, &col)
	if res.IsError || col.TokensFreed != 42 || col.Depth != memory.DepthSummary {
		t.Errorf("collapse_topic: got %+v (isError %v), want 42 tokens freed at depth summary", col, res.IsError)
	}
	res = callTool(t, c, "find_quote", map[string]any{"query": "Lisbon", "conversation_id": "proj:vc-mcp", "since": "2025-01-01T00:00:00Z"})
	var fq memory.FindQuoteResult
	decodeStructured(t, res, &fq)
	if res.IsError || len(fq.Quotes) == 0 || !strings.Contains(firstText(t, res), "bytes 0-10") {
		t.Errorf("find_quote: got %q (isError %v), want a hit with its log reference", firstText(t, res), res.IsError)
	}
	res = callTool(t, c, "domain_status", map[string]any{"conversation_id": "proj:vc-mcp"})
	var st memory.Status
	decodeStructured(t, res, &st)
	if res.IsError || st.Totals.Turns != 3 || !strings.Contains(firstText(t, res), "general") {
		t.Errorf("domain_status: got %q (isError %v), want 3 turns and the general tag", firstText(t, res), res.IsError)
	}
}

func decodeStructured(t *testing.T, res *mcpgo.CallToolResult, dst any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("marshal structuredContent: %v", err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
}

func TestToolErrors(t *testing.T) {
	tests := []struct {
		name     string
		tool     string
		args     any
		failWith error
		want     string
	}{
		{"missing messages", "compact_context", map[string]any{}, nil, "messages: required"},
		{"empty messages", "compact_context", map[string]any{"messages": []any{}}, nil, "messages: must hold 1-1000 messages, got 0"},
		{"path in conversation", "compact_context", map[string]any{"conversation_id": "../etc", "messages": []any{map[string]any{"role": "user", "content": "x"}}}, nil, "conversation_id: must be 1-128 characters"},
		{"dotdot conversation", "recall_context", map[string]any{"message": "x", "conversation_id": ".."}, nil, "conversation_id: must be 1-128 characters"},
		{"wrong type", "recall_context", map[string]any{"message": 42}, nil, "message: must be a string, got number"},
		{"missing message", "recall_context", map[string]any{}, nil, "message: required"},
		{"absurd max_tokens", "recall_context", map[string]any{"message": "x", "max_tokens": 1e9}, nil, "max_tokens: must be between 100 and 32000, got 1000000000"},
		{"fractional max_tokens", "recall_context", map[string]any{"message": "x", "max_tokens": 2.5}, nil, "max_tokens: must be an integer"},
		{"bad scope", "recall_context", map[string]any{"message": "x", "scope": "everything"}, nil, "scope: must be \"conversation\" or \"all\""},
		{"unknown argument", "recall_context", map[string]any{"message": "x", "budget": 5}, nil, "unknown argument \"budget\""},
		{"unknown tag", "expand_topic", map[string]any{"tag": "nope"}, nil, "no tag \"nope\""},
		{"bad depth", "expand_topic", map[string]any{"tag": "general", "depth": "deep"}, nil, "depth: must be \"segments\" or \"full\""},
		{"empty tag", "collapse_topic", map[string]any{"tag": " "}, nil, "tag: required"},
		{"too many results", "find_quote", map[string]any{"query": "x", "max_results": 51}, nil, "max_results: must be between 1 and 50, got 51"},
		{"bad since", "find_quote", map[string]any{"query": "x", "since": "last week"}, nil, "since: must be an RFC3339 time"},
		{"until before since", "find_quote", map[string]any{"query": "x", "since": "2025-02-01T00:00:00Z", "until": "2025-01-01T00:00:00Z"}, nil, "until: must be after since"},
		{"arguments not an object", "domain_status", []any{1}, nil, "arguments must be a JSON object"},
		{"fault hides detail", "domain_status", map[string]any{}, errDisk, "domain_status failed: internal error"},
		{"invalid passes message", "recall_context", map[string]any{"message": "x"}, fmt.Errorf("%w: conversation %q has no turns", memory.ErrInvalid, "default"), "has no turns"},
		{"too large passes message", "compact_context", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}}, fmt.Errorf("%w: over the limit of 1048576 bytes", memory.ErrTooLarge), "limit of 1048576 bytes"},
		{"disk full says what to do", "compact_context", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}}, &memory.StorageError{Message: "disk full: free space on the disk holding /data, then call again; nothing was stored", Err: errDisk}, "compact_context failed: disk full: free space on the disk holding /data, then call again; nothing was stored"},
		{"cancelled", "find_quote", map[string]any{"query": "x"}, context.Canceled, "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := newFakeMemory()
			mem.failWith = tt.failWith
			c := startClient(t, mem)
			res := callTool(t, c, tt.tool, tt.args)
			got := firstText(t, res)
			if !res.IsError {
				t.Fatalf("got success %q, want isError containing %q", got, tt.want)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want it to contain %q", got, tt.want)
			}
			if strings.Contains(got, "/secret/path") {
				t.Errorf("got %q: an internal error's detail leaked to the client", got)
			}
			// The server keeps serving.
			if res := callTool(t, c, "domain_status", map[string]any{}); res.IsError && tt.failWith == nil {
				t.Errorf("domain_status after the error: %s", firstText(t, res))
			}
		})
	}
}

func TestPanicBecomesToolError(t *testing.T) {
	mem := newFakeMemory()
	mem.panicOn = "Ingest"
	c := startClient(t, mem)
	res := callTool(t, c, "compact_context", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}})
	if got := firstText(t, res); !res.IsError || !strings.Contains(got, "internal error") {
		t.Errorf("got %q (isError %v), want an internal-error tool result", got, res.IsError)
	}
}

func TestProgressNotifications(t *testing.T) {
	mem := newFakeMemory()
	mem.progressSteps = 3
	c := startClient(t, mem)
	var mu sync.Mutex
	var got []float64
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if n.Params.AdditionalFields["progressToken"] == "tok-1" {
			p, _ := n.Params.AdditionalFields["progress"].(float64)
			if p == 0 {
				if i, ok := n.Params.AdditionalFields["progress"].(int); ok {
					p = float64(i)
				}
			}
			got = append(got, p)
		}
	})
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "compact_context"
	req.Params.Arguments = map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello"}}}
	req.Params.Meta = &mcpgo.Meta{ProgressToken: "tok-1"}
	if _, err := c.CallTool(context.Background(), req); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// The last notification may race the result (mcp-go); the first ones may not.
	if len(got) < 2 || got[0] != 1 {
		t.Errorf("progress notifications: got %v, want at least [1 2 ...]", got)
	}
}

func TestResources(t *testing.T) {
	mem := newFakeMemory()
	c := startClient(t, mem)
	callTool(t, c, "compact_context", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello"}}})
	callTool(t, c, "compact_context", map[string]any{"conversation_id": "other", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})

	tests := []struct {
		name    string
		uri     string
		want    string
		wantErr string
	}{
		{"domains", "virtualcontext://domains", `"conversation_id": "default"`, ""},
		{"domains of a conversation", "virtualcontext://domains?conversation=other", `"conversation_id": "other"`, ""},
		{"conversations", "virtualcontext://conversations", `"id": "other"`, ""},
		{"domain", "virtualcontext://domains/general", "# general", ""},
		{"domain segments", "virtualcontext://domains/general", "They said hello.", ""},
		{"domain of a conversation", "virtualcontext://conversations/other/domains/general", "Conversation: other", ""},
		{"unknown tag", "virtualcontext://domains/nope", "", `no tag "nope"`},
		{"empty tag", "virtualcontext://domains/", "", "tag is empty"},
		{"bad conversation", "virtualcontext://domains?conversation=a%2F..", "", "conversation_id: must be"},
		{"matches nothing", "virtualcontext://nothing/here", "", "not found"},
		{"nested path", "virtualcontext://domains/a/b", "", "not found"},
		// mcp-go routes these to a template without filling in its
		// variables: they were answered for the default conversation, or
		// with a misleading "conversation is empty".
		{"unknown query parameter", "virtualcontext://conversations/other/requests?page=2", "", `unknown query parameter "page" (this resource takes only cursor`},
		{"parameter given twice", "virtualcontext://domains?conversation=other&conversation=other", "", `query parameter "conversation" is given 2 times`},
		{"query on a turn", "virtualcontext://conversations/other/turns/t1?full=1", "", "not found"},
		{"known query parameter", "virtualcontext://domains?conversation=other&cursor=", `"conversation_id": "other"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := mcpgo.ReadResourceRequest{}
			req.Params.URI = tt.uri
			res, err := c.ReadResource(context.Background(), req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadResource: %v", err)
			}
			text := res.Contents[0].(mcpgo.TextResourceContents).Text
			if !strings.Contains(text, tt.want) {
				t.Errorf("got %q, want it to contain %q", text, tt.want)
			}
		})
	}
}

func TestPrompts(t *testing.T) {
	mem := newFakeMemory()
	c := startClient(t, mem)
	callTool(t, c, "compact_context", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "We chose bbolt for storage."}}})
	tests := []struct {
		name    string
		prompt  string
		args    map[string]string
		want    string
		wantErr string
	}{
		{"recall", "recall", map[string]string{"topic": "bbolt"}, "We chose bbolt for storage.", ""},
		{"recall needs a topic", "recall", map[string]string{}, "", "topic is required"},
		{"summarize", "summarize_session", nil, "1 turns", ""},
		{"summarize bad conversation", "summarize_session", map[string]string{"conversation_id": "a/b"}, "", "conversation_id: must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := mcpgo.GetPromptRequest{}
			req.Params.Name = tt.prompt
			req.Params.Arguments = tt.args
			res, err := c.GetPrompt(context.Background(), req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("GetPrompt: %v", err)
			}
			text := res.Messages[0].Content.(mcpgo.TextContent).Text
			if !strings.Contains(text, tt.want) {
				t.Errorf("got %q, want it to contain %q", text, tt.want)
			}
		})
	}
}
