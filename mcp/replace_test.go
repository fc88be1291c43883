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
	"github.com/vc-mcp/vc-mcp/memory/llm"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

func chatMessages(n int) []map[string]any {
	out := []map[string]any{{"role": "system", "content": "You are a helpful assistant."}}
	for i := range n {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out = append(out, map[string]any{"role": role, "content": fmt.Sprintf("Message %d: the Kyoto ryokan costs %d yen a night and we stay in room %d.", i, 20000+i, 100+i)})
	}
	return out
}

// TestCompactMessagesEndToEnd calls compact_messages through the mcp-go
// client over Streamable HTTP against the real store.
func TestCompactMessagesEndToEnd(t *testing.T) {
	st := openStore(t)
	for _, tr := range transports {
		if tr.name == "sse" {
			continue // the same handler; stdio and streamable cover the transports
		}
		t.Run(tr.name, func(t *testing.T) {
			c := tr.start(t, NewServer(st, Options{Version: "test"}))
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			initialize(t, c)
			conv := "e2e-" + tr.name
			res := mustTool(t, c, "compact_messages", map[string]any{"conversation_id": conv, "messages": chatMessages(12), "keep_last": 3})
			var out ReplaceOutput
			decodeStructured(t, res, &out)
			if !out.Compacted || out.Replaced != 9 || len(out.Messages) != 5 || out.Stored != 13 {
				t.Fatalf("got %+v, want 9 replaced, 5 messages (system, summary, 3 kept), 13 stored", out.Replacement)
			}
			if out.Messages[0].Role != "system" || !strings.HasPrefix(out.Messages[1].ID, memory.SummaryIDPrefix) || out.Notice == "" {
				t.Errorf("got messages %+v and notice %q, want system, summary, ... and a notice", out.Messages[:2], out.Notice)
			}
			if text := firstText(t, res); !strings.Contains(text, "Replaced 9 earlier message(s)") {
				t.Errorf("text: %s", text)
			}
			// The replaced messages are still in memory.
			q := mustTool(t, c, "find_quote", map[string]any{"conversation_id": conv, "query": "room 101"})
			if !strings.Contains(firstText(t, q), "room 101") {
				t.Errorf("replaced message not found: %s", firstText(t, q))
			}
			// Sending the compacted list back (plus a new message) folds the summary in.
			again := []any{}
			for _, m := range out.Messages {
				again = append(again, m)
			}
			again = append(again, map[string]any{"role": "user", "content": "And breakfast?"})
			res = mustTool(t, c, "compact_messages", map[string]any{"conversation_id": conv, "messages": again, "keep_last": 1, "notify_user": false})
			var out2 ReplaceOutput
			decodeStructured(t, res, &out2)
			if len(out2.Messages) != 3 || out2.Stored != 1 || out2.Notice != "" {
				t.Errorf("second call: got %d messages, %d stored, notice %q; want 3 (system, summary, last), 1 stored, no notice", len(out2.Messages), out2.Stored, out2.Notice)
			}
			// Mistakes are tool errors the model can act on.
			bad := callTool(t, c, "compact_messages", map[string]any{"messages": chatMessages(2), "keep_last": -1})
			if !bad.IsError || !strings.Contains(firstText(t, bad), "keep_last: must be between 0 and 1000") {
				t.Errorf("keep_last -1: got %v %s", bad.IsError, firstText(t, bad))
			}
			bad = callTool(t, c, "compact_messages", map[string]any{"messages": []any{map[string]any{"role": "robot", "content": "x"}}})
			if !bad.IsError || !strings.Contains(firstText(t, bad), "messages[0].role") {
				t.Errorf("bad role: got %v %s", bad.IsError, firstText(t, bad))
			}
		})
	}
}

