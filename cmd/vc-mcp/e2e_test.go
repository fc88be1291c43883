package main

// End-to-end tests: the built binary, the real store, driven over stdio and
// HTTP by mcp-go's client (and by hand where a client would refuse to send
// what we need to test).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/internal/syncbuf"
)

// binary is the vc-mcp built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "vc-mcp-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "vc-mcp")
		build := exec.Command("go", "build", "-o", binary, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build vc-mcp: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}())
}

// childEnv keeps the child away from the user's config and data.
func childEnv(t testing.TB) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VC_") {
			env = append(env, kv)
		}
	}
	home := t.TempDir()
	// Shared servers started by the tests' hosts exit soon after them.
	return append(env, "VC_DAEMON_IDLE=2s", "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"))
}

type stdioServer struct {
	c      *client.Client
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer
}

// startStdio starts `vc-mcp serve` over stdio on dataDir and initializes a
// client.
func startStdio(t *testing.T, dataDir string, extra ...string) *stdioServer {
	t.Helper()
	s := &stdioServer{stderr: &syncbuf.Buffer{}}
	quiesce(t, dataDir)
	env := childEnv(t)
	args := append([]string{"serve", "--data-dir", dataDir}, extra...)
	tr := transport.NewStdioWithOptions(binary, nil, args, transport.WithCommandFunc(
		func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Env = env
			cmd.Stderr = s.stderr
			s.cmd = cmd
			return cmd, nil
		}))
	s.c = client.NewClient(tr)
	if err := s.c.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		s.c.Close()
		if t.Failed() {
			t.Logf("server stderr:\n%s", s.stderr.String())
		}
	})
	initialize(t, s.c)
	return s
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: "e2e", Version: "1"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if !strings.Contains(res.Instructions, "find_quote") {
		t.Fatalf("instructions: got %q, want them to mention find_quote", res.Instructions)
	}
}

