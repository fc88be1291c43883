package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/memory"
)

// tools returns every tool, each definition next to its handler, in the
// order they are documented.
func tools(mem Memory, log *slog.Logger) []mcpserver.ServerTool {
	out := []mcpserver.ServerTool{
		compactContextTool(mem, log),
		recallContextTool(mem, log),
		expandTopicTool(mem, log),
		collapseTopicTool(mem, log),
		findQuoteTool(mem, log),
		domainStatusTool(mem, log),
		listContextItemsTool(mem, log),
		addContextItemTool(mem, log),
		removeContextItemTool(mem, log),
		readLogTool(mem, log),
		forgetTool(mem, log),
	}
	if rep, ok := mem.(Replacer); ok {
		out = append(out, compactMessagesTool(rep, log))
	}
	return out
}

func compactContextTool(mem Memory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("compact_context",
		mcpgo.WithDescription("Store the new exchange in long-term memory after you answer. "+
			"Appends the messages to the conversation's master log (idempotent: messages already stored count as duplicates), "+
			"tags and indexes them, and compacts old turns into summaries when the conversation grows past its thresholds (or now with force). "+
			"A batch is all or nothing: one invalid message stores none of them. Returns stored, duplicates, segments compacted, tokens freed and tags."),
		rawInputSchema(compactInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[memory.IngestResult]()),
		annotations("Store messages in memory", false, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "compact_context", decodeCompact,
		func(ctx context.Context, req memory.IngestRequest, call mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			req.Progress = progressFunc(ctx, call, log)
			res, err := mem.Ingest(ctx, req)
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("Stored %d message(s) in %q (%d duplicate(s) not stored again%s); %d turns in total.",
				res.Stored, res.ConversationID, res.Duplicates, emptyNote(res.Skipped), res.TotalTurns)
			if res.Redacted > 0 {
				text += fmt.Sprintf(" Redacted %d secret(s) before storing (replaced by [secret:...] placeholders).", res.Redacted)
			}
			if res.Compacted {
				text += fmt.Sprintf(" Compacted %d segment(s), freeing %d tokens.", res.SegmentsCompacted, res.TokensFreed)
			}
			if len(res.Tags) > 0 {
				text += " Tags: " + strings.Join(res.Tags, ", ") + "."
			}
			return mcpgo.NewToolResultStructured(res, text), nil
		})}
}

func recallContextTool(mem Memory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("recall_context",
		mcpgo.WithDescription("Recall the past context relevant to a message; call it at the start of every turn with the user's message. Returns, within max_tokens, "+
			"the conversation's context items (configured rules and references: those in its session context and those relevant to the message), then "+
			"topic summaries and the exact past turns that answer the message (verbatim, with speaker and date). "+
			"The first content block is that context as plain text; structuredContent says why each piece is there. Read-only: the message is not stored."),
		rawInputSchema(recallInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[memory.RecallResult]()),
		annotations("Recall relevant context", true, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "recall_context", decodeRecall,
		func(ctx context.Context, req memory.RecallRequest, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			req.Client = clientName(ctx)
			res, err := mem.Recall(ctx, req)
			if err != nil {
				return nil, err
			}
			text := res.Text
			if strings.TrimSpace(text) == "" {
				text = "(no stored context matches this message yet)"
			}
			return withLinks(mcpgo.NewToolResultStructured(res, text), recallLinks(res)), nil
		})}
}

func expandTopicTool(mem Memory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("expand_topic",
		mcpgo.WithDescription("Page a topic in: returns the topic's content at the asked depth (segments: its segment summaries; full: the original turns read back from the master log), "+
			"trimmed to max_tokens, and records it in the working set, collapsing the coldest topics when over budget. The content is in this result."),
		rawInputSchema(expandInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[memory.ExpandResult]()),
		annotations("Expand a topic", false, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "expand_topic", decodeExpand,
		func(ctx context.Context, req memory.ExpandRequest, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := mem.Expand(ctx, req)
			if err != nil {
				return nil, err
			}
			text := res.Text
			if strings.TrimSpace(text) == "" {
				text = fmt.Sprintf("(topic %q has no content at depth %s yet)", res.Tag, res.Depth)
			}
			return mcpgo.NewToolResultStructured(res, text), nil
		})}
}

func collapseTopicTool(mem Memory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("collapse_topic",
		mcpgo.WithDescription("Page a topic out of the working set to free budget (depth summary keeps its summary, none drops it). Nothing stored is deleted. Returns the tokens freed."),
		rawInputSchema(collapseInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[memory.CollapseResult]()),
		annotations("Collapse a topic", false, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "collapse_topic", decodeCollapse,
		func(ctx context.Context, req memory.CollapseRequest, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := mem.Collapse(ctx, req)
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("Collapsed %q to %s, freeing %d tokens.", res.Tag, res.Depth, res.TokensFreed)
			return mcpgo.NewToolResultStructured(res, text), nil
		})}
}

