package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/yosida95/uritemplate/v3"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Context items (seed 002): three tools to see and change a conversation's
// session context, a resource per item, and a resource per conversation
// listing what each recall used.

// ItemsMemory is what the context-item tools and resources need of memory.
// *memory.Store implements it.
type ItemsMemory interface {
	ContextItems(ctx context.Context, conversationID string) (memory.ContextItemsResult, error)
	AddContextItem(ctx context.Context, conversationID, name string) (memory.ContextItemsResult, error)
	RemoveContextItem(ctx context.Context, conversationID, name string) (memory.ContextItemsResult, error)
	ContextItem(name string) (memory.ContextItem, error)
	Requests(ctx context.Context, conversationID string) ([]memory.RequestRecord, error)
}

var _ ItemsMemory = (*memory.Store)(nil)

const (
	// requestsTemplate lists a conversation's recorded recalls. It is
	// disjoint from the turn and domain templates (a literal "requests").
	requestsTemplate = "virtualcontext://conversations/{conversation}/requests{?cursor}"
	itemTemplate     = "virtualcontext://context-items/{name}"
	// requestsPage is how many request records one page holds.
	requestsPage = 20
	maxItemName  = 80
)

var requestsURITemplate = uritemplate.MustNew(requestsTemplate)

// RequestsURI is the resource URI of a conversation's request history.
func RequestsURI(conv string) string {
	u, err := requestsURITemplate.Expand(uritemplate.Values{"conversation": uritemplate.String(conv)})
	if err != nil { // cannot happen with string values
		return ""
	}
	return u
}

// ItemArgs are add_context_item's and remove_context_item's arguments.
type ItemArgs struct {
	Name           string `json:"name" jsonschema:"The context item's name, as list_context_items gives it (case does not matter)."`
	ConversationID string `json:"conversation_id,omitempty" jsonschema:"Memory space whose session context changes. Omit for the default space."`
}

// ListItemsArgs are list_context_items's arguments.
type ListItemsArgs struct {
	ConversationID string `json:"conversation_id,omitempty" jsonschema:"Memory space whose session context to show. Omit for the default space."`
}

type itemReq struct {
	conv, name string
}

func decodeItem(raw []byte) (itemReq, error) {
	var a ItemArgs
	if err := decodeStrict(raw, &a); err != nil {
		return itemReq{}, err
	}
	name := strings.TrimSpace(a.Name)
	if name == "" {
		return itemReq{}, argErrorf("name: required, one of the names list_context_items gives")
	}
	if len(name) > maxItemName {
		return itemReq{}, argErrorf("name: at most %d characters, got %d", maxItemName, len(name))
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return itemReq{}, err
	}
	return itemReq{conv: a.ConversationID, name: name}, nil
}

func decodeListItems(raw []byte) (string, error) {
	var a ListItemsArgs
	if err := decodeStrict(raw, &a); err != nil {
		return "", err
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return "", err
	}
	return a.ConversationID, nil
}

func itemInputSchema() []byte {
	s := mustSchema[ItemArgs]()
	p := prop(s, "name")
	p.MinLength, p.MaxLength = ptr(1), ptr(maxItemName)
	conversationProp(s)
	return marshalSchema(s)
}

func listItemsInputSchema() []byte {
	s := mustSchema[ListItemsArgs]()
	conversationProp(s)
	return marshalSchema(s)
}

func listContextItemsTool(mem ItemsMemory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("list_context_items",
		mcpgo.WithDescription("List the configured context items (rules and references) and which are in this conversation's session context. "+
			"Items in the session context (include always, or added with add_context_item) join every recall_context answer; agent items join when relevant to the message."),
		rawInputSchema(listItemsInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[memory.ContextItemsResult]()),
		annotations("List context items", true, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "list_context_items", decodeListItems,
		func(ctx context.Context, conv string, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := mem.ContextItems(ctx, conv)
			if err != nil {
				return nil, err
			}
			return mcpgo.NewToolResultStructured(res, renderItems(res, "")), nil
		})}
}

func addContextItemTool(mem ItemsMemory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("add_context_item",
		mcpgo.WithDescription("Add a context item (rule or reference) to this conversation's session context: it then joins every recall_context answer here, whatever its include mode. "+
			"Also undoes remove_context_item. The change is kept across restarts."),
		rawInputSchema(itemInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[memory.ContextItemsResult]()),
		annotations("Add a context item", false, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "add_context_item", decodeItem,
		func(ctx context.Context, req itemReq, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := mem.AddContextItem(ctx, req.conv, req.name)
			if err != nil {
				return nil, err
			}
			head := fmt.Sprintf("Added %q to the session context of %q.", res.Item, res.ConversationID)
			if !res.Changed {
				head = fmt.Sprintf("%q was already in the session context of %q; nothing changed.", res.Item, res.ConversationID)
			}
			return mcpgo.NewToolResultStructured(res, renderItems(res, head)), nil
		})}
}

