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

// ForgetArgs are forget's arguments.
type ForgetArgs struct {
	ConversationID string   `json:"conversation_id" jsonschema:"Memory space to forget in (required: forgetting never guesses the space)."`
	Query          string   `json:"query,omitempty" jsonschema:"An exact phrase, matched case-insensitively: every turn containing it is forgotten."`
	TurnIDs        []string `json:"turn_ids,omitempty" jsonschema:"Turn ids to forget (t12), as find_quote and recall name them."`
	Tag            string   `json:"tag,omitempty" jsonschema:"Forget every turn carrying this topic tag."`
	Before         string   `json:"before,omitempty" jsonschema:"Forget the turns said before this RFC3339 time."`
	DryRun         bool     `json:"dry_run,omitempty" jsonschema:"Only report which turns would be forgotten; change nothing."`
}

// maxForgetTurnIDs bounds turn_ids in one call.
const maxForgetTurnIDs = 1000

func forgetInputSchema() []byte {
	s := mustSchema[ForgetArgs]()
	conversationProp(s)
	c := prop(s, "conversation_id")
	c.Pattern, c.MinLength = requiredConversationIDPattern, ptr(1)
	s.Required = []string{"conversation_id"}
	q := prop(s, "query")
	q.MinLength, q.MaxLength = ptr(1), ptr(maxQueryBytes)
	ids := prop(s, "turn_ids")
	single(ids, "array")
	ids.MaxItems = ptr(maxForgetTurnIDs)
	ids.Items.Pattern = `^t[1-9][0-9]*$`
	prop(s, "before").Format = "date-time"
	return marshalSchema(s)
}

// decodeForget decodes and validates forget's arguments.
func decodeForget(raw []byte) (memory.ForgetRequest, error) {
	var a ForgetArgs
	if err := decodeStrict(raw, &a); err != nil {
		return memory.ForgetRequest{}, err
	}
	if strings.TrimSpace(a.ConversationID) == "" {
		return memory.ForgetRequest{}, argErrorf("conversation_id: required, the memory space to forget in (domain_status names it)")
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return memory.ForgetRequest{}, err
	}
	if len(a.Query) > maxQueryBytes {
		return memory.ForgetRequest{}, argErrorf("query: at most %d bytes, got %d", maxQueryBytes, len(a.Query))
	}
	if len(a.TurnIDs) > maxForgetTurnIDs {
		return memory.ForgetRequest{}, argErrorf("turn_ids: at most %d per call, got %d", maxForgetTurnIDs, len(a.TurnIDs))
	}
	before, err := parseTime("before", a.Before)
	if err != nil {
		return memory.ForgetRequest{}, err
	}
	req := memory.ForgetRequest{ConversationID: a.ConversationID, Query: strings.TrimSpace(a.Query), TurnIDs: a.TurnIDs,
		Tag: strings.TrimSpace(a.Tag), Before: before, DryRun: a.DryRun}
	if req.Query == "" && len(req.TurnIDs) == 0 && req.Tag == "" && req.Before.IsZero() {
		return req, argErrorf("forget needs at least one of query (an exact phrase), turn_ids, tag or before; when several are given a turn must match all of them")
	}
	return req, nil
}

func forgetTool(mem Memory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("forget",
		mcpgo.WithDescription("Permanently forget turns the user asks to be forgotten: by exact phrase (query), turn ids, topic tag or before a time "+
			"(several selectors: a turn must match all). The text leaves the master log, every summary that drew on it (remade without it), "+
			"the search index, vectors and tags, and stays gone after restarts, rebuilds and re-imports; a tombstone records what was removed and when, never the text. "+
			"Use dry_run first to see which turns match. Returns forgotten (count) and turn_ids."),
		rawInputSchema(forgetInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[memory.ForgetResult]()),
		annotations("Forget turns", false, true, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "forget", decodeForget,
		func(ctx context.Context, req memory.ForgetRequest, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := mem.Forget(ctx, req)
			if err != nil {
				return nil, err
			}
			var text string
			switch {
			case res.Forgotten == 0:
				text = fmt.Sprintf("No turn of %q matches; nothing was forgotten.", res.ConversationID)
			case res.DryRun:
				text = fmt.Sprintf("Dry run: %d turn(s) of %q would be forgotten: %s. Call forget again without dry_run to forget them.",
					res.Forgotten, res.ConversationID, strings.Join(res.TurnIDs, ", "))
			default:
				text = fmt.Sprintf("Forgot %d turn(s) of %q: %s; %d summaries remade.", res.Forgotten, res.ConversationID, strings.Join(res.TurnIDs, ", "), res.SummariesRemade)
				if len(res.DroppedTags) > 0 {
					text += " Topics gone: " + strings.Join(res.DroppedTags, ", ") + "."
				}
			}
			return mcpgo.NewToolResultStructured(res, text), nil
		})}
}