func call(t *testing.T, c *client.Client, name string, args any) *mcpgo.CallToolResult {
	t.Helper()
	res, err := callErr(c, name, args, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func callErr(c *client.Client, name string, args any, meta *mcpgo.Meta) (*mcpgo.CallToolResult, error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = meta
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return c.CallTool(ctx, req)
}

// mustOK calls a tool and fails on isError.
func mustOK(t *testing.T, c *client.Client, name string, args any) *mcpgo.CallToolResult {
	t.Helper()
	res := call(t, c, name, args)
	if res.IsError {
		t.Fatalf("%s: isError: %s", name, text(res))
	}
	return res
}

func text(res *mcpgo.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(mcpgo.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("(%T)", res.Content[0])
}

func structured(t *testing.T, res *mcpgo.CallToolResult, dst any) {
	t.Helper()
	var b []byte
	if len(res.RawStructuredContent) > 0 {
		b = res.RawStructuredContent
	} else {
		var err error
		if b, err = json.Marshal(res.StructuredContent); err != nil {
			t.Fatal(err)
		}
	}
	if err := json.Unmarshal(b, dst); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
}

func msg(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}

// exerciseAll drives every tool, resource and prompt once and checks the
// answers make sense. It is run over each transport.
func exerciseAll(t *testing.T, c *client.Client) {
	ctx := context.Background()
	tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if got, want := strings.Join(names, ","), "add_context_item,collapse_topic,compact_context,compact_messages,domain_status,expand_topic,find_quote,forget,list_context_items,read_log,recall_context,remove_context_item"; got != want {
		t.Errorf("tools: got %s, want %s", got, want)
	}

	conv := "e2e-chat"
	res := mustOK(t, c, "compact_context", map[string]any{
		"conversation_id": conv,
		"messages": []any{
			map[string]any{"role": "user", "content": "My sister Alice moved to Lisbon in May 2023 to work on marine biology.", "name": "Bob", "timestamp": "2025-05-01T10:00:00Z"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Lisbon is a great city for marine biology research."}}, "timestamp": "2025-05-01T10:00:05Z"},
			map[string]any{"role": "user", "content": "We decided to use bbolt and Bleve for the vc-mcp storage layer.", "timestamp": "2025-05-02T09:00:00Z"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "search", "arguments": "{}"}}}, "timestamp": "2025-05-02T09:00:01Z"},
			map[string]any{"role": "tool", "content": "search results: none", "tool_call_id": "call_1", "timestamp": "2025-05-02T09:00:02Z"},
		},
	})
	var ing struct {
		Stored     int      `json:"stored"`
		Duplicates int      `json:"duplicates"`
		Tags       []string `json:"tags"`
		TotalTurns int      `json:"total_turns"`
	}
	structured(t, res, &ing)
	if ing.Stored+ing.Duplicates == 0 || len(ing.Tags) == 0 {
		t.Fatalf("compact_context: got %+v, want stored turns and tags", ing)
	}
	// Idempotent: resending stores nothing new.
	res = mustOK(t, c, "compact_context", map[string]any{"conversation_id": conv, "messages": []any{
		map[string]any{"role": "user", "content": "My sister Alice moved to Lisbon in May 2023 to work on marine biology.", "name": "Bob", "timestamp": "2025-05-01T10:00:00Z"},
	}})
	var again struct {
		Stored, Duplicates int
	}
	structured(t, res, &again)
	if again.Stored != 0 || again.Duplicates != 1 {
		t.Errorf("resend: got stored %d duplicates %d, want 0 and 1", again.Stored, again.Duplicates)
	}

	res = mustOK(t, c, "recall_context", map[string]any{"message": "Where does Alice live?", "conversation_id": conv, "max_tokens": 500})
	if got := text(res); !strings.Contains(got, "Lisbon") || strings.HasPrefix(strings.TrimSpace(got), "{") {
		t.Errorf("recall_context first block: got %q, want plain text mentioning Lisbon", got)
	}
	var rec struct {
		Tokens    int      `json:"tokens"`
		TurnIDs   []string `json:"turn_ids"`
		Breakdown struct {
			Budget int `json:"budget"`
		} `json:"breakdown"`
	}
	structured(t, res, &rec)
	if rec.Tokens > 500 || len(rec.TurnIDs) == 0 {
		t.Errorf("recall_context metadata: got %+v, want turn ids within 500 tokens", rec)
	}

	res = mustOK(t, c, "find_quote", map[string]any{"query": "bbolt Bleve", "conversation_id": conv})
	var fq struct {
		Quotes []struct {
			TurnID  string   `json:"turn_id"`
			Excerpt string   `json:"excerpt"`
			Tags    []string `json:"tags"`
			Ref     struct {
				File       string
				Start, End int64
			} `json:"ref"`
		} `json:"quotes"`
	}
	structured(t, res, &fq)
	if len(fq.Quotes) == 0 || fq.Quotes[0].Ref.End <= fq.Quotes[0].Ref.Start || fq.Quotes[0].Ref.File == "" {
		t.Fatalf("find_quote: got %+v, want a hit with its log reference", fq)
	}
	// The hit's log reference reads back through read_log.
	res = mustOK(t, c, "read_log", map[string]any{"conversation_id": conv, "start": fq.Quotes[0].Ref.Start, "end": fq.Quotes[0].Ref.End})
	if text := res.Content[0].(mcpgo.TextContent).Text; !strings.Contains(text, "bbolt") {
		t.Fatalf("read_log of the find_quote hit: %q", text)
	}

	// forget, as a dry run: it lists and keeps.
	res = mustOK(t, c, "forget", map[string]any{"conversation_id": conv, "query": "BBOLT and Bleve", "dry_run": true})
	var fg struct {
		Forgotten int      `json:"forgotten"`
		TurnIDs   []string `json:"turn_ids"`
	}
	structured(t, res, &fg)
	if fg.Forgotten != 1 || len(fg.TurnIDs) != 1 || fg.TurnIDs[0] != fq.Quotes[0].TurnID {
		t.Errorf("forget dry run: got %+v, want the find_quote hit %s", fg, fq.Quotes[0].TurnID)
	}

	res = mustOK(t, c, "domain_status", map[string]any{"conversation_id": conv})
	var st struct {
		Tags []struct {
			Tag   string `json:"tag"`
			Turns int    `json:"turns"`
		} `json:"tags"`
		Totals struct {
			Turns int `json:"turns"`
		} `json:"totals"`
	}
	structured(t, res, &st)
	if st.Totals.Turns < 4 || len(st.Tags) == 0 {
		t.Fatalf("domain_status: got %+v, want the stored turns and tags", st)
	}
	tag := st.Tags[0].Tag
	if len(fq.Quotes[0].Tags) > 0 {
		tag = fq.Quotes[0].Tags[0]
	}

	res = mustOK(t, c, "expand_topic", map[string]any{"tag": tag, "depth": "full", "conversation_id": conv, "max_tokens": 2000})
	if strings.TrimSpace(text(res)) == "" {
		t.Errorf("expand_topic %s full: empty content", tag)
	}
	res = mustOK(t, c, "collapse_topic", map[string]any{"tag": tag, "depth": "summary", "conversation_id": conv})
	var col struct {
		Tag   string `json:"tag"`
		Depth string `json:"depth"`
	}
	structured(t, res, &col)
	if col.Tag != tag || col.Depth != "summary" {
		t.Errorf("collapse_topic: got %+v, want tag %s at depth summary", col, tag)
	}

	// Resources.
	read := func(uri string) string {
		t.Helper()
		req := mcpgo.ReadResourceRequest{}
		req.Params.URI = uri
		r, err := c.ReadResource(ctx, req)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		return r.Contents[0].(mcpgo.TextResourceContents).Text
	}
	if got := read("virtualcontext://domains?conversation=" + conv); !strings.Contains(got, `"`+tag+`"`) {
		t.Errorf("domains of %s: got %s, want tag %s", conv, got, tag)
	}
	if got := read("virtualcontext://domains"); !strings.Contains(got, `"conversation_id"`) {
		t.Errorf("domains: got %s", got)
	}
	if got := read("virtualcontext://conversations/" + conv + "/domains/" + tag); !strings.Contains(got, "# "+tag) {
		t.Errorf("domain %s: got %s", tag, got)
	}
	if got := read("virtualcontext://conversations"); !strings.Contains(got, conv) {
		t.Errorf("conversations: got %s, want %s", got, conv)
	}
	templates, err := c.ListResourceTemplates(ctx, mcpgo.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatalf("templates: %v", err)
	}
	found := false
	for _, tp := range templates.ResourceTemplates {
		found = found || tp.URITemplate.Raw() == "virtualcontext://domains/{tag}"
	}
	if !found {
		t.Errorf("resource templates lack virtualcontext://domains/{tag}")
	}

	// Prompts.
	p := mcpgo.GetPromptRequest{}
	p.Params.Name = "recall"
	p.Params.Arguments = map[string]string{"topic": "Alice Lisbon", "conversation_id": conv}
	pr, err := c.GetPrompt(ctx, p)
	if err != nil {
		t.Fatalf("prompt recall: %v", err)
	}
	if got := pr.Messages[0].Content.(mcpgo.TextContent).Text; !strings.Contains(got, "Lisbon") {
		t.Errorf("prompt recall: got %q", got)
	}
	p.Params.Name = "summarize_session"
	p.Params.Arguments = map[string]string{"conversation_id": conv}
	if pr, err = c.GetPrompt(ctx, p); err != nil {
		t.Fatalf("prompt summarize_session: %v", err)
	}
	if got := pr.Messages[0].Content.(mcpgo.TextContent).Text; !strings.Contains(got, tag) {
		t.Errorf("prompt summarize_session: got %q, want tag %s", got, tag)
	}
}

func TestStdioEveryTool(t *testing.T) {
	s := startStdio(t, t.TempDir())
	exerciseAll(t, s.c)
}

var listening = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// startHTTP starts `vc-mcp serve --http 127.0.0.1:0` and returns its base URL.
func startHTTP(t *testing.T, dataDir string, extra ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--data-dir", dataDir, "--http", "127.0.0.1:0"}, extra...)...)
	cmd.Env = childEnv(t)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	lines := bufio.NewScanner(stderr)
	base := ""
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if m := listening.FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatalf("server did not report its address; stderr:\n%s", strings.Join(seen, "\n"))
	}
	go io.Copy(io.Discard, stderr)
	return base, cmd
}

