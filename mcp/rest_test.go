package mcp

// Completions, resource subscriptions and turn links, end to end: the real
// memory store, the mcp-go client, over stdio (in process, through pipes),
// Streamable HTTP and SSE (on 127.0.0.1).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/yosida95/uritemplate/v3"

	"github.com/vc-mcp/vc-mcp/memory"
)

func openStore(t *testing.T) *memory.Store {
	t.Helper()
	st, err := memory.Open(context.Background(), memory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// transports start an initialized-ready client for srv over each transport.
var transports = []struct {
	name  string
	start func(t *testing.T, srv *mcpserver.MCPServer) *client.Client
}{
	{"stdio", func(t *testing.T, srv *mcpserver.MCPServer) *client.Client {
		toSrvR, toSrvW := io.Pipe()
		toCliR, toCliW := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- ServeStdio(context.Background(), srv, toSrvR, toCliW, nil); toCliW.Close() }()
		c := client.NewClient(transport.NewIO(toCliR, toSrvW, nil))
		t.Cleanup(func() {
			c.Close()
			toSrvW.Close()
			if err := <-done; err != nil {
				t.Errorf("ServeStdio: %v", err)
			}
		})
		return c
	}},
	{"streamable", func(t *testing.T, srv *mcpserver.MCPServer) *client.Client {
		base := serveHTTP(t, srv)
		c, err := client.NewStreamableHttpClient(base+"/mcp", transport.WithContinuousListening())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}},
	{"sse", func(t *testing.T, srv *mcpserver.MCPServer) *client.Client {
		base := serveHTTP(t, srv)
		c, err := client.NewSSEMCPClient(base + "/sse")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}},
}

func serveHTTP(t *testing.T, srv *mcpserver.MCPServer) string {
	h := NewHTTPHandler(srv, HTTPOptions{})
	ts := httptest.NewServer(h) // 127.0.0.1
	t.Cleanup(func() {
		h.Shutdown(context.Background())
		ts.Close()
	})
	return ts.URL
}

// notes records the resource notifications a client receives.
type notes struct {
	mu      sync.Mutex
	updated map[string]int
	listed  int
}

func record(c *client.Client) *notes {
	n := &notes{updated: map[string]int{}}
	c.OnNotification(func(m mcpgo.JSONRPCNotification) {
		n.mu.Lock()
		defer n.mu.Unlock()
		switch m.Method {
		case mcpgo.MethodNotificationResourceUpdated:
			u, _ := m.Params.AdditionalFields["uri"].(string)
			n.updated[u]++
		case mcpgo.MethodNotificationResourcesListChanged:
			n.listed++
		}
	})
	return n
}

func (n *notes) count(uri string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.updated[uri]
}

func (n *notes) lists() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.listed
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

var reqSeq atomic.Int64

// rawCall sends a request the client library has no method for
// (resources/subscribe, resources/unsubscribe) through its transport.
func rawCall(t *testing.T, c *client.Client, method string, params any) *transport.JSONRPCResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId(fmt.Sprintf("raw-%d", reqSeq.Add(1))), Method: method, Params: params,
	})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if resp.Error != nil {
		t.Fatalf("%s: error %d %s", method, resp.Error.Code, resp.Error.Message)
	}
	return resp
}

func subscribe(t *testing.T, c *client.Client, uri string) {
	t.Helper()
	if got := string(rawCall(t, c, "resources/subscribe", map[string]any{"uri": uri}).Result); got != "{}" {
		t.Fatalf("subscribe %s: result %s, want {}", uri, got)
	}
}

func complete(t *testing.T, c *client.Client, ref any, arg, value string, ctxArgs map[string]string) mcpgo.Completion {
	t.Helper()
	req := mcpgo.CompleteRequest{}
	req.Params.Ref = ref
	req.Params.Argument = mcpgo.CompleteArgument{Name: arg, Value: value}
	req.Params.Context = mcpgo.CompleteContext{Arguments: ctxArgs}
	res, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("complete %v %s=%q: %v", ref, arg, value, err)
	}
	return res.Completion
}