func findQuoteTool(mem Memory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("find_quote",
		mcpgo.WithDescription("Full-text search over every stored original turn. Call it before ever saying you do not remember something. "+
			"Each hit has the excerpt with matched terms marked, speaker, timestamp, conversation, tags and its master-log reference (file and byte range); "+
			"follow up with expand_topic on a hit's tag for more."),
		rawInputSchema(findQuoteInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[FindQuotePage]()),
		annotations("Find a quote", true, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "find_quote", decodeFindQuotePage,
		func(ctx context.Context, req findQuoteReq, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := findQuotePage(ctx, mem, req)
			if err != nil {
				return nil, err
			}
			text := renderQuotes(memory.FindQuoteResult{Query: res.Query, Quotes: res.Quotes})
			if res.Note != "" {
				text = res.Note + "\n" + text
			}
			if res.NextCursor != "" {
				text += fmt.Sprintf("\nMore hits: call find_quote again with the same arguments and cursor %q.", res.NextCursor)
			}
			page := memory.FindQuoteResult{Query: res.Query, Quotes: res.Quotes}
			return withLinks(mcpgo.NewToolResultStructured(res, text), quoteLinks(page)), nil
		})}
}

func domainStatusTool(mem Memory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("domain_status",
		mcpgo.WithDescription("What memory holds for a conversation: every topic tag with turn and segment counts, full vs summary tokens, first/last seen and working-set depth; "+
			"store totals; and which optional features (embeddings, LLM) are enabled. Tags come in pages (limit, default 50): pass next_cursor as cursor for more."),
		rawInputSchema(statusInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[StatusPage]()),
		annotations("Memory status", true, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "domain_status", decodeStatusPage,
		func(ctx context.Context, req statusReq, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			st, err := mem.Status(ctx, req.conv)
			if err != nil {
				return nil, err
			}
			tags, next := page(st.Tags, req.offset, req.limit, "domain_status", fingerprint(req.conv))
			res := StatusPage{ConversationID: st.ConversationID, Tags: tags, TotalTags: len(st.Tags), NextCursor: next, Totals: st.Totals, Features: st.Features}
			st.Tags = tags
			text := renderStatus(st)
			if next != "" {
				text += fmt.Sprintf("\nShowing tags %d-%d of %d; call domain_status with cursor %q for more.", req.offset+1, req.offset+len(tags), res.TotalTags, next)
			}
			return mcpgo.NewToolResultStructured(res, text), nil
		})}
}

func readLogTool(mem Memory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("read_log",
		mcpgo.WithDescription("Read back, verbatim, what an answer cut or left out for its budget: recall_context and expand_topic mark it "+
			"[truncated: N tokens ...; log <file> bytes START-END ...]; pass START and END (and the conversation_id) here. "+
			"Returns the master log's bytes in that range: JSON records, one a line, each [4, turn number, role, speaker, message text, said at, stored at, checksum] "+
			"(older records are objects with the text in \"content\"). Read-only; at most 256 KiB a call."),
		rawInputSchema(readLogInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[memory.ReadLogResult]()),
		annotations("Read the master log", true, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "read_log", decodeReadLog,
		func(ctx context.Context, req memory.ReadLogRequest, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := mem.ReadLog(ctx, req)
			if err != nil {
				return nil, err
			}
			return mcpgo.NewToolResultStructured(res, res.Text), nil
		})}
}

// handle wraps a tool: raw arguments -> decode+validate -> call -> result,
// with every error mapped to a tool result the model can act on.
func handle[Req any](log *slog.Logger, name string, decode func([]byte) (Req, error),
	call func(context.Context, Req, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error),
) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, request mcpgo.CallToolRequest) (res *mcpgo.CallToolResult, err error) {
		start := time.Now()
		defer func() {
			// WithRecovery covers the protocol; this keeps a panic a tool error.
			if p := recover(); p != nil {
				log.Error("tool panicked", "tool", name, "panic", fmt.Sprint(p))
				res, err = mcpgo.NewToolResultError(name+" failed: internal error (details in the server log)"), nil
			}
		}()
		raw, rerr := rawArguments(request)
		if rerr != nil {
			return mcpgo.NewToolResultError(rerr.Error()), nil
		}
		req, derr := decode(raw)
		if derr != nil {
			log.Debug("tool arguments rejected", "tool", name, "err", derr)
			return mcpgo.NewToolResultError(derr.Error()), nil
		}
		out, cerr := call(ctx, req, request)
		if cerr != nil {
			return toolError(log, name, cerr), nil
		}
		log.Debug("tool call", "tool", name, "ms", time.Since(start).Milliseconds())
		return out, nil
	}
}

func rawArguments(req mcpgo.CallToolRequest) ([]byte, error) {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments, nil
	}
	switch a := req.Params.Arguments.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		return a, nil
	case []byte:
		return a, nil
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, argErrorf("arguments could not be read: %v", err)
		}
		return b, nil
	}
}

