package mcp

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/memory"
)

// maxCompletions is the most values one completion/complete answer may
// carry (MCP spec).
const maxCompletions = 100

// completer answers completion/complete from what memory holds. It plugs
// into mcp-go's PromptCompletionProvider and ResourceCompletionProvider
// (server.WithCompletions declares the capability). An unknown prompt,
// template or argument gets an empty list, never an error: hosts ask for
// every argument box they show.
type completer struct {
	mem Memory
	log *slog.Logger
}

// CompletePromptArgument completes the recall prompt's topic (the tags of
// the conversation named in context, or the default) and every prompt's
// conversation_id.
func (c completer) CompletePromptArgument(ctx context.Context, prompt string, arg mcpgo.CompleteArgument, cc mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	switch {
	case prompt == "recall" && arg.Name == "topic":
		return c.tags(ctx, cc.Arguments["conversation_id"], arg.Value)
	case (prompt == "recall" || prompt == "summarize_session") && arg.Name == "conversation_id":
		return c.conversations(ctx, arg.Value)
	}
	return &mcpgo.Completion{Values: []string{}}, nil
}

// CompleteResourceArgument completes the variables of the resource
// templates: {conversation}, {tag} (within the conversation already chosen)
// and {turn} (most recent first).
func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcpgo.CompleteArgument, cc mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	conv := cc.Arguments["conversation"]
	switch {
	case arg.Name == "conversation" && (uri == domainsQueryTemplate || uri == conversationDomainTemplate || uri == turnTemplate):
		return c.conversations(ctx, arg.Value)
	case arg.Name == "tag" && uri == domainTemplate:
		return c.tags(ctx, "", arg.Value)
	case arg.Name == "tag" && uri == conversationDomainTemplate:
		return c.tags(ctx, conv, arg.Value)
	case arg.Name == "turn" && uri == turnTemplate:
		return c.turns(ctx, conv, arg.Value)
	case arg.Name == "conversation" && uri == requestsTemplate:
		return c.conversations(ctx, arg.Value)
	case arg.Name == "name" && uri == itemTemplate:
		return c.items(ctx, arg.Value)
	}
	return &mcpgo.Completion{Values: []string{}}, nil
}

// usage is one completion candidate and how much memory uses it.
type usage struct {
	value string
	uses  int
}

func (c completer) tags(ctx context.Context, conv, prefix string) (*mcpgo.Completion, error) {
	if memory.ValidateConversationID(conv) != nil && conv != "" {
		return rank(nil, prefix), nil // a half-typed id in context completes nothing
	}
	st, err := c.mem.Status(ctx, conv)
	if err != nil {
		return c.fail(err)
	}
	cands := make([]usage, len(st.Tags))
	for i, t := range st.Tags {
		cands[i] = usage{t.Tag, t.Turns}
	}
	return rank(cands, prefix), nil
}

func (c completer) conversations(ctx context.Context, prefix string) (*mcpgo.Completion, error) {
	convs, err := c.mem.Conversations(ctx)
	if err != nil {
		return c.fail(err)
	}
	cands := make([]usage, len(convs))
	for i, cv := range convs {
		cands[i] = usage{cv.ID, cv.Turns}
	}
	return rank(cands, prefix), nil
}

func (c completer) turns(ctx context.Context, conv, prefix string) (*mcpgo.Completion, error) {
	if conv == "" {
		conv = c.mem.DefaultConversation()
	}
	convs, err := c.mem.Conversations(ctx)
	if err != nil {
		return c.fail(err)
	}
	var cands []usage
	for _, cv := range convs {
		if cv.ID == conv {
			cands = make([]usage, cv.Turns)
			for i := range cands {
				cands[i] = usage{"t" + strconv.Itoa(i+1), i + 1} // the latest ranks first
			}
		}
	}
	return rank(cands, prefix), nil
}

// items completes context item names, the lowest priority number first.
func (c completer) items(ctx context.Context, prefix string) (*mcpgo.Completion, error) {
	res, err := c.mem.ContextItems(ctx, "")
	if err != nil {
		return c.fail(err)
	}
	cands := make([]usage, len(res.Items))
	for i, it := range res.Items {
		cands[i] = usage{it.Name, 1000 - it.Priority}
	}
	return rank(cands, prefix), nil
}

// fail keeps the message of the caller's mistakes and hides faults.
func (c completer) fail(err error) (*mcpgo.Completion, error) {
	if errors.Is(err, memory.ErrInvalid) || errors.Is(err, memory.ErrNotFound) {
		return &mcpgo.Completion{Values: []string{}}, nil
	}
	if errors.Is(err, memory.ErrClosed) {
		return nil, errors.New("completion failed: the memory store is closed (the server is shutting down)")
	}
	c.log.Error("completion failed", "err", err)
	return nil, errors.New("completion failed: internal error (details in the server log)")
}

// rank orders candidates for a typed value: prefix matches first, then
// subsequence ("fuzzy") matches, each most-used first (then by name); case
// is ignored. At most maxCompletions values; Total counts every match.
func rank(cands []usage, typed string) *mcpgo.Completion {
	typed = strings.ToLower(strings.TrimSpace(typed))
	var prefix, fuzzy []usage
	for _, u := range cands {
		v := strings.ToLower(u.value)
		switch {
		case strings.HasPrefix(v, typed):
			prefix = append(prefix, u)
		case subsequence(typed, v):
			fuzzy = append(fuzzy, u)
		}
	}
	byUse := func(a, b usage) int {
		return cmp.Or(cmp.Compare(b.uses, a.uses), cmp.Compare(a.value, b.value))
	}
	slices.SortFunc(prefix, byUse)
	slices.SortFunc(fuzzy, byUse)
	all := append(prefix, fuzzy...)
	out := &mcpgo.Completion{Values: make([]string, 0, min(len(all), maxCompletions)), Total: len(all), HasMore: len(all) > maxCompletions}
	for _, u := range all[:min(len(all), maxCompletions)] {
		out.Values = append(out.Values, u.value)
	}
	return out
}

// subsequence reports whether every rune of p appears in s in order.
func subsequence(p, s string) bool {
	for _, r := range p {
		i := strings.IndexRune(s, r)
		if i < 0 {
			return false
		}
		s = s[i+len(string(r)):]
	}
	return true
}
