package mcp

// Context items (seed 002) end to end: the real store in a real data
// directory, the mcp-go client, restarts in between.

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/embed"
	"github.com/vc-mcp/vc-mcp/internal/realmodel"
	"github.com/vc-mcp/vc-mcp/memory"
)

func catalogue() []memory.ContextItem {
	return []memory.ContextItem{
		{Type: memory.ItemRule, Name: "house style", Description: "How to write", Text: "Answer in British English and keep answers short.", Priority: 1, Include: memory.IncludeAlways},
		{Type: memory.ItemRule, Name: "migrations", Text: "Every database migration needs a second reviewer and a rollback plan.", Priority: 5, Include: memory.IncludeManual},
		{Type: memory.ItemReference, Name: "auth guide", Description: "How login works",
			Text:     "Users log in with OAuth. The identity service issues access tokens that expire after one hour; clients refresh them with the refresh token.\n\nPasswords are never stored by the API.",
			Priority: 10, Include: memory.IncludeAgent},
		{Type: memory.ItemReference, Name: "error handling", Description: "Errors in handlers",
			Text:     "Handlers wrap every error with context and return it to the caller. Nothing panics on bad input; a panic is a bug.",
			Priority: 10, Include: memory.IncludeAgent},
	}
}

// itemServer opens the store in dir with the catalogue and connects a client.
func itemServer(t *testing.T, dir string, emb memory.Embedder) (*memory.Store, *client.Client) {
	t.Helper()
	opts := memory.Options{Dir: dir, ContextItems: catalogue()}
	if emb != nil {
		opts.Embedder = emb
	}
	st, err := memory.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	c := startClient(t, st)
	t.Cleanup(func() { c.Close(); st.Close() })
	return st, c
}

func recallItems(t *testing.T, c *client.Client, conv, message string) (string, memory.RecallResult) {
	t.Helper()
	res := callTool(t, c, "recall_context", map[string]any{"conversation_id": conv, "message": message})
	if res.IsError {
		t.Fatalf("recall_context: %s", firstText(t, res))
	}
	var out memory.RecallResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return firstText(t, res), out
}

func findDecision(ds []memory.ItemDecision, name string) (memory.ItemDecision, bool) {
	for _, d := range ds {
		if d.Name == name {
			return d, true
		}
	}
	return memory.ItemDecision{}, false
}

func readRequestPage(t *testing.T, c *client.Client, uri string) requestList {
	t.Helper()
	req := mcpgo.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(context.Background(), req)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	var body requestList
	if err := json.Unmarshal([]byte(res.Contents[0].(mcpgo.TextResourceContents).Text), &body); err != nil {
		t.Fatal(err)
	}
	return body
}

