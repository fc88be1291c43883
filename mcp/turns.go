package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/yosida95/uritemplate/v3"

	"github.com/vc-mcp/vc-mcp/memory"
)

// turnTemplate names one stored message. It is disjoint from
// conversationDomainTemplate (a literal "turns" against "domains").
const turnTemplate = "virtualcontext://conversations/{conversation}/turns/{turn}"

var turnURITemplate = uritemplate.MustNew(turnTemplate)

// turnURI is the resource URI of a turn; the template expansion
// percent-encodes what a path segment may not hold (":" in "proj:x").
func turnURI(conv, turn string) string {
	u, err := turnURITemplate.Expand(uritemplate.Values{
		"conversation": uritemplate.String(conv), "turn": uritemplate.String(turn),
	})
	if err != nil { // cannot happen with string values
		return ""
	}
	return u
}

func turnResourceTemplate(mem Memory, log *slog.Logger) mcpserver.ServerResourceTemplate {
	return mcpserver.ServerResourceTemplate{
		Template: mcpgo.NewResourceTemplate(turnTemplate, "turn",
			mcpgo.WithTemplateDescription("One stored message read back verbatim from the master log (JSON): text, role, speaker, timestamp, tags, "+
				"segment and its log byte range. find_quote and recall_context link the turns they cite here."),
			mcpgo.WithTemplateMIMEType("application/json")),
		Handler: func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			conv, err := templateArg(req, "conversation", true)
			if err != nil {
				return nil, err
			}
			id, err := templateArg(req, "turn", true)
			if err != nil {
				return nil, err
			}
			t, err := mem.Turn(ctx, conv, id)
			if err != nil {
				return nil, resourceError(log, req.Params.URI, err)
			}
			if t.Tags == nil {
				t.Tags = []string{}
			}
			return jsonContents(req.Params.URI, t)
		},
	}
}

// maxTurnLinks bounds the resource links one tool result carries.
const maxTurnLinks = 50

// quoteLinks returns a resource_link per quoted turn.
func quoteLinks(res memory.FindQuoteResult) []mcpgo.Content {
	var out []mcpgo.Content
	for _, q := range res.Quotes {
		if len(out) == maxTurnLinks {
			break
		}
		who := q.Role
		if q.Speaker != "" {
			who = q.Speaker + " (" + q.Role + ")"
		}
		out = append(out, turnLink(q.ConversationID, q.TurnID,
			fmt.Sprintf("%s, %s: %s", who, q.Timestamp.UTC().Format(time.RFC3339), clipRunes(q.Excerpt, 160))))
	}
	return out
}

// recallLinks returns a resource_link per turn a recall included verbatim.
// Turn ids are "t12" when one conversation was searched and "conv/t12" when
// several were; a bare id under scope "all" means the store held a single
// conversation, which is looked up (and no links are made if that no
// longer holds).
func recallLinks(ctx context.Context, mem Memory, req memory.RecallRequest, res memory.RecallResult) []mcpgo.Content {
	var out []mcpgo.Content
	bare := ""
	for _, id := range res.TurnIDs {
		if len(out) == maxTurnLinks {
			break
		}
		conv, turn := "", id
		if i := strings.LastIndex(id, "/"); i >= 0 {
			conv, turn = id[:i], id[i+1:]
		} else {
			if bare == "" {
				bare = bareConversation(ctx, mem, req)
			}
			if bare == "-" {
				continue
			}
			conv = bare
		}
		out = append(out, turnLink(conv, turn, "Quoted verbatim in the recalled context"))
	}
	return out
}

// bareConversation is the conversation of an unprefixed recalled turn id,
// or "-" when it cannot be told.
func bareConversation(ctx context.Context, mem Memory, req memory.RecallRequest) string {
	if req.Scope != memory.ScopeAll {
		if req.ConversationID != "" {
			return req.ConversationID
		}
		return mem.DefaultConversation()
	}
	convs, err := mem.Conversations(ctx)
	if err != nil || len(convs) != 1 {
		return "-"
	}
	return convs[0].ID
}

func turnLink(conv, turn, desc string) mcpgo.Content {
	return mcpgo.NewResourceLink(turnURI(conv, turn), fmt.Sprintf("turn %s of %s", turn, conv), desc, "application/json")
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// withLinks appends links after a result's existing content blocks, so
// clients that read the first block keep working.
func withLinks(res *mcpgo.CallToolResult, links []mcpgo.Content) *mcpgo.CallToolResult {
	res.Content = append(res.Content, links...)
	return res
}
