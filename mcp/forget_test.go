package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Forget on the fake removes the turns containing the query.
func (f *fakeMemory) Forget(ctx context.Context, req memory.ForgetRequest) (memory.ForgetResult, error) {
	if f.failWith != nil {
		return memory.ForgetResult{}, f.failWith
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := conv(req.ConversationID)
	res := memory.ForgetResult{ConversationID: c, TurnIDs: []string{}, DryRun: req.DryRun}
	var kept []fakeTurn
	for _, t := range f.turns[c] {
		if req.Query != "" && strings.Contains(strings.ToLower(t.text), strings.ToLower(req.Query)) {
			res.TurnIDs = append(res.TurnIDs, t.id)
			if !req.DryRun {
				continue
			}
		}
		kept = append(kept, t)
	}
	f.turns[c] = kept
	res.Forgotten = len(res.TurnIDs)
	return res, nil
}

type forgetOut struct {
	Forgotten int      `json:"forgotten"`
	TurnIDs   []string `json:"turn_ids"`
	DryRun    bool     `json:"dry_run"`
}

func structured[T any](t *testing.T, res *mcpgo.CallToolResult) T {
	t.Helper()
	var out T
	js, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatalf("structuredContent %s: %v", js, err)
	}
	return out
}

func TestForgetArgumentErrors(t *testing.T) {
	c := startClient(t, openStore(t))
	callTool(t, c, "compact_context", map[string]any{"conversation_id": "c", "messages": []any{
		map[string]any{"role": "user", "content": "The garage door code is 5521."},
	}})
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"no conversation", map[string]any{"query": "garage"}, "conversation_id: required"},
		{"no selector", map[string]any{"conversation_id": "c"}, "at least one of query"},
		{"blank query only", map[string]any{"conversation_id": "c", "query": "  "}, "at least one of query"},
		{"bad before", map[string]any{"conversation_id": "c", "before": "yesterday"}, "before"},
		{"bad turn id", map[string]any{"conversation_id": "c", "turn_ids": []any{"12"}}, "t<number>"},
		{"missing turn", map[string]any{"conversation_id": "c", "turn_ids": []any{"t40"}}, "does not exist"},
		{"unknown tag", map[string]any{"conversation_id": "c", "tag": "volcanoes"}, "tag"},
		{"unknown conversation", map[string]any{"conversation_id": "nope", "query": "x"}, "no stored messages"},
		{"unknown argument", map[string]any{"conversation_id": "c", "query": "x", "everything": true}, "everything"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := callTool(t, c, "forget", tc.args)
			if !res.IsError {
				t.Fatalf("no error; got %s", firstText(t, res))
			}
			if msg := firstText(t, res); !strings.Contains(msg, tc.want) || strings.Contains(msg, "internal error") {
				t.Fatalf("error %q, want it to mention %q", msg, tc.want)
			}
		})
	}
}

// TestForgetEndToEnd: through the MCP client on a real store, a dry run
// reports and keeps, forget removes the fact from find_quote, recall and
// the turn resource, and a resend does not bring it back.
func TestForgetEndToEnd(t *testing.T) {
	st := openStore(t)
	c := startClient(t, st)
	msgs := []any{
		map[string]any{"role": "user", "content": "Planning the garden: tomatoes along the south fence.", "timestamp": "2025-04-01T10:00:00Z"},
		map[string]any{"role": "assistant", "content": "Tomatoes love the south fence; add basil between them.", "timestamp": "2025-04-01T10:01:00Z"},
		map[string]any{"role": "user", "content": "My bank PIN is 8093, the Zanzibar card.", "timestamp": "2025-04-01T10:02:00Z"},
		map[string]any{"role": "assistant", "content": "Noted. Anything else for the garden?", "timestamp": "2025-04-01T10:03:00Z"},
	}
	if res := callTool(t, c, "compact_context", map[string]any{"conversation_id": "home", "messages": msgs, "force": true}); res.IsError {
		t.Fatal(firstText(t, res))
	}
	quotes := func(q string) string {
		res := callTool(t, c, "find_quote", map[string]any{"conversation_id": "home", "query": q})
		if res.IsError {
			t.Fatal(firstText(t, res))
		}
		var out struct {
			Quotes json.RawMessage `json:"quotes"`
		}
		js, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(js, &out); err != nil {
			t.Fatal(err)
		}
		return string(out.Quotes) // (the answer echoes the query)
	}
	if !strings.Contains(quotes("Zanzibar card"), "Zanzibar") {
		t.Fatal("setup: fact not found")
	}

	dry := callTool(t, c, "forget", map[string]any{"conversation_id": "home", "query": "zanzibar CARD", "dry_run": true})
	if dry.IsError {
		t.Fatal(firstText(t, dry))
	}
	if out := structured[forgetOut](t, dry); out.Forgotten != 1 || len(out.TurnIDs) != 1 || out.TurnIDs[0] != "t3" || !out.DryRun {
		t.Fatalf("dry run: %+v", out)
	}
	if !strings.Contains(quotes("Zanzibar card"), "Zanzibar") {
		t.Fatal("dry run forgot the fact")
	}

	res := callTool(t, c, "forget", map[string]any{"conversation_id": "home", "query": "Zanzibar card"})
	if res.IsError {
		t.Fatal(firstText(t, res))
	}
	if out := structured[forgetOut](t, res); out.Forgotten != 1 || out.TurnIDs[0] != "t3" || out.DryRun {
		t.Fatalf("forget: %+v", out)
	}
	if !strings.Contains(firstText(t, res), "Forgot 1 turn") {
		t.Fatalf("text: %s", firstText(t, res))
	}
	if q := quotes("Zanzibar card"); strings.Contains(q, "Zanzibar") || strings.Contains(q, "8093") {
		t.Fatalf("find_quote after forget: %s", q)
	}
	if !strings.Contains(quotes("tomatoes fence"), "Planning the garden") {
		t.Fatalf("the other turns were lost: %s", quotes("tomatoes fence"))
	}
	rec := callTool(t, c, "recall_context", map[string]any{"conversation_id": "home", "message": "what is my bank PIN for the Zanzibar card?"})
	js, _ := json.Marshal(rec)
	if strings.Contains(string(js), "8093") || !strings.Contains(string(js), "garden") {
		t.Fatalf("recall after forget: %s", js)
	}
	read := mcpgo.ReadResourceRequest{}
	read.Params.URI = "virtualcontext://conversations/home/turns/t3"
	if out, err := c.ReadResource(context.Background(), read); err == nil {
		js, _ := json.Marshal(out)
		t.Fatalf("forgotten turn resource still readable: %s", js)
	} else if !strings.Contains(err.Error(), "forgotten") {
		t.Fatalf("forgotten turn resource: %v, want it to say forgotten", err)
	}
	again := callTool(t, c, "compact_context", map[string]any{"conversation_id": "home", "messages": msgs})
	if out := structured[memory.IngestResult](t, again); out.Stored != 0 {
		t.Fatalf("resend stored %d turns", out.Stored)
	}
	if q := quotes("Zanzibar card"); strings.Contains(q, "Zanzibar") {
		t.Fatalf("find_quote after resend: %s", q)
	}
	none := callTool(t, c, "forget", map[string]any{"conversation_id": "home", "query": "Zanzibar"})
	if out := structured[forgetOut](t, none); none.IsError || out.Forgotten != 0 {
		t.Fatalf("forgetting again: %+v", out)
	}
}
