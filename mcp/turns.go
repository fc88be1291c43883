package mcp

import (
	"context"
	"fmt"
	"log/slog"
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

// recallLinks returns a resource_link per turn a recall cut or left out
// for its length (its truncation references): those turns' whole text is
// not in the context, and a host can open it without another tool call.
// The turns the context quotes whole get no link: a host may hand every
// link to the model as text, and a link per quoted turn cost about as many
// tokens again as the budget the recall kept to.
func recallLinks(res memory.RecallResult) []mcpgo.Content {
	var out []mcpgo.Content
	for _, r := range res.TruncationRefs {
		if len(out) == maxTurnLinks {
			break
		}
		desc := fmt.Sprintf("Cut in the recalled context: %d tokens left out", r.Tokens)
		if r.Turns > 1 {
			desc = fmt.Sprintf("Left out of the recalled context with the %d turns after it: %d tokens", r.Turns-1, r.Tokens)
		}
		out = append(out, turnLink(r.ConversationID, r.Turn, desc))
	}
	return out
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