func expand(t *testing.T, tmpl string, vars map[string]string) string {
	t.Helper()
	vals := uritemplate.Values{}
	for k, v := range vars {
		vals.Set(k, uritemplate.String(v))
	}
	u, err := uritemplate.MustNew(tmpl).Expand(vals)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func links(res *mcpgo.CallToolResult) []mcpgo.ResourceLink {
	var out []mcpgo.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(mcpgo.ResourceLink); ok {
			out = append(out, l)
		}
	}
	return out
}

func readTurn(t *testing.T, c *client.Client, uri string) memory.Turn {
	t.Helper()
	req := mcpgo.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(context.Background(), req)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	tc := res.Contents[0].(mcpgo.TextResourceContents)
	var turn memory.Turn
	if err := json.Unmarshal([]byte(tc.Text), &turn); err != nil || tc.MIMEType != "application/json" {
		t.Fatalf("read %s: %s (%s): %v", uri, tc.Text, tc.MIMEType, err)
	}
	return turn
}

func TestCompletionsSubscriptionsLinks(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			store := openStore(t)
			srv, subs := newServer(store, Options{Version: "test"})
			c := tr.start(t, srv)
			n := record(c)
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			initialize(t, c)
			caps := c.GetServerCapabilities()
			if caps.Completions == nil || caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged {
				t.Fatalf("capabilities: completions %v resources %+v; want completions and resources{subscribe,listChanged}", caps.Completions, caps.Resources)
			}

			const conv = "proj:x"
			first := mustTool(t, c, "compact_context", map[string]any{"conversation_id": conv, "messages": []any{
				map[string]any{"role": "user", "content": "My sister Alice moved to Lisbon in May to study marine biology.", "name": "Bob", "timestamp": "2025-05-01T10:00:00Z"},
				map[string]any{"role": "assistant", "content": "Lisbon has a strong marine biology institute.", "timestamp": "2025-05-01T10:00:05Z"},
			}})
			var ing memory.IngestResult
			decodeStructured(t, first, &ing)
			tag := ing.Tags[0]

			// Subscribe, including to a turn not stored yet and a URI of no
			// resource of ours (both allowed: a resource may appear later).
			domainsOfConv := "virtualcontext://domains?conversation=proj%3Ax"
			domainURI := expand(t, conversationDomainTemplate, map[string]string{"conversation": conv, "tag": tag})
			futureTurn := turnURI(conv, "t3")
			defaultDomains := domainsURI
			for _, u := range []string{domainsOfConv, domainURI, conversationsURI, futureTurn, defaultDomains, "test://watched-resource"} {
				subscribe(t, c, u)
			}
			lists := n.lists()

			second := mustTool(t, c, "compact_context", map[string]any{"conversation_id": conv, "messages": []any{
				map[string]any{"role": "user", "content": "Alice says the marine biology course in Lisbon starts in September.", "timestamp": "2025-05-02T09:00:00Z"},
			}})
			decodeStructured(t, second, &ing)
			for _, u := range []string{domainsOfConv, conversationsURI, futureTurn} {
				waitFor(t, "resources/updated "+u, func() bool { return n.count(u) > 0 })
			}
			if slices.Contains(ing.Tags, tag) {
				waitFor(t, "resources/updated "+domainURI, func() bool { return n.count(domainURI) > 0 })
			}
			// A new conversation changes the resource list.
			mustTool(t, c, "compact_context", map[string]any{"conversation_id": "other", "messages": []any{
				map[string]any{"role": "user", "content": "The quarterly budget review is on Friday."},
			}})
			waitFor(t, "resources/list_changed", func() bool { return n.lists() > lists })
			if got := n.count(defaultDomains); got != 0 {
				t.Errorf("%s (the default conversation) got %d updates for changes to %s and other", defaultDomains, got, conv)
			}

			// The subscribed turn now reads back verbatim.
			turn := readTurn(t, c, futureTurn)
			if turn.Text != "Alice says the marine biology course in Lisbon starts in September." || turn.Role != "user" || turn.ConversationID != conv ||
				turn.Ref.End <= turn.Ref.Start || turn.Ref.File == "" || !turn.Timestamp.Equal(time.Date(2025, 5, 2, 9, 0, 0, 0, time.UTC)) {
				t.Errorf("turn t3: got %+v", turn)
			}

			// find_quote and recall_context link the turns they cite, after
			// their existing content.
			fq := mustTool(t, c, "find_quote", map[string]any{"conversation_id": conv, "query": "Alice Lisbon"})
			if _, ok := fq.Content[0].(mcpgo.TextContent); !ok {
				t.Fatalf("find_quote: first block is %T, want text", fq.Content[0])
			}
			var quotes memory.FindQuoteResult
			decodeStructured(t, fq, &quotes)
			ls := links(fq)
			if len(quotes.Quotes) == 0 || len(ls) != len(quotes.Quotes) {
				t.Fatalf("find_quote: %d quotes, %d links", len(quotes.Quotes), len(ls))
			}
			for i, l := range ls {
				if want := turnURI(conv, quotes.Quotes[i].TurnID); l.URI != want || l.Type != "resource_link" || l.MIMEType != "application/json" {
					t.Errorf("link %d: got %+v, want uri %s", i, l, want)
				}
				if got := readTurn(t, c, l.URI); got.TurnID != quotes.Quotes[i].TurnID || !strings.Contains(got.Text, "Lisbon") {
					t.Errorf("link %s reads %+v", l.URI, got)
				}
			}
			// recall_context links only the turns it cut or left out: the
			// ones it quotes whole are in its text already.
			rc := mustTool(t, c, "recall_context", map[string]any{"conversation_id": conv, "message": "Where does Alice study?"})
			var rec memory.RecallResult
			decodeStructured(t, rc, &rec)
			if len(rec.TurnIDs) == 0 || len(rec.TruncationRefs) != 0 || len(links(rc)) != 0 {
				t.Fatalf("recall_context: %d turns quoted whole, %d cut, %d links; want no links", len(rec.TurnIDs), len(rec.TruncationRefs), len(links(rc)))
			}
			long := strings.Repeat("The Lisbon field station logs tide, salinity and plankton counts every morning. ", 60)
			mustTool(t, c, "compact_context", map[string]any{"conversation_id": conv, "messages": []any{
				map[string]any{"role": "user", "content": "What does the Lisbon field station record?", "timestamp": "2025-05-03T09:00:00Z"},
				map[string]any{"role": "assistant", "content": long, "timestamp": "2025-05-03T09:00:05Z"},
			}})
			rc = mustTool(t, c, "recall_context", map[string]any{"conversation_id": conv, "message": "What does the Lisbon field station record?", "max_tokens": 300})
			decodeStructured(t, rc, &rec)
			ls = links(rc)
			if len(rec.TruncationRefs) == 0 || len(ls) != len(rec.TruncationRefs) {
				t.Fatalf("recall_context of a long turn: %d cut, %d links (%s)", len(rec.TruncationRefs), len(ls), rec.Text)
			}
			for i, l := range ls {
				if want := turnURI(conv, rec.TruncationRefs[i].Turn); l.URI != want {
					t.Errorf("recall link %d: got %s, want %s", i, l.URI, want)
				}
				if got := readTurn(t, c, l.URI); got.Text != long && rec.TruncationRefs[i].Turns == 1 {
					t.Errorf("link %s reads %d bytes, want the whole %d-byte turn", l.URI, len(got.Text), len(long))
				}
			}

			// Completions from what memory holds.
			recallRef := mcpgo.PromptReference{Type: "ref/prompt", Name: "recall"}
			if got := complete(t, c, recallRef, "topic", tag[:2], map[string]string{"conversation_id": conv}); !slices.Contains(got.Values, tag) || got.Total < 1 {
				t.Errorf("recall topic %q: got %+v, want %s", tag[:2], got, tag)
			}
			fuzzy := tag[:1] + tag[len(tag)-1:]
			if got := complete(t, c, recallRef, "topic", fuzzy, map[string]string{"conversation_id": conv}); !slices.Contains(got.Values, tag) {
				t.Errorf("recall topic fuzzy %q: got %+v, want %s", fuzzy, got, tag)
			}
			if got := complete(t, c, recallRef, "conversation_id", "PR", nil); !slices.Equal(got.Values, []string{conv}) {
				t.Errorf("recall conversation_id: got %+v, want [%s]", got, conv)
			}
			if got := complete(t, c, mcpgo.ResourceReference{Type: "ref/resource", URI: conversationDomainTemplate}, "tag", "", map[string]string{"conversation": conv}); !slices.Contains(got.Values, tag) {
				t.Errorf("template tag: got %+v, want %s", got, tag)
			}
			if got := complete(t, c, mcpgo.ResourceReference{Type: "ref/resource", URI: turnTemplate}, "turn", "t", map[string]string{"conversation": conv}); !slices.Equal(got.Values, []string{"t5", "t4", "t3", "t2", "t1"}) {
				t.Errorf("template turn: got %+v, want the latest first", got)
			}
			if got := complete(t, c, mcpgo.PromptReference{Type: "ref/prompt", Name: "no_such_prompt"}, "x", "a", nil); len(got.Values) != 0 {
				t.Errorf("unknown prompt: got %+v, want no values", got)
			}

			// Unsubscribed URIs get nothing more.
			rawCall(t, c, "resources/unsubscribe", map[string]any{"uri": domainsOfConv})
			before := n.count(domainsOfConv)
			convs := n.count(conversationsURI)
			mustTool(t, c, "compact_context", map[string]any{"conversation_id": conv, "messages": []any{
				map[string]any{"role": "user", "content": "Bob will visit Alice in Lisbon in October."},
			}})
			waitFor(t, "resources/updated after unsubscribe", func() bool { return n.count(conversationsURI) > convs })
			time.Sleep(3 * updateInterval)
			if got := n.count(domainsOfConv); got != before {
				t.Errorf("%s: %d updates after unsubscribe", domainsOfConv, got-before)
			}

			// The session's subscriptions go when it ends.
			c.Close()
			waitFor(t, "the session's subscriptions dropped", func() bool {
				subs.mu.Lock()
				defer subs.mu.Unlock()
				return len(subs.sessions) == 0
			})
		})
	}
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(context.Background(), req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

func mustTool(t *testing.T, c *client.Client, name string, args any) *mcpgo.CallToolResult {
	t.Helper()
	res := callTool(t, c, name, args)
	if res.IsError {
		t.Fatalf("%s: %s", name, firstText(t, res))
	}
	return res
}

// TestUpdatesCoalesced: changes within the update interval reach a
// subscriber as one notification per URI.
func TestUpdatesCoalesced(t *testing.T) {
	store := openStore(t)
	srv, subs := newServer(store, Options{})
	subs.interval = time.Hour // after the first batch, nothing more goes out
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	n := record(c)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	subscribe(t, c, domainsURI)
	for i := range 5 {
		mustTool(t, c, "compact_context", map[string]any{"messages": []any{
			map[string]any{"role": "user", "content": fmt.Sprintf("Garden note %d: the tomatoes need water.", i)},
		}})
	}
	waitFor(t, "the first update", func() bool { return n.count(domainsURI) > 0 })
	subs.mu.Lock()
	pending := 0
	for _, ss := range subs.sessions {
		if ss.dirty[domainsURI] {
			pending++
		}
	}
	subs.mu.Unlock()
	if got := n.count(domainsURI); got != 1 || pending != 1 {
		t.Errorf("five changes: %d notifications sent and %d pending, want 1 sent (leading edge) and the rest coalesced into 1 pending", got, pending)
	}
}

func TestRank(t *testing.T) {
	cands := []usage{{"postgres-migration", 3}, {"pets", 9}, {"japan-trip", 5}, {"go-scheduler", 7}, {"Photos", 1}}
	tests := []struct {
		typed string
		want  []string
	}{
		{"", []string{"pets", "go-scheduler", "japan-trip", "postgres-migration", "Photos"}},
		{"p", []string{"pets", "postgres-migration", "Photos", "japan-trip"}}, // prefix by use, then "japan-trip" (subsequence)
		{"PO", []string{"postgres-migration", "Photos"}},                      // prefix, then subsequence p…o
		{"jt", []string{"japan-trip"}},
		{"zzz", []string{}},
	}
	for _, tt := range tests {
		got := rank(cands, tt.typed)
		if !slices.Equal(got.Values, tt.want) || got.Total != len(tt.want) || got.HasMore {
			t.Errorf("rank(%q): got %+v, want %v", tt.typed, got, tt.want)
		}
	}
	many := make([]usage, 250)
	for i := range many {
		many[i] = usage{fmt.Sprintf("tag-%03d", i), i}
	}
	got := rank(many, "tag")
	if len(got.Values) != maxCompletions || got.Total != 250 || !got.HasMore || got.Values[0] != "tag-249" {
		t.Errorf("250 matches: got %d values, total %d, hasMore %v, first %s", len(got.Values), got.Total, got.HasMore, got.Values[0])
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		uri  string
		want resourceTarget
	}{
		{"virtualcontext://conversations", resourceTarget{kind: "conversations"}},
		{"virtualcontext://domains", resourceTarget{kind: "domains", conv: "default"}},
		{"virtualcontext://domains?conversation=a%3Ab", resourceTarget{kind: "domains", conv: "a:b"}},
		{"virtualcontext://domains/hello%20world", resourceTarget{kind: "domain", conv: "default", name: "hello world"}},
		{"virtualcontext://conversations/c1/domains/pets", resourceTarget{kind: "domain", conv: "c1", name: "pets"}},
		{"virtualcontext://conversations/a%3Ab/turns/t7", resourceTarget{kind: "turn", conv: "a:b", name: "t7"}},
		{"virtualcontext://domains/", resourceTarget{}},
		{"virtualcontext://nothing", resourceTarget{}},
		{"test://watched-resource", resourceTarget{}},
	}
	for _, tt := range tests {
		if got := parseTarget(tt.uri, "default"); got != tt.want {
			t.Errorf("parseTarget(%s): got %+v, want %+v", tt.uri, got, tt.want)
		}
	}
	ch := memory.Change{Kind: memory.ChangeCompacted, ConversationID: "c1", Tags: []string{"Pets"}, TurnIDs: []string{"t7"}}
	for _, tt := range []struct {
		target resourceTarget
		want   bool
	}{
		{resourceTarget{kind: "conversations"}, false}, // compaction changes no count it shows
		{resourceTarget{kind: "domains", conv: "c1"}, true},
		{resourceTarget{kind: "domains", conv: "c2"}, false},
		{resourceTarget{kind: "domain", conv: "c1", name: "pets"}, true},
		{resourceTarget{kind: "domain", conv: "c1", name: "japan"}, false},
		{resourceTarget{kind: "turn", conv: "c1", name: "t7"}, true},
		{resourceTarget{kind: "turn", conv: "c1", name: "t8"}, false},
		{resourceTarget{}, false},
	} {
		if got := tt.target.affectedBy(ch); got != tt.want {
			t.Errorf("%+v affected by a compaction of c1 (Pets, t7): got %v, want %v", tt.target, got, tt.want)
		}
	}
}
