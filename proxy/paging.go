package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory"
)

// The paging tools offered to the model. Their names carry a vc_ prefix so
// they never collide with the client's own tools (or with vc-mcp's MCP
// tools, which a client may also have).
const (
	toolFindQuote = "vc_find_quote"
	toolExpand    = "vc_expand_topic"
	toolCollapse  = "vc_collapse_topic"
	toolReadLog   = "vc_read_log"
)

func isPagingTool(name string) bool {
	return name == toolFindQuote || name == toolExpand || name == toolCollapse || name == toolReadLog
}

var pagingTools = []toolDef{
	{Name: toolFindQuote, Description: "Search every stored turn of this conversation for exact words, names or numbers. Use it before saying you do not remember something.",
		Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"words to look for"},"max_results":{"type":"integer","description":"1-20, default 5"}},"required":["query"]}`)},
	{Name: toolExpand, Description: "Read a stored topic of this conversation in more detail: depth segments gives its summaries, full its original turns.",
		Schema: json.RawMessage(`{"type":"object","properties":{"tag":{"type":"string","description":"a topic tag from the virtual-context block"},"depth":{"type":"string","enum":["segments","full"]}},"required":["tag"]}`)},
	{Name: toolCollapse, Description: "Put a topic expanded earlier back to its summary, to free room.",
		Schema: json.RawMessage(`{"type":"object","properties":{"tag":{"type":"string"},"depth":{"type":"string","enum":["summary","none"]}},"required":["tag"]}`)},
	{Name: toolReadLog, Description: "Read back, verbatim, turns left out or cut for the budget: pass START and END from a [truncated: ... bytes START-END] reference in the virtual-context block.",
		Schema: json.RawMessage(`{"type":"object","properties":{"start":{"type":"integer","minimum":0},"end":{"type":"integer","minimum":1}},"required":["start","end"]}`)},
}

// onlyPaging reports whether calls are all paging calls (and there is one).
func onlyPaging(calls []toolCall) bool {
	for _, c := range calls {
		if !isPagingTool(c.Name) {
			return false
		}
	}
	return len(calls) > 0
}

// pagingTokens bounds one paging answer.
const pagingTokens = 3000

// answer runs one paging call against memory. A bad argument or a missing
// topic is an answer the model can act on, not a failure of the request.
func answer(ctx context.Context, mem Memory, conv string, c toolCall) toolAnswer {
	var args struct {
		Query      string `json:"query"`
		MaxResults int    `json:"max_results"`
		Tag        string `json:"tag"`
		Depth      string `json:"depth"`
		Start      *int64 `json:"start"`
		End        *int64 `json:"end"`
	}
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return toolAnswer{call: c, text: "arguments must be a JSON object: " + err.Error(), isError: true}
	}
	text, err := func() (string, error) {
		switch c.Name {
		case toolFindQuote:
			if strings.TrimSpace(args.Query) == "" {
				return "", fmt.Errorf("%w: query is required", memory.ErrInvalid)
			}
			n := args.MaxResults
			if n <= 0 || n > 20 {
				n = 5
			}
			res, err := mem.FindQuote(ctx, memory.FindQuoteRequest{ConversationID: conv, Query: args.Query, MaxResults: n})
			if err != nil {
				return "", err
			}
			if len(res.Quotes) == 0 {
				return "No stored turn matches " + fmt.Sprintf("%q", args.Query) + ".", nil
			}
			var b strings.Builder
			for _, q := range res.Quotes {
				fmt.Fprintf(&b, "[%s %s %s] %s (tags: %s)\n", q.TurnID, q.Role, q.Timestamp.Format("2006-01-02"), q.Excerpt, strings.Join(q.Tags, ", "))
			}
			return b.String(), nil
		case toolExpand:
			d := memory.DepthFull
			if args.Depth == string(memory.DepthSegments) {
				d = memory.DepthSegments
			}
			res, err := mem.Expand(ctx, memory.ExpandRequest{ConversationID: conv, Tag: args.Tag, Depth: d, MaxTokens: pagingTokens})
			if err != nil {
				return "", err
			}
			if res.Text == "" {
				return "Topic " + res.Tag + " holds no text.", nil
			}
			return res.Text, nil
		case toolCollapse:
			d := memory.DepthSummary
			if args.Depth == string(memory.DepthNone) {
				d = memory.DepthNone
			}
			res, err := mem.Collapse(ctx, memory.CollapseRequest{ConversationID: conv, Tag: args.Tag, Depth: d})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Topic %s collapsed to %s; %d tokens freed.", res.Tag, res.Depth, res.TokensFreed), nil
		case toolReadLog:
			if args.Start == nil || args.End == nil {
				return "", fmt.Errorf("%w: start and end are required (the byte range of a [truncated: ...] reference)", memory.ErrInvalid)
			}
			res, err := mem.ReadLog(ctx, memory.ReadLogRequest{ConversationID: conv, Start: *args.Start, End: *args.End})
			if err != nil {
				return "", err
			}
			return res.Text, nil
		}
		return "", fmt.Errorf("%w: unknown tool %s", memory.ErrInvalid, c.Name)
	}()
	if err != nil {
		if errors.Is(err, memory.ErrInvalid) || errors.Is(err, memory.ErrNotFound) {
			return toolAnswer{call: c, text: err.Error(), isError: true}
		}
		return toolAnswer{call: c, text: "memory is unavailable for this call; answer without it", isError: true}
	}
	return toolAnswer{call: c, text: text}
}