func TestContextItemsOverMCP(t *testing.T) {
	dir := t.TempDir()
	st, c := itemServer(t, dir, nil) // no model: lexical scores
	if res := callTool(t, c, "compact_context", map[string]any{"conversation_id": "proj", "messages": []any{
		map[string]any{"role": "user", "content": "We moved the billing job to Fridays."},
	}}); res.IsError {
		t.Fatal(firstText(t, res))
	}

	text, r := recallItems(t, c, "proj", "how do clients refresh an expired OAuth token?")
	if !strings.HasPrefix(text, "# Context items\n## Rule: house style\n") || !strings.Contains(text, "## Reference: auth guide") {
		t.Errorf("want the always item then the relevant agent item:\n%s", text)
	}
	if strings.Contains(text, "error handling") || strings.Contains(text, "## Rule: migrations") {
		t.Errorf("an unrelated or unselected item got in:\n%s", text)
	}
	if d, _ := findDecision(r.ContextItems, "auth guide"); !d.Included || d.Mode != "agent" || d.Score == nil {
		t.Errorf("auth guide: %+v", d)
	}
	if d, _ := findDecision(r.ContextItems, "error handling"); d.Included || d.Reason != memory.ReasonBelowMin {
		t.Errorf("error handling: got %+v, want excluded below_min_score", d)
	}
	if r.ItemSearch.Method != "lexical" || r.RequestID != "r1" {
		t.Errorf("search %+v request %q", r.ItemSearch, r.RequestID)
	}
	text, _ = recallItems(t, c, "proj", "when does the billing job run?")
	if strings.Contains(text, "## Reference:") {
		t.Errorf("unrelated message got a reference:\n%s", text)
	}

	// Manual changes through the tools.
	res := callTool(t, c, "add_context_item", map[string]any{"conversation_id": "proj", "name": "MIGRATIONS"})
	if res.IsError || !strings.Contains(firstText(t, res), `Added "migrations"`) {
		t.Fatalf("add: %s", firstText(t, res))
	}
	res = callTool(t, c, "remove_context_item", map[string]any{"conversation_id": "proj", "name": "house style"})
	if res.IsError {
		t.Fatalf("remove: %s", firstText(t, res))
	}
	res = callTool(t, c, "add_context_item", map[string]any{"conversation_id": "proj", "name": "auth"})
	if !res.IsError || !strings.Contains(firstText(t, res), "did you mean auth guide?") {
		t.Errorf("unknown name: got %s", firstText(t, res))
	}
	res = callTool(t, c, "add_context_item", map[string]any{"conversation_id": "proj"})
	if !res.IsError || !strings.Contains(firstText(t, res), "name: required") {
		t.Errorf("missing name: got %s", firstText(t, res))
	}

	// Restart: the selection is kept.
	c.Close()
	st.Close()
	_, c = itemServer(t, dir, nil)
	res = callTool(t, c, "list_context_items", map[string]any{"conversation_id": "proj"})
	var list memory.ContextItemsResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, it := range list.Items {
		state[it.Name] = it.Session
		if it.Removed {
			state[it.Name] = "removed"
		}
	}
	if state["migrations"] != "manual" || state["house style"] != "removed" || state["auth guide"] != "" {
		t.Errorf("after restart: %v\n%s", state, firstText(t, res))
	}
	text, r = recallItems(t, c, "proj", "when does the billing job run?")
	if !strings.Contains(text, "## Rule: migrations") || strings.Contains(text, "house style") {
		t.Errorf("after restart, want migrations and not house style:\n%s", text)
	}
	if d, _ := findDecision(r.ContextItems, "house style"); d.Reason != memory.ReasonRemoved {
		t.Errorf("house style: got %+v, want removed", d)
	}
	if r.RequestID != "r3" {
		t.Errorf("request id after restart: got %q, want r3", r.RequestID)
	}

	// The request history: newest first, and it says why an item was left out.
	page := readRequestPage(t, c, RequestsURI("proj"))
	if page.Total != 3 || page.Requests[0].ID != "r3" || page.Requests[2].ID != "r1" {
		t.Fatalf("requests: total %d, %+v", page.Total, page.Requests)
	}
	if d, ok := findDecision(page.Requests[2].Items, "error handling"); !ok || d.Reason != memory.ReasonBelowMin || d.Score == nil {
		t.Errorf("first request's record of error handling: %+v", d)
	}
	if len(page.Requests[2].Memory.TurnIDs) == 0 {
		t.Errorf("first request's record has no memory parts: %+v", page.Requests[2].Memory)
	}
	for i := 0; i < requestsPage; i++ {
		recallItems(t, c, "proj", "billing")
	}
	page = readRequestPage(t, c, RequestsURI("proj"))
	if page.Total != 3+requestsPage || len(page.Requests) != requestsPage || page.NextURI == "" {
		t.Fatalf("page 1: total %d, %d records, next %q", page.Total, len(page.Requests), page.NextURI)
	}
	next := readRequestPage(t, c, page.NextURI)
	if len(next.Requests) != 3 || next.Requests[2].ID != "r1" || next.NextURI != "" {
		t.Errorf("page 2: %d records, next %q", len(next.Requests), next.NextURI)
	}

	// The whole item, and completions of item names.
	req := mcpgo.ReadResourceRequest{}
	req.Params.URI = memory.ItemURI("auth guide")
	rr, err := c.ReadResource(context.Background(), req)
	if err != nil {
		t.Fatalf("read %s: %v", req.Params.URI, err)
	}
	if got := rr.Contents[0].(mcpgo.TextResourceContents).Text; !strings.Contains(got, "Passwords are never stored by the API.") {
		t.Errorf("item resource: %s", got)
	}
	comp := complete(t, c, mcpgo.ResourceReference{Type: "ref/resource", URI: itemTemplate}, "name", "au", nil)
	if len(comp.Values) != 1 || comp.Values[0] != "auth guide" {
		t.Errorf("completion: %+v", comp)
	}
}

// wordEmbedder is a deterministic embedder: each word adds to a hashed
// dimension, so texts sharing words are close. It counts the texts it is
// given, the probe and queries aside.
type wordEmbedder struct {
	mu    sync.Mutex
	texts map[string]int
}

func (e *wordEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		e.texts[t]++
		v := make([]float32, 64)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			h := fnv.New32a()
			h.Write([]byte(strings.Trim(w, ".,?!;:")))
			v[h.Sum32()%64]++
		}
		var n float64
		for _, x := range v {
			n += float64(x * x)
		}
		for j := range v {
			v[j] /= float32(math.Sqrt(n))
		}
		out[i] = v
	}
	return out, nil
}

