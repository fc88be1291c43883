package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Replacer is what summary-replacement mode needs (compact_messages and
// POST /api/compact). *memory.Store implements it; a Memory without it
// serves no compact_messages tool.
type Replacer interface {
	CompactMessages(ctx context.Context, req memory.ReplaceRequest) (memory.ReplaceResult, error)
}

var _ Replacer = (*memory.Store)(nil)

// CompactMessagesArgs are compact_messages' arguments (and POST
// /api/compact's body).
type CompactMessagesArgs struct {
	ConversationID string            `json:"conversation_id,omitempty" jsonschema:"Memory space the messages are stored in. Omit for the default space."`
	Messages       []json.RawMessage `json:"messages" jsonschema:"The whole conversation as you would send it to the model, system messages included (a summary message from an earlier call included: it is folded into the new summary). 1-1000 messages."`
	KeepLast       *int              `json:"keep_last,omitempty" jsonschema:"How many of the latest messages to keep verbatim after the summary (0-1000). Default: the keep_last setting (2)."`
	// Pointers: absent means the setting, false means false.
	UseSimplePrompt   *bool `json:"use_simple_prompt,omitempty" jsonschema:"Ask the summariser for the short prompt (faster; for small models). Default: the use_simple_prompt setting."`
	NotifyUser        *bool `json:"notify_user,omitempty" jsonschema:"Return a one-line notice for the user that compaction happened. Default: the notify_user setting (true)."`
	OnlyOverThreshold bool  `json:"only_over_threshold,omitempty" jsonschema:"Return the messages unchanged unless they exceed the soft threshold of the context window (call it every turn; it compacts only when due)."`
}

// decodeCompactMessages decodes and validates compact_messages' arguments.
func decodeCompactMessages(raw []byte) (memory.ReplaceRequest, error) {
	var a CompactMessagesArgs
	if err := decodeStrict(raw, &a); err != nil {
		return memory.ReplaceRequest{}, err
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return memory.ReplaceRequest{}, err
	}
	if a.Messages == nil {
		return memory.ReplaceRequest{}, argErrorf("messages: required, an array of 1-%d messages like {\"role\":\"user\",\"content\":\"...\"}", maxMessages)
	}
	if len(a.Messages) < minMessages || len(a.Messages) > maxMessages {
		return memory.ReplaceRequest{}, argErrorf("messages: must hold %d-%d messages, got %d", minMessages, maxMessages, len(a.Messages))
	}
	if a.KeepLast != nil && (*a.KeepLast < 0 || *a.KeepLast > memory.MaxKeepLast) {
		return memory.ReplaceRequest{}, argErrorf("keep_last: must be between 0 and %d, got %d", memory.MaxKeepLast, *a.KeepLast)
	}
	msgs := make([]memory.Message, 0, len(a.Messages))
	for i, rm := range a.Messages {
		m, err := decodeMessage(i, rm)
		if err != nil {
			return memory.ReplaceRequest{}, err
		}
		msgs = append(msgs, m)
	}
	return memory.ReplaceRequest{ConversationID: a.ConversationID, Messages: msgs, KeepLast: a.KeepLast,
		UseSimplePrompt: a.UseSimplePrompt, Notice: a.NotifyUser, OverThresholdOnly: a.OnlyOverThreshold}, nil
}

// ReplaceOutput is compact_messages' structuredContent: memory's result
// with the messages typed for the schema.
type ReplaceOutput struct {
	memory.Replacement
	Messages []MessageArg `json:"messages" jsonschema:"The list to send instead: the original system messages, one summary message, then the latest messages."`
	Summary  string       `json:"summary,omitempty"`
	Notice   string       `json:"notice,omitempty"`
}

func replaceOutput(r memory.ReplaceResult) ReplaceOutput {
	out := ReplaceOutput{Replacement: r.Replacement, Summary: r.Summary, Notice: r.Notice, Messages: make([]MessageArg, len(r.Messages))}
	for i, m := range r.Messages {
		out.Messages[i] = MessageArg{Role: m.Role, Content: m.Content, Name: m.Name, Timestamp: m.Timestamp,
			ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, ID: m.ID}
	}
	return out
}

// replaceLine is the one-line account of a replacement.
func replaceLine(r memory.ReplaceResult) string {
	if !r.Compacted {
		return fmt.Sprintf("Messages returned unchanged (%d tokens): %s.", r.TokensBefore, r.Reason)
	}
	line := fmt.Sprintf("Replaced %d earlier message(s) with one summary (%s prompt, %s); kept %d; %d -> %d tokens. All messages are stored in memory (%d new).",
		r.Replaced, r.Prompt, r.Method, r.Kept, r.TokensBefore, r.TokensAfter, r.Stored)
	if r.Notice != "" {
		line = r.Notice + "\n" + line
	}
	return line
}

func compactMessagesTool(rep Replacer, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("compact_messages",
		mcpgo.WithDescription("Summary-replacement mode: give the whole conversation, get back the shorter list to send instead: "+
			"the original system messages, one summary message standing in for everything older, and the latest keep_last messages verbatim "+
			"(a tool call is never separated from its result). Every message is also stored in memory, so nothing is lost (find_quote and expand_topic read the originals). "+
			"structuredContent.messages is the list; notice is a line to show the user. When replacement is disabled or there is nothing to replace, the messages come back unchanged with a reason."),
		rawInputSchema(compactMessagesInputSchema()),
		mcpgo.WithRawOutputSchema(replaceOutputSchema()),
		annotations("Replace old messages with a summary", false, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "compact_messages", decodeCompactMessages,
		func(ctx context.Context, req memory.ReplaceRequest, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := rep.CompactMessages(ctx, req)
			if err != nil {
				return nil, err
			}
			out := replaceOutput(res)
			b, err := json.Marshal(out)
			if err != nil {
				return nil, fmt.Errorf("encode compact_messages result: %w", err)
			}
			return mcpgo.NewToolResultStructured(out, replaceLine(res)+"\n\n"+string(b)), nil
		})}
}
