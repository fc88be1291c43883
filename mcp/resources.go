package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Resource URIs. The templates are disjoint: mcp-go tries templates in map
// order, so no URI may match two of them.
const (
	domainsURI                 = "virtualcontext://domains"
	conversationsURI           = "virtualcontext://conversations"
	domainsQueryTemplate       = "virtualcontext://domains{?conversation,cursor}"
	conversationsPageTemplate  = "virtualcontext://conversations{?cursor}"
	domainTemplate             = "virtualcontext://domains/{tag}"
	conversationDomainTemplate = "virtualcontext://conversations/{conversation}/domains/{tag}"
)

// domainList is the JSON body of virtualcontext://domains.
type domainList struct {
	ConversationID string             `json:"conversation_id"`
	Tags           []memory.TagStatus `json:"tags"`
	// TotalTags counts every tag; Tags holds at most maxResourceItems.
	TotalTags int `json:"total_tags"`
	// NextURI, when set, reads the next page.
	NextURI string `json:"next_uri,omitempty"`
}

// conversationList is the JSON body of virtualcontext://conversations.
type conversationList struct {
	Conversations []memory.ConversationInfo `json:"conversations"`
	Total         int                       `json:"total"`
	NextURI       string                    `json:"next_uri,omitempty"`
}

func resources(mem Memory, log *slog.Logger) []mcpserver.ServerResource {
	return []mcpserver.ServerResource{
		{
			Resource: mcpgo.NewResource(domainsURI, "domains",
				mcpgo.WithResourceDescription("Every topic tag of the default conversation with its counts (JSON). "+
					"Add ?conversation=ID for another conversation."),
				mcpgo.WithMIMEType("application/json")),
			Handler: func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
				return readDomains(ctx, mem, log, req.Params.URI, "")
			},
		},
		{
			Resource: mcpgo.NewResource(conversationsURI, "conversations",
				mcpgo.WithResourceDescription("Every conversation (memory space) in the store with turn and token counts (JSON), in pages of 200 (next_uri)."),
				mcpgo.WithMIMEType("application/json")),
			Handler: func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
				return readConversations(ctx, mem, log, req.Params.URI, "")
			},
		},
	}
}

func resourceTemplates(mem Memory, log *slog.Logger) []mcpserver.ServerResourceTemplate {
	return []mcpserver.ServerResourceTemplate{
		{
			Template: mcpgo.NewResourceTemplate(domainsQueryTemplate, "domains-of-conversation",
				mcpgo.WithTemplateDescription("Every topic tag of one conversation with its counts (JSON), in pages of 200 (next_uri)."),
				mcpgo.WithTemplateMIMEType("application/json")),
			Handler: func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
				conv, err := templateArg(req, "conversation", false)
				if err != nil {
					return nil, err
				}
				return readDomainsPage(ctx, mem, log, req.Params.URI, conv, templateValue(req, "cursor"))
			},
		},
		{
			Template: mcpgo.NewResourceTemplate(conversationsPageTemplate, "conversations-page",
				mcpgo.WithTemplateDescription("A further page of virtualcontext://conversations (follow its next_uri)."),
				mcpgo.WithTemplateMIMEType("application/json")),
			Handler: func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
				return readConversations(ctx, mem, log, req.Params.URI, templateValue(req, "cursor"))
			},
		},
		{
			Template: mcpgo.NewResourceTemplate(domainTemplate, "domain",
				mcpgo.WithTemplateDescription("One topic of the default conversation (Markdown): description, tag summary and segment summaries."),
				mcpgo.WithTemplateMIMEType("text/markdown")),
			Handler: func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
				return readDomain(ctx, mem, log, req, "")
			},
		},
		{
			Template: mcpgo.NewResourceTemplate(conversationDomainTemplate, "domain-of-conversation",
				mcpgo.WithTemplateDescription("One topic of one conversation (Markdown): description, tag summary and segment summaries."),
				mcpgo.WithTemplateMIMEType("text/markdown")),
			Handler: func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
				conv, err := templateArg(req, "conversation", true)
				if err != nil {
					return nil, err
				}
				return readDomain(ctx, mem, log, req, conv)
			},
		},
	}
}

// templateArg reads a URI template variable. mcp-go fills them in as
// []string, and an empty path segment matches with no value.
func templateArg(req mcpgo.ReadResourceRequest, name string, required bool) (string, error) {
	var v string
	switch a := req.Params.Arguments[name].(type) {
	case []string:
		if len(a) > 0 {
			v = a[0]
		}
	case string:
		v = a
	}
	if v == "" && required {
		if name == "tag" {
			return "", fmt.Errorf("%s: invalid argument: tag is empty; use e.g. %s", req.Params.URI, strings.Replace(domainTemplate, "{tag}", "<tag from virtualcontext://domains>", 1))
		}
		return "", fmt.Errorf("%s: invalid argument: %s is empty", req.Params.URI, name)
	}
	if name == "conversation" {
		if err := checkConversationID(v); err != nil {
			return "", fmt.Errorf("%s: %w", req.Params.URI, err)
		}
	}
	return v, nil
}