// TestHintTierByClientName: recall_context's topics hint follows the MCP
// clientInfo name under context_hint_style auto.
func TestHintTierByClientName(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	var msgs []memory.Message
	for i := range 30 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		topic := []string{"postgres upgrade rehearsal", "kyoto ryokan booking", "rex vet vaccination"}[i/10]
		content, _ := json.Marshal(fmt.Sprintf("About the %s: note %d.", topic, i))
		msgs = append(msgs, memory.Message{Role: role, Content: content, Timestamp: time.Date(2024, 3, 1, 9, i, 0, 0, time.UTC).Format(time.RFC3339)})
	}
	if _, err := st.Ingest(ctx, memory.IngestRequest{ConversationID: "h", Messages: msgs, Force: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		client string
		want   memory.HintStyle
		head   string
	}{
		{"llama3.2:3b", memory.HintShort, "## Topics on record"},
		{"claude-code", memory.HintDashboard, "## Memory dashboard"},
	} {
		t.Run(tc.client, func(t *testing.T) {
			c, err := client.NewInProcessClient(NewServer(st, Options{Version: "test"}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			init := mcpgo.InitializeRequest{}
			init.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
			init.Params.ClientInfo = mcpgo.Implementation{Name: tc.client, Version: "1"}
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatal(err)
			}
			res := mustTool(t, c, "recall_context", map[string]any{"conversation_id": "h", "message": "anything about zebras?", "max_tokens": 4000})
			var out struct {
				HintStyle memory.HintStyle `json:"hint_style"`
			}
			decodeStructured(t, res, &out)
			if out.HintStyle != tc.want || !strings.Contains(firstText(t, res), tc.head) {
				t.Errorf("got hint style %s, want %s with %q in:\n%s", out.HintStyle, tc.want, tc.head, firstText(t, res))
			}
		})
	}
}

// replaceModel answers the replace prompt through MCP sampling like a
// client's model, and records what it was asked.
type replaceModel struct {
	mu      sync.Mutex
	prompts []string
}

func (m *replaceModel) CreateMessage(ctx context.Context, req mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	var b strings.Builder
	b.WriteString(req.SystemPrompt)
	for _, msg := range req.Messages {
		b.WriteString(mcpgo.GetTextFromContent(msg.Content))
	}
	m.mu.Lock()
	m.prompts = append(m.prompts, b.String())
	m.mu.Unlock()
	return &mcpgo.CreateMessageResult{
		SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.NewTextContent(
			`{"summary": "Ana plans 4 nights in Kyoto in May at a ryokan under 30,000 yen a night."}`)},
		Model: "client-model-1", StopReason: "endTurn",
	}, nil
}

// TestCompactMessagesThroughSampling: the summary is written by the MCP
// client's own model (sampling), with the simple prompt when asked.
func TestCompactMessagesThroughSampling(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := llm.NewClient(llm.Config{Provider: llm.ProviderSampling, Model: "client-model"}, NewSampler("", 10*time.Second), llm.ClientOptions{})
	st, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), Summarizer: llm.NewSummarizer(c, summarize.NewExtractive(nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	model := &replaceModel{}
	cl, err := client.NewInProcessClientWithSamplingHandler(NewServer(st, Options{Version: "test", Sampling: true}), model)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	initialize(t, cl)
	for _, simple := range []bool{false, true} {
		res := mustTool(t, cl, "compact_messages", map[string]any{"conversation_id": "s", "messages": chatMessages(8), "use_simple_prompt": simple})
		var out ReplaceOutput
		decodeStructured(t, res, &out)
		if out.Method != "llm:sampling/client-model-1" || !strings.Contains(out.Summary, "30,000 yen") {
			t.Fatalf("simple=%v: got method %q summary %q, want the client's model", simple, out.Method, out.Summary)
		}
		model.mu.Lock()
		p := model.prompts[len(model.prompts)-1]
		model.mu.Unlock()
		detailed := strings.Contains(p, "The note must carry:")
		if detailed == simple || !strings.Contains(p, "Message 5: the Kyoto ryokan") {
			t.Errorf("simple=%v: the prompt sent was not the expected mode or lacks the messages:\n%s", simple, p)
		}
	}
}
