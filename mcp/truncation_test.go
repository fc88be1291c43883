package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/memory"
)

// TestTruncationReferenceReadBack: a long turn cut in recall_context carries
// a reference whose byte range, read back through read_log over stdio, is
// exactly that turn's master log record; bad ranges get errors a model can
// act on.
func TestTruncationReferenceReadBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	st, err := memory.Open(ctx, memory.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c := stdioPair(t, ctx, NewServer(st, Options{Version: "test"}))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ProtocolVersion: mcpgo.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo: mcpgo.Implementation{Name: "test", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("The lighthouse lens was ground from flint glass in 1871 and shipped from Birmingham in crates. ", 50)
	res := callTool(t, c, "compact_context", map[string]any{"conversation_id": "trip", "messages": []map[string]any{
		{"role": "user", "content": "Where did the lighthouse lens come from?"},
		{"role": "assistant", "content": long},
		{"role": "user", "content": "Lovely. Book the ferry for Tuesday."},
	}})
	if res.IsError {
		t.Fatalf("compact_context: %s", firstText(t, res))
	}
	res = callTool(t, c, "recall_context", map[string]any{"conversation_id": "trip", "message": "lighthouse lens flint glass Birmingham", "max_tokens": 250})
	var rec memory.RecallResult
	decodeStructured(t, res, &rec)
	if len(rec.TruncationRefs) != 1 {
		t.Fatalf("recall at 250 tokens: refs %+v\n%s", rec.TruncationRefs, firstText(t, res))
	}
	ref := rec.TruncationRefs[0]
	text := firstText(t, res)
	if !strings.Contains(text, "log logs/trip.jsonl bytes ") || !strings.Contains(text, "read_log") || ref.Log != "logs/trip.jsonl" {
		t.Fatalf("recall text lacks a followable reference:\n%s", text)
	}
	res = callTool(t, c, "read_log", map[string]any{"conversation_id": "trip", "start": ref.Start, "end": ref.End})
	if res.IsError {
		t.Fatalf("read_log: %s", firstText(t, res))
	}
	raw, err := os.ReadFile(filepath.Join(dir, "logs", "trip.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	record := strings.Split(string(raw), "\n")[1]
	if got := firstText(t, res); got != record {
		t.Fatalf("read_log gave\n%q\nwant record 2\n%q", got, record)
	}
	// A version 4 record: [4, seq, role, name, content, ts, at, crc].
	var line []json.RawMessage
	var content string
	err = json.Unmarshal([]byte(record), &line)
	if err == nil && len(line) > 4 {
		err = json.Unmarshal(line[4], &content)
	}
	if err != nil || content != long {
		t.Fatalf("the record read back is not the cut turn: %v", err)
	}
	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"conversation_id": "trip", "start": 0, "end": len(raw) + 10}, "outside conversation"},
		{map[string]any{"conversation_id": "trip", "start": 50, "end": 10}, "start < end"},
		{map[string]any{"conversation_id": "trip", "start": 0}, "required"},
		{map[string]any{"conversation_id": "nope", "start": 0, "end": 10}, "no stored messages"},
	} {
		res := callTool(t, c, "read_log", bad.args)
		if !res.IsError || !strings.Contains(firstText(t, res), bad.want) {
			t.Errorf("read_log %v: error %v %q, want one saying %q", bad.args, res.IsError, firstText(t, res), bad.want)
		}
	}
}
