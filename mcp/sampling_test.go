package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/memory/llm"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

// fakeModel answers sampling requests like a client's model would: with a
// segment summary in JSON, echoing which tags it saw. It records requests.
type fakeModel struct {
	mu   sync.Mutex
	reqs []mcpgo.CreateMessageRequest
}

func (f *fakeModel) CreateMessage(ctx context.Context, req mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	answer := "<think>the user wants JSON</think>```json\n" +
		`{"summary": "Caroline adopted Biscuit on 28 February for $150.", "entities": ["Caroline", "Biscuit"],` +
		` "key_decisions": [], "action_items": [], "date_references": ["28 February"], "refined_tags": ["dog-adoption", "shelter"], "related_tags": []}` +
		"\n```"
	return &mcpgo.CreateMessageResult{
		SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.NewTextContent(answer)},
		Model:           "client-model-1",
		StopReason:      "endTurn",
	}, nil
}

func (f *fakeModel) requests() []mcpgo.CreateMessageRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]mcpgo.CreateMessageRequest(nil), f.reqs...)
}

// extractive stands in for the deterministic summariser.
type extractive struct{}

func (extractive) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	return summarize.Result{Summary: "extractive: " + in.Turns[0].Text, Tags: in.Tags, Method: "extractive"}, nil
}

// toolAnswer is what the test tool reports back to the client.
type toolAnswer struct {
	Summary   string   `json:"summary"`
	Method    string   `json:"method"`
	Tags      []string `json:"tags"`
	Ready     bool     `json:"ready"`
	Reason    string   `json:"reason"`
	DirectErr string   `json:"direct_err"`
	Unavail   bool     `json:"unavailable"`
}

// newSamplingServer returns an MCP server with one tool that summarises a
// segment through llm.Summarizer -> Sampler, as memory does during a
// compact_context call, and also calls the Sampler directly.
func newSamplingServer(t *testing.T) *server.MCPServer {
	t.Helper()
	s := server.NewMCPServer("vc-mcp-test", "0.0.1")
	s.EnableSampling()
	s.AddTool(mcpgo.NewTool("summarise"), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		sampler := NewSampler("claude-haiku", 5*time.Second)
		c := llm.NewClient(llm.Config{Provider: llm.ProviderSampling, Model: "claude-haiku"}, sampler, llm.ClientOptions{})
		sum := llm.NewSummarizer(c, extractive{})
		res, err := sum.Summarize(ctx, summarize.Input{
			Kind: summarize.Segment, Tag: "dog-adoption", Tags: []string{"dog-adoption"},
			Turns: []summarize.Turn{{Role: "user", Speaker: "Caroline", Text: "I adopted Biscuit on 28 February; the fee was $150."}},
		})
		if err != nil {
			return mcpgo.NewToolResultError(err.Error()), nil
		}
		var a toolAnswer
		a.Summary, a.Method, a.Tags = res.Summary, res.Method, res.Tags
		a.Ready, a.Reason = sum.Ready()
		if _, err := sampler.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: "ping"}}}); err != nil {
			a.DirectErr = err.Error()
			a.Unavail = errors.Is(err, ErrSamplingUnavailable) && errors.Is(err, llm.ErrUnavailable)
		}
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		return mcpgo.NewToolResultText(string(b)), nil
	})
	return s
}

// callSummarise initializes c and calls the tool.
func callSummarise(t *testing.T, ctx context.Context, c *client.Client) toolAnswer {
	t.Helper()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start client: %v", err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcpgo.Implementation{Name: "sampling-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	res, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "summarise"}})
	if err != nil {
		t.Fatalf("call tool: %v", err)
	}
	text := mcpgo.GetTextFromContent(res.Content[0])
	if res.IsError {
		t.Fatalf("tool error: %s", text)
	}
	var a toolAnswer
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		t.Fatalf("decode tool answer %q: %v", text, err)
	}
	return a
}

// stdioPair connects a real mcp-go client to s over in-memory pipes,
// speaking newline-delimited JSON-RPC exactly as over a process's stdio.
func stdioPair(t *testing.T, ctx context.Context, s *server.MCPServer, opts ...client.ClientOption) *client.Client {
	t.Helper()
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = server.NewStdioServer(s).Listen(ctx, serverIn, serverOut) // ends with ctx; its error is the cancellation
	}()
	c := client.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(strings.NewReader(""))), opts...)
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Logf("close client: %v", err)
		}
		cancel()
		serverIn.Close()
		serverOut.Close()
		<-done
	})
	return c
}

func TestSamplingOverStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	model := &fakeModel{}
	c := stdioPair(t, ctx, newSamplingServer(t), client.WithSamplingHandler(model), client.WithProtocolVersion("2025-11-25"))
	got := callSummarise(t, ctx, c)

	if want := "Caroline adopted Biscuit on 28 February for $150."; got.Summary != want {
		t.Errorf("got summary %q, want %q", got.Summary, want)
	}
	if want := "llm:sampling/client-model-1"; got.Method != want {
		t.Errorf("got method %q, want %q", got.Method, want)
	}
	if want := []string{"dog-adoption", "shelter"}; strings.Join(got.Tags, ",") != strings.Join(want, ",") {
		t.Errorf("got tags %v, want %v", got.Tags, want)
	}
	if !got.Ready {
		t.Errorf("got not ready (%s), want ready", got.Reason)
	}
	if got.DirectErr != "" {
		t.Errorf("got direct sampling error %q, want none", got.DirectErr)
	}
	reqs := model.requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d sampling requests, want 2", len(reqs))
	}
	p := reqs[0].CreateMessageParams
	if !strings.Contains(p.SystemPrompt, "JSON") || p.MaxTokens <= 0 || len(p.Messages) != 1 {
		t.Errorf("got request system=%q maxTokens=%d messages=%d, want a system prompt asking for JSON, a token bound and one message",
			p.SystemPrompt, p.MaxTokens, len(p.Messages))
	}
	if p.ModelPreferences == nil || len(p.ModelPreferences.Hints) != 1 || p.ModelPreferences.Hints[0].Name != "claude-haiku" {
		t.Errorf("got model preferences %+v, want the hint claude-haiku", p.ModelPreferences)
	}
	if user := mcpgo.GetTextFromContent(p.Messages[0].Content); !strings.Contains(user, "I adopted Biscuit on 28 February") {
		t.Errorf("got user message without the turn text:\n%s", user)
	}
}

func TestSamplingNotAdvertised(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := stdioPair(t, ctx, newSamplingServer(t), client.WithProtocolVersion("2025-11-25")) // no sampling handler
	got := callSummarise(t, ctx, c)

	if got.Method != "extractive" || !strings.HasPrefix(got.Summary, "extractive: ") {
		t.Errorf("got method %q summary %q, want the extractive fallback", got.Method, got.Summary)
	}
	if !got.Unavail {
		t.Errorf("got direct error %q, want ErrSamplingUnavailable wrapping llm.ErrUnavailable", got.DirectErr)
	}
	if got.Ready || !strings.Contains(got.Reason, "did not advertise sampling") || !strings.Contains(got.Reason, "extractive") {
		t.Errorf("got ready=%v reason %q, want not ready, naming the missing capability and the fallback", got.Ready, got.Reason)
	}
}

func TestSamplingInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	model := &fakeModel{}
	c, err := client.NewInProcessClientWithSamplingHandler(newSamplingServer(t), model)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	got := callSummarise(t, ctx, c)
	if got.Method != "llm:sampling/client-model-1" || got.DirectErr != "" {
		t.Errorf("got method %q direct error %q, want the client's model and no error", got.Method, got.DirectErr)
	}
	if n := len(model.requests()); n != 2 {
		t.Errorf("got %d sampling requests, want 2", n)
	}
}

func TestSamplingOutsideRequest(t *testing.T) {
	_, err := NewSampler("", time.Second).Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if !errors.Is(err, ErrSamplingUnavailable) || !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("got %v, want ErrSamplingUnavailable", err)
	}
	if ok, why := SamplingAvailable(t.Context()); ok || why == "" {
		t.Errorf("got available=%v (%q), want unavailable with a reason", ok, why)
	}
}

func TestSamplingText(t *testing.T) {
	cases := []struct {
		name    string
		content any
		want    string
		wantOK  bool
	}{
		{"typed", mcpgo.NewTextContent("a"), "a", true},
		{"pointer", &mcpgo.TextContent{Type: "text", Text: "b"}, "b", true},
		{"decoded", map[string]any{"type": "text", "text": "c"}, "c", true},
		{"list", []any{map[string]any{"type": "text", "text": "d"}, map[string]any{"type": "text", "text": "e"}}, "de", true},
		{"content list", []mcpgo.Content{mcpgo.NewTextContent("f")}, "f", true},
		{"image", map[string]any{"type": "image", "data": "xx"}, "", false},
		{"nil", nil, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := samplingText(tc.content)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestSamplingModernProtocol: a client on protocol 2026-07-28 accepts no
// server-initiated requests, even with a sampling handler; the summary
// falls back instead of failing the tool call.
func TestSamplingModernProtocol(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	model := &fakeModel{}
	c := stdioPair(t, ctx, newSamplingServer(t), client.WithSamplingHandler(model))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ClientInfo = mcpgo.Implementation{Name: "modern", Version: "1"}
	ires, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	res, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "summarise"}})
	if err != nil {
		t.Fatalf("call tool: %v", err)
	}
	var got toolAnswer
	if err := json.Unmarshal([]byte(mcpgo.GetTextFromContent(res.Content[0])), &got); err != nil {
		t.Fatal(err)
	}
	t.Logf("negotiated %s; direct error: %s", ires.ProtocolVersion, got.DirectErr)
	if mcpgo.IsModernProtocol(ires.ProtocolVersion) {
		if !got.Unavail || got.Method != "extractive" {
			t.Errorf("got method %q, direct error %q; want the fallback and ErrSamplingUnavailable", got.Method, got.DirectErr)
		}
		if n := len(model.requests()); n != 0 {
			t.Errorf("got %d sampling requests delivered, want 0", n)
		}
	} else if got.Method != "llm:sampling/client-model-1" {
		t.Errorf("got method %q on legacy protocol %s, want the client's model", got.Method, ires.ProtocolVersion)
	}
}