func readDomains(ctx context.Context, mem Memory, log *slog.Logger, uri, conv string) ([]mcpgo.ResourceContents, error) {
	return readDomainsPage(ctx, mem, log, uri, conv, "")
}

func readDomainsPage(ctx context.Context, mem Memory, log *slog.Logger, uri, conv, cursor string) ([]mcpgo.ResourceContents, error) {
	off, err := decodeCursor("domains", cursor, fingerprint(conv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", uri, err)
	}
	st, err := mem.Status(ctx, conv)
	if err != nil {
		return nil, resourceError(log, uri, err)
	}
	tags, next := page(st.Tags, off, maxResourceItems, "domains", fingerprint(conv))
	body := domainList{ConversationID: st.ConversationID, Tags: tags, TotalTags: len(st.Tags)}
	if next != "" {
		body.NextURI = domainsURI + "?conversation=" + url.QueryEscape(st.ConversationID) + "&cursor=" + next
	}
	return jsonContents(uri, body)
}

func readConversations(ctx context.Context, mem Memory, log *slog.Logger, uri, cursor string) ([]mcpgo.ResourceContents, error) {
	off, err := decodeCursor("conversations", cursor, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", uri, err)
	}
	convs, err := mem.Conversations(ctx)
	if err != nil {
		return nil, resourceError(log, uri, err)
	}
	items, next := page(convs, off, maxResourceItems, "conversations", 0)
	body := conversationList{Conversations: items, Total: len(convs)}
	if next != "" {
		body.NextURI = conversationsURI + "?cursor=" + next
	}
	return jsonContents(uri, body)
}

// templateValue is an optional URI template variable ("" when absent).
func templateValue(req mcpgo.ReadResourceRequest, name string) string {
	switch a := req.Params.Arguments[name].(type) {
	case []string:
		if len(a) > 0 {
			return a[0]
		}
	case string:
		return a
	}
	return ""
}

func readDomain(ctx context.Context, mem Memory, log *slog.Logger, req mcpgo.ReadResourceRequest, conv string) ([]mcpgo.ResourceContents, error) {
	tag, err := templateArg(req, "tag", true)
	if err != nil {
		return nil, err
	}
	d, err := mem.Domain(ctx, conv, tag)
	if err != nil {
		return nil, resourceError(log, req.Params.URI, err)
	}
	return []mcpgo.ResourceContents{mcpgo.TextResourceContents{
		URI: req.Params.URI, MIMEType: "text/markdown", Text: renderDomain(d),
	}}, nil
}

func jsonContents(uri string, v any) ([]mcpgo.ResourceContents, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%s: encode: %w", uri, err)
	}
	return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

// resourceError keeps memory's message for the caller's mistakes and hides
// the detail of faults (logged instead).
func resourceError(log *slog.Logger, uri string, err error) error {
	if errors.Is(err, memory.ErrInvalid) || errors.Is(err, memory.ErrNotFound) || errors.Is(err, memory.ErrTooLarge) {
		return fmt.Errorf("%s: %w", uri, err)
	}
	if errors.Is(err, memory.ErrStorage) {
		// A disk or a damaged vc.db: its message says what to do.
		log.Error("resource read failed", "uri", uri, "err", err)
		return fmt.Errorf("%s: %w", uri, err)
	}
	log.Error("resource read failed", "uri", uri, "err", err)
	return fmt.Errorf("%s: internal error (details in the server log)", uri)
}

func renderDomain(d memory.Domain) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nConversation: %s\n\n", d.Tag, d.ConversationID)
	if d.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", d.Description)
	}
	st := d.Status
	fmt.Fprintf(&b, "%d turns in %d segments; %d tokens in full, %d as summaries; working-set depth %s; first seen %s, last seen %s.\n\n",
		st.Turns, st.Segments, st.FullTokens, st.SummaryTokens, orDash(string(st.Depth)), day(st.FirstSeen), day(st.LastSeen))
	b.WriteString("## Summary\n\n")
	if d.Summary != "" {
		b.WriteString(d.Summary + "\n\n")
	} else {
		b.WriteString("(no tag summary yet)\n\n")
	}
	b.WriteString("## Segments\n")
	if len(d.Segments) == 0 {
		b.WriteString("\n(no compacted segments yet)\n")
	}
	for _, s := range d.Segments {
		fmt.Fprintf(&b, "\n### %s (%d turns, %s to %s)\n\n", s.ID, s.Turns, day(s.Start), day(s.End))
		if len(s.Tags) > 0 {
			fmt.Fprintf(&b, "Tags: %s\n\n", strings.Join(s.Tags, ", "))
		}
		if s.Summary != "" {
			b.WriteString(s.Summary + "\n")
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