func TestHTTPEveryTool(t *testing.T) {
	base, _ := startHTTP(t, t.TempDir())
	t.Run("streamable", func(t *testing.T) {
		c, err := client.NewStreamableHttpClient(base + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		initialize(t, c)
		exerciseAll(t, c)
	})
	t.Run("progress", func(t *testing.T) {
		c, err := client.NewStreamableHttpClient(base + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got int
		c.OnNotification(func(n mcpgo.JSONRPCNotification) {
			if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == "http-1" {
				mu.Lock()
				got++
				mu.Unlock()
			}
		})
		initialize(t, c)
		res, err := callErr(c, "compact_context", map[string]any{"conversation_id": "progress", "messages": topicalBatch(), "force": true}, &mcpgo.Meta{ProgressToken: "http-1"})
		if err != nil || res.IsError {
			t.Fatalf("compact_context: %v %v", err, res)
		}
		var ing struct {
			SegmentsCompacted int `json:"segments_compacted"`
		}
		structured(t, res, &ing)
		// The last step may race the result (mcp-go); every earlier one is
		// sent before it and must arrive.
		if ing.SegmentsCompacted < 2 {
			t.Fatalf("the topical batch made %d segment(s); this test needs at least 2 to see a progress step before the result", ing.SegmentsCompacted)
		}
		want := ing.SegmentsCompacted - 1
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			n := got
			mu.Unlock()
			if n >= ing.SegmentsCompacted {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if got < want {
			t.Errorf("progress notifications over Streamable HTTP: got %d for %d segments, want at least %d", got, ing.SegmentsCompacted, want)
		}
		t.Logf("%d progress notifications for %d segments", got, ing.SegmentsCompacted)
	})
	t.Run("sse", func(t *testing.T) {
		c, err := client.NewSSEMCPClient(base + "/sse")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		initialize(t, c)
		res := mustOK(t, c, "find_quote", map[string]any{"query": "Lisbon", "conversation_id": "e2e-chat"})
		if !strings.Contains(text(res), "Lisbon") {
			t.Errorf("find_quote over SSE: got %q, want the turn stored over streamable HTTP", text(res))
		}
	})
	t.Run("foreign origin refused", func(t *testing.T) {
		for _, tc := range []struct {
			origin string
			want   int
		}{{"http://evil.example", http.StatusForbidden}, {"http://localhost:3000", http.StatusOK}} {
			req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(initLine))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Origin", tc.origin)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("Origin %s: got status %d, want %d", tc.origin, resp.StatusCode, tc.want)
			}
		}
	})
}

func TestHTTPRefusesRemoteBind(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--data-dir", t.TempDir(), "--http", "0.0.0.0:0")
	cmd.Env = childEnv(t)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not a loopback address") {
		t.Errorf("got %v, output %q; want a refusal naming loopback", err, out)
	}
}