func (e *wordEmbedder) count(sub string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for t, k := range e.texts {
		if strings.Contains(t, sub) {
			n += k
		}
	}
	return n
}

func TestContextItemVectorsCached(t *testing.T) {
	dir := t.TempDir()
	emb := &wordEmbedder{texts: map[string]int{}}
	st, c := itemServer(t, dir, emb)
	_, r := recallItems(t, c, "default", "how do clients refresh an expired OAuth token?")
	if r.ItemSearch.Method != "embeddings" || r.ItemSearch.Chunks == 0 || r.ItemSearch.Embedded != r.ItemSearch.Chunks {
		t.Fatalf("first recall: %+v, want every chunk embedded", r.ItemSearch)
	}
	chunkText := "Passwords are never stored by the API."
	if n := emb.count(chunkText); n != 1 {
		t.Fatalf("chunk embedded %d times, want 1", n)
	}
	_, r = recallItems(t, c, "default", "and what about errors in handlers?")
	if r.ItemSearch.Embedded != 0 || emb.count(chunkText) != 1 {
		t.Errorf("second recall embedded %d chunks (chunk seen %d times), want 0 (cached)", r.ItemSearch.Embedded, emb.count(chunkText))
	}
	if d, _ := findDecision(r.ContextItems, "error handling"); !d.Included {
		t.Errorf("error handling not chosen for a question about it: %+v", r.ContextItems)
	}
	files := 0
	filepath.WalkDir(filepath.Join(dir, "cache", "context-vectors"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".f32") {
			files++
		}
		return nil
	})
	if files != r.ItemSearch.Chunks {
		t.Errorf("%d vector files on disk, want %d", files, r.ItemSearch.Chunks)
	}

	// A new process (new store, fresh embedder) reads them from disk.
	c.Close()
	st.Close()
	emb2 := &wordEmbedder{texts: map[string]int{}}
	_, c = itemServer(t, dir, emb2)
	_, r = recallItems(t, c, "default", "how do clients refresh an expired OAuth token?")
	if r.ItemSearch.Embedded != 0 || emb2.count(chunkText) != 0 {
		t.Errorf("after restart: embedded %d chunks, want 0 (from the disk cache)", r.ItemSearch.Embedded)
	}
	if d, _ := findDecision(r.ContextItems, "auth guide"); !d.Included {
		t.Errorf("auth guide not chosen after restart: %+v", r.ContextItems)
	}
}

// TestContextItemsRealModel checks the choice with the real
// all-MiniLM-L6-v2: the agent item about logging in is chosen for a
// question about it in other words, and not for an unrelated one.
func TestContextItemsRealModel(t *testing.T) {
	m, err := embed.Load(context.Background(), realmodel.Dir(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, c := itemServer(t, t.TempDir(), m)
	_, r := recallItems(t, c, "default", "My session keeps expiring, how do I sign in again without my password?")
	d, _ := findDecision(r.ContextItems, "auth guide")
	for _, d := range r.ContextItems {
		if d.Score != nil {
			t.Logf("sign-in question: %s score %.3f (%s)", d.Name, *d.Score, d.Reason)
		}
	}
	if r.ItemSearch.Method != "embeddings" || !d.Included {
		t.Errorf("sign-in question: auth guide %+v (search %+v)", d, r.ItemSearch)
	}
	_, r = recallItems(t, c, "default", "What is a good recipe for tomato soup?")
	for _, d := range r.ContextItems {
		if d.Score != nil {
			t.Logf("soup question: %s score %.3f (%s)", d.Name, *d.Score, d.Reason)
		}
		if d.Mode == memory.IncludeAgent && d.Included {
			t.Errorf("soup question took agent item %+v", d)
		}
	}
	if d, _ := findDecision(r.ContextItems, "auth guide"); d.Score == nil || d.Reason != memory.ReasonBelowMin {
		t.Errorf("soup question: auth guide %+v, want below_min_score", d)
	}
}

func FuzzDecodeItem(f *testing.F) {
	seeds(f, `{"name":"auth guide","conversation_id":"proj:x"}`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decodeItem(raw)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, req.conv)
		if req.name == "" || len(req.name) > maxItemName || strings.TrimSpace(req.name) != req.name {
			t.Fatalf("decoded %+v", req)
		}
	})
}

func FuzzDecodeListItems(f *testing.F) {
	seeds(f, `{"conversation_id":"chat-1"}`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		conv, err := decodeListItems(raw)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, conv)
	})
}
