package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/memory"
)

// promptRecallTokens is the budget of the context the recall prompt embeds.
const promptRecallTokens = 2000

func prompts(mem Memory, log *slog.Logger) []mcpserver.ServerPrompt {
	return []mcpserver.ServerPrompt{
		{
			Prompt: mcpgo.NewPrompt("recall",
				mcpgo.WithPromptDescription("What do we remember about a topic? Embeds the recalled context and asks for an answer grounded in it."),
				mcpgo.WithArgument("topic", mcpgo.RequiredArgument(), mcpgo.ArgumentDescription("The topic, person or question to recall")),
				mcpgo.WithArgument("conversation_id", mcpgo.ArgumentDescription("Memory space (default: the configured default)")),
			),
			Handler: func(ctx context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
				topic := strings.TrimSpace(req.Params.Arguments["topic"])
				if topic == "" {
					return nil, fmt.Errorf("recall: topic is required")
				}
				conv := req.Params.Arguments["conversation_id"]
				if err := checkConversationID(conv); err != nil {
					return nil, fmt.Errorf("recall: %w", err)
				}
				res, err := mem.Recall(ctx, memory.RecallRequest{ConversationID: conv, Message: topic, MaxTokens: promptRecallTokens, Scope: memory.ScopeConversation})
				if err != nil {
					return nil, resourceError(log, "prompt recall", err)
				}
				ctxText := res.Text
				if strings.TrimSpace(ctxText) == "" {
					ctxText = "(nothing stored matches yet)"
				}
				text := fmt.Sprintf("What do we remember about %s?\n\nHere is what memory recalled (topic summaries and exact past turns):\n\n%s\n\n"+
					"Answer from this context. If it is not enough, call find_quote with the names or words involved, or expand_topic on one of these tags: %s.",
					topic, ctxText, orDash(strings.Join(res.MatchedTags, ", ")))
				return mcpgo.NewGetPromptResult("Recall "+topic, []mcpgo.PromptMessage{
					mcpgo.NewPromptMessage(mcpgo.RoleUser, mcpgo.NewTextContent(text)),
				}), nil
			},
		},
		{
			Prompt: mcpgo.NewPrompt("summarize_session",
				mcpgo.WithPromptDescription("Summarise what this conversation's memory holds: topics, decisions, open questions."),
				mcpgo.WithArgument("conversation_id", mcpgo.ArgumentDescription("Memory space (default: the configured default)")),
			),
			Handler: func(ctx context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
				conv := req.Params.Arguments["conversation_id"]
				if err := checkConversationID(conv); err != nil {
					return nil, fmt.Errorf("summarize_session: %w", err)
				}
				st, err := mem.Status(ctx, conv)
				if err != nil {
					return nil, resourceError(log, "prompt summarize_session", err)
				}
				text := "Summarise this session from memory: the main topics, the decisions made (with dates), the facts worth keeping, and the open questions.\n\n" +
					"Memory holds:\n\n" + renderStatus(st) +
					"\nUse expand_topic on the topics that matter (depth \"segments\") and find_quote for exact wording; do not invent anything memory does not hold."
				return mcpgo.NewGetPromptResult("Summarise the session", []mcpgo.PromptMessage{
					mcpgo.NewPromptMessage(mcpgo.RoleUser, mcpgo.NewTextContent(text)),
				}), nil
			},
		},
	}
}