// TestBadInput: each mistake gets a clear tool error or JSON-RPC error,
// nothing stored is lost and the server keeps serving.
func TestBadInput(t *testing.T) {
	s := startStdio(t, t.TempDir(), "--max-message-bytes", "4096")
	c := s.c
	mustOK(t, c, "compact_context", map[string]any{"messages": []any{msg("user", "The sentinel word is xylophonist.")}})
	stillServing := func(t *testing.T) {
		t.Helper()
		res := mustOK(t, c, "find_quote", map[string]any{"query": "xylophonist"})
		if !strings.Contains(text(res), "xylophonist") {
			t.Fatalf("after the bad input, the stored sentinel is gone: %q", text(res))
		}
	}
	tests := []struct {
		name string
		tool string
		args any
		want string // in the isError text, or in the JSON-RPC error
	}{
		{"unknown tool", "forget_everything", map[string]any{}, "not found"},
		{"wrong argument type", "recall_context", map[string]any{"message": []int{1}}, "message: must be a string"},
		{"missing field", "recall_context", map[string]any{}, "message: required"},
		{"missing messages", "compact_context", map[string]any{"conversation_id": "x"}, "messages: required"},
		{"path separator id", "compact_context", map[string]any{"conversation_id": "a/b", "messages": []any{msg("user", "x")}}, "conversation_id: must be 1-128 characters"},
		{"backslash id", "recall_context", map[string]any{"conversation_id": `a\b`, "message": "x"}, "conversation_id: must be 1-128 characters"},
		{"dotdot id", "find_quote", map[string]any{"conversation_id": "..", "query": "x"}, "conversation_id: must be 1-128 characters"},
		{"unknown tag expand", "expand_topic", map[string]any{"tag": "no-such-topic-zzz"}, "no-such-topic-zzz"},
		{"unknown tag collapse", "collapse_topic", map[string]any{"tag": "no-such-topic-zzz"}, "no-such-topic-zzz"},
		{"absurd max_tokens", "recall_context", map[string]any{"message": "x", "max_tokens": 99999999}, "max_tokens: must be between 100 and 32000"},
		{"negative max_results", "find_quote", map[string]any{"query": "x", "max_results": -1}, "max_results: must be between 1 and 50"},
		{"bad since", "find_quote", map[string]any{"query": "x", "since": "tuesday"}, "since: must be an RFC3339 time"},
		{"bad role", "compact_context", map[string]any{"messages": []any{map[string]any{"role": "robot", "content": "x"}}}, "messages[0].role: must be one of user, assistant, system, tool"},
		{"missing role", "compact_context", map[string]any{"messages": []any{msg("user", "fine"), map[string]any{"content": "x"}}}, "messages[1].role: required"},
		{"content number", "compact_context", map[string]any{"messages": []any{map[string]any{"role": "user", "content": 5}}}, "messages[0].content: must be a string or an array of content blocks, got a number"},
		{"tool_calls object", "compact_context", map[string]any{"messages": []any{map[string]any{"role": "assistant", "tool_calls": map[string]any{"id": "x"}}}}, "messages[0].tool_calls: must be an array"},
		{"bad timestamp", "compact_context", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x", "timestamp": "yesterday"}}}, "messages[0].timestamp: must be an RFC3339 time"},
		{"message over the limit", "compact_context", map[string]any{"messages": []any{msg("user", strings.Repeat("big ", 2000))}}, "4096"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := callErr(c, tt.tool, tt.args, nil)
			switch {
			case err != nil:
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("JSON-RPC error %q, want it to contain %q", err, tt.want)
				}
			case !res.IsError:
				t.Errorf("got success %q, want an error containing %q", text(res), tt.want)
			case !strings.Contains(text(res), tt.want):
				t.Errorf("got %q, want it to contain %q", text(res), tt.want)
			}
			stillServing(t)
		})
	}
	t.Run("resource matching nothing", func(t *testing.T) {
		for _, uri := range []string{"virtualcontext://nothing", "virtualcontext://domains/a/b", "file:///etc/passwd"} {
			req := mcpgo.ReadResourceRequest{}
			req.Params.URI = uri
			if _, err := c.ReadResource(context.Background(), req); err == nil {
				t.Errorf("read %s: got no error", uri)
			}
		}
		req := mcpgo.ReadResourceRequest{}
		req.Params.URI = "virtualcontext://domains/no-such-topic-zzz"
		if _, err := c.ReadResource(context.Background(), req); err == nil || !strings.Contains(err.Error(), "no-such-topic-zzz") {
			t.Errorf("unknown tag resource: got %v, want an error naming the tag", err)
		}
		stillServing(t)
	})
	t.Run("batch with one bad message stores none", func(t *testing.T) {
		for _, bad := range []any{
			map[string]any{"role": "wizard", "content": "x"},
			msg("user", strings.Repeat("big ", 2000)),
		} {
			res := call(t, c, "compact_context", map[string]any{"conversation_id": "atomic", "messages": []any{
				msg("user", "The first word is quokkaborne."), bad, msg("user", "The last word is zebrafinch."),
			}})
			if !res.IsError {
				t.Fatalf("got success %q, want isError", text(res))
			}
			for _, w := range []string{"quokkaborne", "zebrafinch"} {
				res := mustOK(t, c, "find_quote", map[string]any{"conversation_id": "atomic", "query": w})
				var fq struct {
					Quotes []any `json:"quotes"`
				}
				structured(t, res, &fq)
				if len(fq.Quotes) != 0 {
					t.Errorf("%s was stored from a rejected batch: %s", w, text(res))
				}
			}
		}
		stillServing(t)
	})
}