func removeContextItemTool(mem ItemsMemory, log *slog.Logger) mcpserver.ServerTool {
	tool := mcpgo.NewTool("remove_context_item",
		mcpgo.WithDescription("Remove a context item from this conversation's session context and keep it out of this conversation's recall_context answers (also as an agent item). "+
			"add_context_item undoes it. The change is kept across restarts."),
		rawInputSchema(itemInputSchema()),
		mcpgo.WithRawOutputSchema(outputSchema[memory.ContextItemsResult]()),
		annotations("Remove a context item", false, false, true),
	)
	return mcpserver.ServerTool{Tool: tool, Handler: handle(log, "remove_context_item", decodeItem,
		func(ctx context.Context, req itemReq, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := mem.RemoveContextItem(ctx, req.conv, req.name)
			if err != nil {
				return nil, err
			}
			head := fmt.Sprintf("Removed %q from the context of %q.", res.Item, res.ConversationID)
			if !res.Changed {
				head = fmt.Sprintf("%q was not in the context of %q; nothing changed.", res.Item, res.ConversationID)
			}
			return mcpgo.NewToolResultStructured(res, renderItems(res, head)), nil
		})}
}

func renderItems(res memory.ContextItemsResult, head string) string {
	var b strings.Builder
	if head != "" {
		b.WriteString(head + "\n")
	}
	if len(res.Items) == 0 {
		b.WriteString("No context items are configured (context_items in the config file).")
		return b.String()
	}
	fmt.Fprintf(&b, "Context items for %q (priority, lower first):\n", res.ConversationID)
	for _, it := range res.Items {
		state := "not in session"
		switch {
		case it.Removed:
			state = "removed here"
		case it.Session != "":
			state = "in session (" + it.Session + ")"
		case it.Include == memory.IncludeAgent:
			state = "chosen per message when relevant"
		}
		fmt.Fprintf(&b, "- %03d %s %q [include %s, %d tokens]: %s", it.Priority, it.Type, it.Name, it.Include, it.Tokens, state)
		if it.Description != "" {
			b.WriteString(" — " + it.Description)
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// requestList is the JSON body of a conversation's requests resource.
type requestList struct {
	ConversationID string                 `json:"conversation_id"`
	Requests       []memory.RequestRecord `json:"requests"`
	// Total counts the records kept (the newest memory.RequestRetention).
	Total   int    `json:"total"`
	NextURI string `json:"next_uri,omitempty"`
}

func itemResourceTemplates(mem ItemsMemory, log *slog.Logger) []mcpserver.ServerResourceTemplate {
	return []mcpserver.ServerResourceTemplate{
		{
			Template: mcpgo.NewResourceTemplate(requestsTemplate, "requests-of-conversation",
				mcpgo.WithTemplateDescription(fmt.Sprintf("What each recall_context of a conversation used (JSON), newest first, %d a page (next_uri): "+
					"every context item included or considered with its include mode, score and why (always, added, include_score, top_n; "+
					"over_budget, below_min_score, beyond_top_n, not_in_top_k, removed), how agent items were searched, and the memory parts chosen. "+
					"The newest %d are kept; the messages themselves are not.", requestsPage, memory.RequestRetention)),
				mcpgo.WithTemplateMIMEType("application/json")),
			Handler: func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
				conv, err := templateArg(req, "conversation", true)
				if err != nil {
					return nil, err
				}
				return readRequests(ctx, mem, log, req.Params.URI, conv, templateValue(req, "cursor"))
			},
		},
		{
			Template: mcpgo.NewResourceTemplate(itemTemplate, "context-item",
				mcpgo.WithTemplateDescription("One context item (Markdown): its type, include mode, priority, description and whole text."),
				mcpgo.WithTemplateMIMEType("text/markdown")),
			Handler: func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
				name, err := templateArg(req, "name", true)
				if err != nil {
					return nil, err
				}
				it, err := mem.ContextItem(name)
				if err != nil {
					return nil, resourceError(log, req.Params.URI, err)
				}
				text := fmt.Sprintf("# %s (%s)\n\nInclude: %s · priority %03d\n\n", it.Name, it.Type, it.Include, it.Priority)
				if it.Description != "" {
					text += it.Description + "\n\n"
				}
				text += it.Text + "\n"
				return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: req.Params.URI, MIMEType: "text/markdown", Text: text}}, nil
			},
		},
	}
}

func readRequests(ctx context.Context, mem ItemsMemory, log *slog.Logger, uri, conv, cursor string) ([]mcpgo.ResourceContents, error) {
	off, err := decodeCursor("requests", cursor, fingerprint(conv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", uri, err)
	}
	recs, err := mem.Requests(ctx, conv)
	if err != nil {
		return nil, resourceError(log, uri, err)
	}
	items, next := page(recs, off, requestsPage, "requests", fingerprint(conv))
	body := requestList{ConversationID: conv, Requests: items, Total: len(recs)}
	if next != "" {
		body.NextURI = RequestsURI(conv) + "?cursor=" + url.QueryEscape(next)
	}
	return jsonContents(uri, body)
}
