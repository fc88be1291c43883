package mcp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/memory"
)

// TestHierarchicalRecallOverStdio: with assembly hierarchical, recall_context
// answers with recent turns whole, earlier ones as per-message summaries
// (made lazily by the extractive summariser) and the rest named by a
// reference, byte for byte as in the golden file.
func TestHierarchicalRecallOverStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	st, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), Assembly: memory.AssemblyHierarchical,
		Now: func() time.Time { return time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) }})
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
	topics := []string{
		"The greenhouse heater broke on night %d; we moved the chilli seedlings to the kitchen and ordered a 2 kW replacement with a thermostat.",
		"Compost batch %d reached 60 degrees after turning; the nettles and coffee grounds helped, and the pile needs turning again on Friday.",
		"Tomato bed %d got the drip line; the timer runs 20 minutes at 6am, and the mulch of straw keeps the soil from drying out in June.",
	}
	var msgs []map[string]any
	for i := range 24 {
		role := []string{"user", "assistant"}[i%2]
		text := strings.Repeat(fmt.Sprintf(topics[(i/4)%3], i+1)+" ", 1+i%3)
		msgs = append(msgs, map[string]any{"role": role, "content": text,
			"timestamp": time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Minute).Format(time.RFC3339)})
	}
	if res := callTool(t, c, "compact_context", map[string]any{"conversation_id": "garden", "messages": msgs}); res.IsError {
		t.Fatalf("compact_context: %s", firstText(t, res))
	}
	res := callTool(t, c, "recall_context", map[string]any{"conversation_id": "garden", "message": "where are we with the garden?", "max_tokens": 600})
	var rec memory.RecallResult
	decodeStructured(t, res, &rec)
	text := firstText(t, res)
	if rec.Tokens > 600 {
		t.Fatalf("%d tokens over the budget of 600", rec.Tokens)
	}
	kinds := map[string]int{}
	for _, s := range rec.Summaries {
		kinds[s.Kind]++
	}
	if kinds["message"] == 0 || len(rec.TruncationRefs) != 1 || len(rec.TurnIDs) == 0 {
		t.Fatalf("not layered: summaries %v, refs %+v, turns %v\n%s", kinds, rec.TruncationRefs, rec.TurnIDs, text)
	}
	path := filepath.Join("testdata", "hierarchical_recall.txt")
	if *update {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (go test ./mcp -run Hierarchical -update): %v", err)
	}
	if string(want) != text {
		t.Fatalf("hierarchical recall drifted from %s (go test ./mcp -run Hierarchical -update if intended):\n%s", path, text)
	}
	// The reference to the oldest turns reads back through read_log.
	ref := rec.TruncationRefs[0]
	back := callTool(t, c, "read_log", map[string]any{"conversation_id": "garden", "start": ref.Start, "end": ref.End})
	if back.IsError || strings.Count(firstText(t, back), "\n") != ref.Turns-1 {
		t.Fatalf("read_log of %+v: %s", ref, firstText(t, back))
	}
}