// rawServer speaks JSON-RPC lines to the binary by hand, for input no
// client library would send.
type rawServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncbuf.Buffer
}

func startRaw(t testing.TB, dataDir string, args ...string) *rawServer {
	t.Helper()
	quiesce(t, dataDir)
	cmd := exec.Command(binary, append(args, "--data-dir", dataDir)...)
	cmd.Env = childEnv(t)
	r := &rawServer{cmd: cmd, lines: make(chan string, 100), stderr: &syncbuf.Buffer{}}
	cmd.Stderr = r.stderr
	var err error
	if r.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() {
		r.stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return r
}

func (r *rawServer) send(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// next returns the next stdout line, which must be JSON-RPC.
func (r *rawServer) next(t testing.TB) map[string]any {
	t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			t.Fatalf("server closed stdout; stderr:\n%s", r.stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout carried a non-JSON-RPC line %q", line)
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatalf("no answer; stderr:\n%s", r.stderr.String())
	}
	return nil
}

// answer returns the response with the given id, skipping notifications.
func (r *rawServer) answer(t testing.TB, id float64) map[string]any {
	t.Helper()
	for {
		m := r.next(t)
		if got, ok := m["id"].(float64); ok && got == id {
			return m
		}
	}
}

// response returns the next response, skipping notifications (such as
// resources/list_changed after a new conversation is stored).
func (r *rawServer) response(t testing.TB) map[string]any {
	t.Helper()
	for {
		if m := r.next(t); m["method"] == nil {
			return m
		}
	}
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestMalformedJSONRPC(t *testing.T) {
	r := startRaw(t, t.TempDir(), "serve")
	r.send(t, initLine)
	r.answer(t, 1)
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"compact_context","arguments":{"messages":[{"role":"user","content":"keep me: pangolin"}]}}}`)
	if res := r.answer(t, 2); res["error"] != nil {
		t.Fatalf("good call failed: %v", res)
	}
	tests := []struct {
		name      string
		line      string
		id        float64 // 0: the answer has a null id
		wantError bool    // JSON-RPC error (else an isError result)
		want      string
	}{
		{"not json", `{"jsonrpc":"2.0","id":3,"method":`, 0, true, "Parse error"},
		{"garbage", `hello`, 0, true, "Parse error"},
		{"unknown method", `{"jsonrpc":"2.0","id":4,"method":"memory/wipe"}`, 4, true, "not found"},
		{"params not an object", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1,2]}`, 5, true, ""},
		{"arguments not an object", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"domain_status","arguments":"all"}}`, 6, false, "arguments must be a JSON object"},
		{"invalid utf-8", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"compact_context\",\"arguments\":{\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff\xfe bytes\"}]}}}", 7, false, "not valid UTF-8"},
		{"wrong type", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"find_quote","arguments":{"query":"x","max_results":"ten"}}}`, 8, false, "max_results: must be an integer, got string"},
		{"unknown tool", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, 9, true, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.send(t, tt.line)
			var res map[string]any
			if tt.id == 0 {
				res = r.response(t)
			} else {
				res = r.answer(t, tt.id)
			}
			b, _ := json.Marshal(res)
			if tt.wantError {
				if res["error"] == nil || !strings.Contains(string(b), tt.want) {
					t.Errorf("got %s, want a JSON-RPC error containing %q", b, tt.want)
				}
				return
			}
			result, _ := res["result"].(map[string]any)
			if result == nil || result["isError"] != true || !strings.Contains(string(b), tt.want) {
				t.Errorf("got %s, want an isError result containing %q", b, tt.want)
			}
		})
	}
	r.send(t, `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"find_quote","arguments":{"query":"pangolin"}}}`)
	res := r.answer(t, 20)
	if b, _ := json.Marshal(res); !strings.Contains(string(b), "pangolin") {
		t.Errorf("after the malformed input: got %s, want the stored turn", b)
	}
}

