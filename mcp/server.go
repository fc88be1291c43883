package mcp

import (
	"context"
	"log/slog"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Memory is what the MCP surface needs of the memory engine. *memory.Store
// implements it.
type Memory interface {
	Ingest(ctx context.Context, req memory.IngestRequest) (memory.IngestResult, error)
	Recall(ctx context.Context, req memory.RecallRequest) (memory.RecallResult, error)
	Expand(ctx context.Context, req memory.ExpandRequest) (memory.ExpandResult, error)
	Collapse(ctx context.Context, req memory.CollapseRequest) (memory.CollapseResult, error)
	FindQuote(ctx context.Context, req memory.FindQuoteRequest) (memory.FindQuoteResult, error)
	Status(ctx context.Context, conversationID string) (memory.Status, error)
	Domain(ctx context.Context, conversationID, tag string) (memory.Domain, error)
	Conversations(ctx context.Context) ([]memory.ConversationInfo, error)
	Forget(ctx context.Context, req memory.ForgetRequest) (memory.ForgetResult, error)
	// Turn, Watch and DefaultConversation serve turn links, subscriptions
	// and completions (turns.go, subscriptions.go, completions.go).
	Turn(ctx context.Context, conversationID, turnID string) (memory.Turn, error)
	// ReadLog reads a byte range of a master log back (read_log).
	ReadLog(ctx context.Context, req memory.ReadLogRequest) (memory.ReadLogResult, error)
	Watch(ctx context.Context) <-chan memory.Change
	DefaultConversation() string
	// Context items and request records (items.go).
	ItemsMemory
}

var _ Memory = (*memory.Store)(nil)

// Options configure NewServer. The zero value is usable.
type Options struct {
	// Name and Version are reported in the initialize answer (defaults
	// "vc-mcp" and "dev").
	Name, Version string
	// Logger receives request logs and internal error details (default: discard).
	Logger *slog.Logger
	// Sampling offers MCP sampling (the client's model) to the engine's LLM
	// seams; see Sampler.
	Sampling bool
	// ServerOptions are appended to the server's own options. They must not
	// replace the hooks (server.WithHooks): subscriptions depend on them.
	ServerOptions []mcpserver.ServerOption
}

// Instructions is the initialize answer's instructions: when to call what.
const Instructions = `vc-mcp is your long-term memory of this conversation and earlier ones. Use it on every turn:
1. At the start of a turn, call recall_context with the user's message. Its first content block is the relevant past context (topic summaries and exact past turns); use it as if you remembered it.
2. After answering, call compact_context with the new exchange (the user's message and your answer; tool calls and results too if any). Resending older messages is harmless: duplicates are not stored twice.
3. Keep using the same conversation_id for one chat or one project the user keeps coming back to; omit it to use the default memory space. Use recall_context with scope "all" when the user refers to another chat.
4. Before you ever say you do not remember something, call find_quote with the words or names involved (and since/until or speaker if known). It searches every stored original turn.
5. To read a whole topic, call expand_topic (depth "segments" for summaries, "full" for the original turns); call collapse_topic when you are done with it to free budget. domain_status lists the topics and what memory holds.
6. recall_context's answer may start with context items: rules and references the user configured. Follow the rules. When the user asks to use or drop one in this conversation, call add_context_item or remove_context_item (list_context_items shows them).`

// NewServer builds the MCP server over mem: six tools, the domains and turn
// resources (subscribable), two prompts, and completions for the prompts'
// and templates' arguments.
func NewServer(mem Memory, opts Options) *mcpserver.MCPServer {
	s, _ := newServer(mem, opts)
	return s
}

func newServer(mem Memory, opts Options) (*mcpserver.MCPServer, *subscriptions) {
	if opts.Name == "" {
		opts.Name = "vc-mcp"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	subs := newSubscriptions(mem, log)
	hooks := &mcpserver.Hooks{}
	subs.hook(hooks)
	sopts := []mcpserver.ServerOption{
		mcpserver.WithToolCapabilities(false),
		mcpserver.WithResourceCapabilities(true, true), // subscribe, listChanged (subscriptions.go)
		mcpserver.WithPromptCapabilities(false),
		mcpserver.WithCompletions(),
		mcpserver.WithPromptCompletionProvider(completer{mem, log}),
		mcpserver.WithResourceCompletionProvider(completer{mem, log}),
		mcpserver.WithHooks(hooks),
		mcpserver.WithLogging(),
		mcpserver.WithRecovery(),
		mcpserver.WithResourceRecovery(),
		mcpserver.WithInstructions(Instructions),
		mcpserver.WithTitle("Virtual context memory"),
		mcpserver.WithLogger(log),
	}
	s := mcpserver.NewMCPServer(opts.Name, opts.Version, append(sopts, opts.ServerOptions...)...)
	if opts.Sampling {
		s.EnableSampling()
	}
	s.AddTools(tools(mem, log)...)
	for _, r := range resources(mem, log) {
		s.AddResource(r.Resource, r.Handler)
	}
	s.AddResourceTemplates(strictTemplates(resourceTemplates(mem, log)...)...)
	s.AddResourceTemplates(strictTemplates(turnResourceTemplate(mem, log))...)
	s.AddResourceTemplates(strictTemplates(itemResourceTemplates(mem, log)...)...)
	for _, p := range prompts(mem, log) {
		s.AddPrompt(p.Prompt, p.Handler)
	}
	subs.srv = s
	if mem != nil { // nil: a server that only describes itself (the stdio bridge's initialize answer)
		go subs.run(mem.Watch(context.Background())) // ends when the store closes
	}
	return s, subs
}

// annotations sets all four hints explicitly: mcp-go's defaults
// (destructive, open world) would otherwise be published.
func annotations(title string, readOnly, destructive, idempotent bool) mcpgo.ToolOption {
	return mcpgo.WithToolAnnotation(mcpgo.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    ptr(readOnly),
		DestructiveHint: ptr(destructive),
		IdempotentHint:  ptr(idempotent),
		OpenWorldHint:   ptr(false),
	})
}