// toolError maps an engine error: the caller's mistakes come back with
// memory's message (it says what to change); faults get a short message and
// the detail goes to the log.
func toolError(log *slog.Logger, name string, err error) *mcpgo.CallToolResult {
	switch {
	case errors.Is(err, memory.ErrInvalid), errors.Is(err, memory.ErrNotFound), errors.Is(err, memory.ErrTooLarge):
		return mcpgo.NewToolResultError(err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return mcpgo.NewToolResultError(name + " was cancelled before it finished; nothing was lost, call it again")
	case errors.Is(err, memory.ErrStorage):
		// Disk full, no permission, a damaged vc.db: the message says what
		// to do and what became of the request.
		log.Error("tool failed", "tool", name, "err", err)
		return mcpgo.NewToolResultError(name + " failed: " + err.Error())
	case errors.Is(err, memory.ErrClosed):
		return mcpgo.NewToolResultError(name + " failed: the memory store is closed (the server is shutting down)")
	case errors.Is(err, memory.ErrReadOnly):
		return mcpgo.NewToolResultError(name + " refused: " + err.Error())
	default:
		log.Error("tool failed", "tool", name, "err", err)
		return mcpgo.NewToolResultError(name + " failed: internal error (details in the server log); the stored memory is unaffected")
	}
}

// progressFunc returns a memory.Progress that sends MCP progress
// notifications, or nil when the client sent no progress token.
func progressFunc(ctx context.Context, req mcpgo.CallToolRequest, log *slog.Logger) memory.Progress {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	srv := mcpserver.ServerFromContext(ctx)
	if srv == nil {
		return nil
	}
	token := req.Params.Meta.ProgressToken
	return func(done, total int, message string) {
		params := map[string]any{"progressToken": token, "progress": done}
		if total > 0 {
			params["total"] = total
		}
		if message != "" {
			params["message"] = message
		}
		// A lost progress notification is not worth failing an ingest for.
		if err := srv.SendNotificationToClient(ctx, "notifications/progress", params); err != nil {
			log.Debug("progress notification not sent", "err", err)
		}
	}
}

func renderQuotes(res memory.FindQuoteResult) string {
	if len(res.Quotes) == 0 {
		return fmt.Sprintf("No stored turn matches %q. Try other words, a wider time range or scope \"all\".", res.Query)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d quote(s) for %q:\n", len(res.Quotes), res.Query)
	for i, q := range res.Quotes {
		who := q.Role
		if q.Speaker != "" {
			who = q.Speaker + " (" + q.Role + ")"
		}
		fmt.Fprintf(&b, "\n%d. %s, %s, conversation %s", i+1, who, q.Timestamp.UTC().Format(time.RFC3339), q.ConversationID)
		if len(q.Tags) > 0 {
			fmt.Fprintf(&b, ", tags %s", strings.Join(q.Tags, ", "))
		}
		fmt.Fprintf(&b, " [turn %s; %s bytes %d-%d]\n   %s\n", q.TurnID, q.Ref.File, q.Ref.Start, q.Ref.End, q.Excerpt)
	}
	return b.String()
}

func renderStatus(st memory.Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Conversation %s: %d turns, %d segments, %d tag summaries, %d tokens (%d active, %d compacted).\n",
		st.ConversationID, st.Totals.Turns, st.Totals.Segments, st.Totals.TagSummaries,
		st.Totals.Tokens, st.Totals.ActiveTokens, st.Totals.CompactedTokens)
	fmt.Fprintf(&b, "Embeddings: %s. LLM: %s.\n", feature(st.Features.Embeddings, st.Features.EmbeddingsReason), feature(st.Features.LLM, st.Features.LLMReason))
	if st.Features.ReadOnly {
		fmt.Fprintf(&b, "Read-only: %s.\n", st.Features.ReadOnlyReason)
	}
	if len(st.Tags) == 0 {
		b.WriteString("No topics yet.\n")
		return b.String()
	}
	b.WriteString("\ntag | turns | segments | full tokens | summary tokens | depth | first seen | last seen\n")
	for _, t := range st.Tags {
		fmt.Fprintf(&b, "%s | %d | %d | %d | %d | %s | %s | %s\n", t.Tag, t.Turns, t.Segments, t.FullTokens, t.SummaryTokens,
			t.Depth, day(t.FirstSeen), day(t.LastSeen))
	}
	return b.String()
}

func feature(on bool, reason string) string {
	switch {
	case on:
		return "on"
	case reason != "":
		return "off (" + reason + ")"
	default:
		return "off"
	}
}

func day(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02")
}

// clientName is the MCP client's clientInfo name ("" when unknown): with
// context_hint_style auto, it picks the topics hint's form.
func clientName(ctx context.Context) string {
	if s, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
		return s.GetClientInfo().Name
	}
	return ""
}

// emptyNote says how many of the stored messages have no text (a tool call
// alone, an empty string): they are kept in the log, in their place, but
// nothing in them can be searched. It once read "N empty skipped", which
// said the opposite of what happens.
func emptyNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of them without text: kept in the log, not searchable", n)
}