// topicalBatch is a long history in several topic blocks, so a forced
// compaction makes several segments (and several progress steps).
func topicalBatch() []any {
	topics := []string{
		"sourdough bread baking with rye flour and a long cold proof",
		"sailing the catamaran across the bay with the new jib sail",
		"kubernetes cluster upgrade and the ingress controller certificates",
		"tomato seedlings in the greenhouse and the drip irrigation",
		"tax return deadline and the receipts for the home office",
	}
	var msgs []any
	for b, topic := range topics {
		for i := range 60 {
			msgs = append(msgs, msg([]string{"user", "assistant"}[i%2], fmt.Sprintf("Block %d note %d: more about %s, detail %d.", b, i, topic, i)))
		}
	}
	return msgs
}

// TestBareCommand: `vc-mcp` with no subcommand serves MCP over stdio.
func TestBareCommand(t *testing.T) {
	r := startRaw(t, t.TempDir())
	r.send(t, initLine)
	res := r.answer(t, 1)
	if b, _ := json.Marshal(res); !strings.Contains(string(b), `"serverInfo":{"name":"vc-mcp"`) {
		t.Errorf("initialize: got %s, want vc-mcp's serverInfo", b)
	}
}

func TestProgressOverStdio(t *testing.T) {
	s := startStdio(t, t.TempDir())
	var mu sync.Mutex
	var progress []map[string]any
	s.c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			progress = append(progress, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	res, err := callErr(s.c, "compact_context", map[string]any{"messages": topicalBatch(), "force": true}, &mcpgo.Meta{ProgressToken: "ingest-1"})
	if err != nil || res.IsError {
		t.Fatalf("compact_context: %v %v", err, res)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) == 0 {
		t.Fatalf("got no progress notification for a 300-message forced compaction with a progressToken")
	}
	if got := progress[0]["progressToken"]; got != "ingest-1" {
		t.Errorf("progressToken: got %v, want ingest-1", got)
	}
}

// TestKillDuringIngest: SIGKILL while compact_context calls are in flight
// loses no acknowledged message.
func TestKillDuringIngest(t *testing.T) {
	dir := t.TempDir()
	s := startStdio(t, dir)
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			word := fmt.Sprintf("ackword%04dq", i)
			res, err := callErr(s.c, "compact_context", map[string]any{"messages": []any{
				msg("user", "Remember the code "+word+" for later."),
				msg("assistant", "Noted the code "+word+"."),
			}}, nil)
			if err != nil || res.IsError {
				return // the kill
			}
			mu.Lock()
			acked = append(acked, word)
			mu.Unlock()
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 25 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	close(stop)
	<-done
	mu.Lock()
	words := append([]string(nil), acked...)
	mu.Unlock()
	if len(words) < 5 {
		t.Fatalf("only %d acknowledged ingests before the kill", len(words))
	}

	s2 := startStdio(t, dir)
	res := mustOK(t, s2.c, "domain_status", map[string]any{})
	var st struct {
		Totals struct{ Turns int } `json:"totals"`
	}
	structured(t, res, &st)
	if st.Totals.Turns < 2*len(words) {
		t.Errorf("after restart: %d turns, want at least %d (acknowledged)", st.Totals.Turns, 2*len(words))
	}
	for _, w := range words {
		res := mustOK(t, s2.c, "find_quote", map[string]any{"query": w, "max_results": 2})
		if !strings.Contains(text(res), w) {
			t.Errorf("acknowledged %s is not found after kill -9 and restart: %q", w, text(res))
		}
	}
}

// TestSecondProcessShares: a second host on the same data directory shares
// the first one's memory (it used to fail on the lock).
func TestSecondProcessShares(t *testing.T) {
	dir := t.TempDir()
	first := startStdio(t, dir)
	second := startStdio(t, dir)
	mustOK(t, first.c, "compact_context", map[string]any{"conversation_id": "two", "messages": []any{
		msg("user", "The spare key is taped under the blue mailbox."),
	}})
	res := mustOK(t, second.c, "find_quote", map[string]any{"conversation_id": "two", "query": "spare key mailbox"})
	if !strings.Contains(text(res), "mailbox") {
		t.Errorf("second host: got %q, want the first host's turn", text(res))
	}
}

// TestRebuild: deleting vc.db and the index loses nothing.
func TestRebuild(t *testing.T) {
	dir := t.TempDir()
	s := startStdio(t, dir)
	mustOK(t, s.c, "compact_context", map[string]any{"conversation_id": "rb", "messages": []any{
		msg("user", "The treasure is buried under the old walnut tree."),
		msg("assistant", "Walnut tree, noted."),
	}})
	s.c.Close()
	for _, name := range []string{"vc.db", "index.bleve"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binary, "rebuild", "--data-dir", dir)
	cmd.Env = childEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, out)
	}
	s2 := startStdio(t, dir)
	res := mustOK(t, s2.c, "find_quote", map[string]any{"conversation_id": "rb", "query": "walnut treasure"})
	if !strings.Contains(text(res), "walnut") {
		t.Errorf("after rebuild: got %q, want the stored turn", text(res))
	}
}

// BenchmarkStartToInitialize measures process start to the initialize
// answer over stdio (goal: 100 ms).
func BenchmarkStartToInitialize(b *testing.B) {
	dir := b.TempDir()
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		r := startRaw(b, dir, "serve")
		r.send(b, initLine)
		r.answer(b, 1)
		total += time.Since(start)
		r.stdin.Close()
		r.cmd.Wait()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/initialize")
}
