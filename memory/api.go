package memory

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// Sentinel errors. Every error returned by Store wraps at most one of them,
// with a message that says what to change. ErrInvalid, ErrNotFound and
// ErrTooLarge are the caller's mistakes (tool results with isError); the rest
// are faults.
var (
	// ErrInvalid: an argument is malformed or out of range.
	ErrInvalid = errors.New("invalid argument")
	// ErrNotFound: the conversation or tag does not exist.
	ErrNotFound = errors.New("not found")
	// ErrTooLarge: a message or batch exceeds a configured limit.
	ErrTooLarge = errors.New("too large")
	// ErrLocked: another process holds the data directory.
	ErrLocked = errors.New("data directory is locked")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store is closed")
)

// Embedder turns texts into L2-normalised vectors of equal length. It is the
// seam for semantic memory; a nil Embedder means lexical signals only.
// Implementations must be safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Tagger tags one turn. nil means the deterministic keyword tagger.
type Tagger interface {
	Tag(ctx context.Context, in tagging.Input) (tagging.Result, error)
}

// Summarizer writes Layer 1 and Layer 2 summaries. nil means extractive.
type Summarizer interface {
	Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error)
}

// TagSplitter splits an over-broad tag into narrower ones. It is optional
// (a model-backed tagger offers it); without one, tags stay whole.
type TagSplitter interface {
	SplitTag(ctx context.Context, in SplitRequest) (SplitDecision, error)
}

// SplitRequest describes a tag that covers too much of a conversation.
type SplitRequest struct {
	ConversationID string
	Tag            string
	// Count is the tag's turns, Total the conversation's tagged turns.
	Count, Total int
	// Vocabulary is the conversation's tags (new names must not collide).
	Vocabulary map[string]int
	// Samples are texts of turns carrying Tag, spread across time.
	Samples []string
}

// SplitDecision is a splitter's answer. Empty Subtags: keep the tag whole.
type SplitDecision struct {
	// Subtags are the new, narrower tags.
	Subtags []string
	// Aliases maps other names to a subtag, for later tagging.
	Aliases map[string]string
	// Assignments maps an index into SplitRequest.Samples to its subtag;
	// those turns gain the subtag (and keep the parent tag).
	Assignments map[int]string
}

// LLMUsage is one model's usage for a conversation.
type LLMUsage struct {
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	Calls        int     `json:"calls"`
	Failures     int     `json:"failures"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Readiness is optionally implemented by an Embedder, Tagger or Summarizer
// that may not be usable yet (a model still loading, a provider failing).
// Status reports whether it is ready and, if not, why.
type Readiness interface {
	Ready() (ok bool, reason string)
}

// Options configure Open. The zero value of every field means its default.
type Options struct {
	// Dir is the data directory (created if missing). Required.
	Dir string
	// DefaultConversation names the memory space used when a request has no
	// conversation id. Default "default".
	DefaultConversation string
	// ContextWindow is the client model's window in cl100k tokens (default 120000).
	ContextWindow int
	// SoftThreshold and HardThreshold are fractions of ContextWindow at which
	// compaction starts (defaults 0.70 and 0.85).
	SoftThreshold, HardThreshold float64
	// ProtectedTurns is how many most recent turns compaction never touches (default 6).
	ProtectedTurns int
	// MaxMessageBytes limits one message's content (default 1 MiB).
	MaxMessageBytes int
	// Replacement configures summary replacement (CompactMessages).
	Replacement ReplacementOptions
	// HintStyle is the topics hint's form ("" = HintAuto).
	HintStyle HintStyle
	// SummaryConcurrency bounds how many summaries compaction asks for at
	// once (default 4).
	SummaryConcurrency int
	// LockTimeout is how long Open waits for another process to release the
	// data directory (default 1s).
	LockTimeout time.Duration
	// WarmConversations is how many of the most recently written
	// conversations Open loads in the background, so that a host's first
	// recall after a start does not wait for its conversation to load
	// (servers set it; 0 loads none ahead).
	WarmConversations int
	// MaxOpenConversations caps the conversations kept loaded (each with
	// its master log open); the least recently used beyond it are unloaded
	// and loaded again on demand. 0 means 256.
	MaxOpenConversations int

	// ReadOnly serves Dir without writing to it (a backup, another user's
	// memory), from a snapshot: calls that would store, forget or change
	// anything fail with ErrReadOnly. A Dir this process may not write is
	// served so without it (NotWritable).
	ReadOnly bool

	// Shared, when set, holds the logs in a store shared with other
	// processes (PostgreSQL, package pgstore); Dir is then this process's
	// cache of it (see shared.go). Close closes it.
	Shared SharedLogs

	// noSync skips bbolt's fsync: only for tests that build large
	// fixtures, where durability is not what they check.
	noSync bool
	// turnFloor is, for Rebuild, how many turns each conversation had
	// committed in the vc.db it replaces: a log that holds fewer records
	// gets damaged placeholders up to there.
	turnFloor map[string]int
	// Embedder, Tagger and Summarizer are optional seams (nil = built-in).
	Embedder   Embedder
	Tagger     Tagger
	Summarizer Summarizer
	// KeywordTagging configures the built-in keyword tagger used when
	// Tagger is nil (nil = its defaults).
	KeywordTagging *tagging.KeywordOptions
	// Splitter, when set, splits tags that grow over-broad (see TagSplitter).
	Splitter TagSplitter
	// SplitMinTurns and SplitMaxShare say when a tag is over-broad: at
	// least SplitMinTurns turns (default 40) and more than SplitMaxShare of
	// the conversation's tagged turns (default 0.25).
	SplitMinTurns int
	SplitMaxShare float64
	// MaxSplitsPerTurn bounds the tags offered to the Splitter after one
	// compact_context call (default 1).
	MaxSplitsPerTurn int
	// ContextHintMaxTokens caps the topic hint at the end of an assembled
	// context (the list of topics on record); 0 = whatever budget is left.
	ContextHintMaxTokens int
	// Assembly is how a single conversation's recall is laid out:
	// AssemblyRelevance (default, "": ranked turns and topic summaries) or
	// AssemblyHierarchical (recent turns whole, earlier ones as per-message
	// summaries, the oldest as segment summaries; see hierarchy.go).
	Assembly string
	// Ranking overrides the rank-fusion weights (nil = DefaultRanking).
	Ranking *Ranking
	// TagPriority orders topics in assemblies (higher first); nil = all equal.
	TagPriority func(tag string) int
	// TagTTL gives a tag's time to live (per-tag TTL from tag rules): a
	// turn whose tags all have one, and which is older than each of them,
	// is forgotten (Forget, reason "ttl") when the store opens and every
	// TTLInterval after. nil = turns never expire.
	TagTTL func(tag string) (time.Duration, bool)
	// TTLInterval is how often expiry runs; default 1 hour.
	TTLInterval time.Duration
	// Scrubber replaces secrets before anything is stored; nil = the
	// built-in rule table (memory/scrub), scrub.Off() = no scrubbing.
	Scrubber Scrubber
	// Usage reports a conversation's LLM usage for Status; nil = none.
	Usage func(conversationID string) ([]LLMUsage, error)
	// ContextItems is the catalogue of rules and references (seed 002,
	// items.go); ContextSearch tunes how agent items are chosen.
	ContextItems  []ContextItem
	ContextSearch ContextSearch
	// Logger receives operational logs (never conversation text above Debug).
	Logger *slog.Logger
	// Now returns the current time (tests); default time.Now.
	Now func() time.Time

	// ttlManual, in tests, leaves expiry to explicit ExpireTTL calls.
	ttlManual bool
	// holdReconciler, in tests, keeps the reconciler from starting until
	// it is closed.
	holdReconciler <-chan struct{}
}

// Message is one message as a client sends it. Content is a JSON string or
// an array of content blocks (text, tool_use, tool_result, image...);
// ToolCalls holds OpenAI-style tool calls. Ingest normalises them.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	Timestamp  string          `json:"timestamp,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	// ID is the client's own id for the message, optional. A message with
	// an id is stored once per id, however often it is sent, and whatever
	// the stored turns say: the same words under a new id are a new
	// message. See Ingest.
	ID string `json:"id,omitempty"`
}

// StampedIDPrefix starts the ids a server gives, on a client's behalf,
// to the messages of a call the client sent without ids (the shared
// server's bridge, so that a call re-sent after a hand-over is stored
// exactly once). They make a retried call exact, but they are not the
// client's: a message under one is told from a resend by its content,
// as one without an id is.
const StampedIDPrefix = "bridge:"

// Progress reports long-running work: done of total, with a short message.
type Progress func(done, total int, message string)

// IngestRequest is one compact_context call.
type IngestRequest struct {
	ConversationID string
	Messages       []Message
	// Force compacts now, whatever the thresholds say.
	Force    bool
	Progress Progress
}

// IngestResult says what an Ingest did.
type IngestResult struct {
	ConversationID string `json:"conversation_id"`
	// Stored counts new turns appended to the master log.
	Stored int `json:"stored"`
	// Duplicates counts messages already stored (not stored again).
	Duplicates int `json:"duplicates"`
	// Skipped counts empty messages (e.g. tool-only turns): stored, not indexed.
	Skipped int `json:"skipped"`
	// TurnIDs are the ids of the stored turns, in order.
	TurnIDs []string `json:"turn_ids"`
	// Redacted counts secrets replaced by placeholders in this call's messages.
	Redacted int `json:"redacted"`
	// Tags are the tags assigned to the stored turns (deduplicated, in first-seen order).
	Tags []string `json:"tags"`
	// SegmentsCompacted and TokensFreed describe the compaction, if one ran.
	SegmentsCompacted int  `json:"segments_compacted"`
	TokensFreed       int  `json:"tokens_freed"`
	Compacted         bool `json:"compacted"`
	// ActiveTokens is the uncompacted conversation size after the call.
	ActiveTokens int `json:"active_tokens"`
	// TotalTurns is the conversation's turn count after the call.
	TotalTurns int `json:"total_turns"`
}

// Scope of a read.
type Scope string

const (
	ScopeConversation Scope = "conversation"
	ScopeAll          Scope = "all"
)

// RecallRequest is one recall_context call. It is read-only.
type RecallRequest struct {
	ConversationID string
	Message        string
	// MaxTokens bounds Text in cl100k tokens, headers included (default 2000).
	MaxTokens int
	Scope     Scope
	// Exclude holds the texts of messages the caller already sends the
	// model (the history a proxy forwards): stored turns with the same text
	// are left out, so the budget goes to what the model does not have.
	Exclude []string
	// Client is the client's model name (the proxy's request model) or its
	// MCP clientInfo name; with context_hint_style auto it picks the topics
	// hint's form (HintStyleFor).
	Client string
}

// RecallResult is the assembled context and why each piece is there.
type RecallResult struct {
	// Text is plain text that fits in MaxTokens cl100k tokens.
	Text   string `json:"-"`
	Tokens int    `json:"tokens"`
	// MatchedTags are the query's tags, best first.
	MatchedTags []string `json:"matched_tags"`
	Broad       bool     `json:"broad"`
	Temporal    bool     `json:"temporal"`
	// TurnIDs are the past turns included verbatim, in the order they appear.
	TurnIDs []string `json:"turn_ids"`
	// Summaries are the summaries included.
	Summaries []SummaryRef `json:"summaries"`
	// Breakdown says where the tokens went.
	Breakdown TokenBreakdown `json:"breakdown"`
	// Signals lists which ranking signals took part ("tags", "bm25", "dense", "time", "speaker", "recency", "names").
	Signals []string `json:"signals"`
	// Excluded counts the ranked turns left out because the caller
	// already holds them (RecallRequest.Exclude).
	Excluded int `json:"excluded,omitempty"`
	// Included says why each item is in the context (request transparency).
	Included []Inclusion `json:"included"`
	// CatchingUp is set while the search index is behind the stored turns
	// (after a restart, a rebuild or a failed write): results may be
	// partial, and Text says so. IndexedThrough is then the last turn
	// searchable (one conversation only).
	CatchingUp     bool   `json:"catching_up,omitempty"`
	IndexedThrough string `json:"indexed_through,omitempty"`
	// ContextItems are the context items included (first, in assembly
	// order) and those considered but left out, each with its reason;
	// ItemSearch says how agent items were searched.
	ContextItems []ItemDecision `json:"context_items"`
	ItemSearch   ItemSearch     `json:"item_search"`
	// RequestID names this recall's record in the conversation's request
	// history (virtualcontext://conversations/{conversation}/requests).
	RequestID string `json:"request_id,omitempty"`
	// HintStyle is the topics hint's form for this client ("short" or
	// "dashboard"), whether or not a hint fit in the budget.
	HintStyle HintStyle `json:"hint_style,omitempty"`
	// TruncationRefs point at the turns cut (or left out) for the budget;
	// the text carries the same references (read_log reads them back).
	TruncationRefs []TruncationRef `json:"truncation_refs"`
}

// Include modes, after how an item enters a context: pinned ("always":
// standing rules), paged in by the model ("manual": topics it expanded),
// or chosen for this message by relevance ("agent").
const (
	IncludeAlways = "always"
	IncludeManual = "manual"
	IncludeAgent  = "agent"
)

// Inclusion is one item of an assembled context and why it is there.
type Inclusion struct {
	ID   string `json:"id"`   // turn id ("t12"), segment id ("s3") or tag
	Kind string `json:"kind"` // "rule", "turn", "segment" or "tag"
	Mode string `json:"mode"` // IncludeAlways, IncludeManual or IncludeAgent
	Tag  string `json:"tag,omitempty"`
}

// SummaryRef names a summary used in an assembly.
type SummaryRef struct {
	Kind           string `json:"kind"` // "segment", "tag" or "message" (a per-message summary)
	ID             string `json:"id"`
	Tag            string `json:"tag"`
	ConversationID string `json:"conversation_id"`
	Tokens         int    `json:"tokens"`
}

// TokenBreakdown splits an assembly's tokens by part.
type TokenBreakdown struct {
	Turns     int `json:"turns"`
	Summaries int `json:"summaries"`
	Headers   int `json:"headers"`
	TopicHint int `json:"topic_hint"`
	// ContextItems counts the context items' section (header included).
	ContextItems int `json:"context_items"`
	Budget       int `json:"budget"`
}

// Depth of a topic in the working set.
type Depth string

const (
	DepthNone     Depth = "none"
	DepthSummary  Depth = "summary"
	DepthSegments Depth = "segments"
	DepthFull     Depth = "full"
)

// ExpandRequest is one expand_topic call.
type ExpandRequest struct {
	ConversationID string
	Tag            string
	Depth          Depth // DepthSegments or DepthFull
	MaxTokens      int   // default 4000
}

// ExpandResult holds the topic's content at the asked depth.
type ExpandResult struct {
	ConversationID string `json:"conversation_id"`
	Tag            string `json:"tag"`
	Depth          Depth  `json:"depth"`
	Text           string `json:"-"`
	Tokens         int    `json:"tokens"`
	// Truncated is true when the topic has more than fit in MaxTokens;
	// TruncationRefs then point at what was left out (read_log).
	Truncated      bool            `json:"truncated"`
	TruncationRefs []TruncationRef `json:"truncation_refs"`
	TurnIDs        []string        `json:"turn_ids"`
	// Evicted are topics collapsed to make room in the working set.
	Evicted    []string       `json:"evicted"`
	WorkingSet []WorkingEntry `json:"working_set"`
}

// CollapseRequest is one collapse_topic call.
type CollapseRequest struct {
	ConversationID string
	Tag            string
	Depth          Depth // DepthSummary or DepthNone
}

// CollapseResult says what a collapse freed.
type CollapseResult struct {
	ConversationID string         `json:"conversation_id"`
	Tag            string         `json:"tag"`
	Depth          Depth          `json:"depth"`
	TokensFreed    int            `json:"tokens_freed"`
	WorkingSet     []WorkingEntry `json:"working_set"`
}

// WorkingEntry is one topic's place in a conversation's working set.
type WorkingEntry struct {
	Tag        string    `json:"tag"`
	Depth      Depth     `json:"depth"`
	Tokens     int       `json:"tokens"`
	LastAccess time.Time `json:"last_access"`
}

// FindQuoteRequest is one find_quote call.
type FindQuoteRequest struct {
	ConversationID string
	Query          string
	MaxResults     int // default 5, at most 50
	Since, Until   time.Time
	Speaker        string
	Scope          Scope
}

// Quote is one find_quote hit.
type Quote struct {
	TurnID         string    `json:"turn_id"`
	ConversationID string    `json:"conversation_id"`
	Role           string    `json:"role"`
	Speaker        string    `json:"speaker,omitempty"`
	Timestamp      time.Time `json:"timestamp"`
	// Excerpt is the matching passage with matched terms marked **like this**.
	Excerpt string   `json:"excerpt"`
	Tags    []string `json:"tags"`
	Ref     LogRef   `json:"ref"`
	Score   float64  `json:"score"`
	// Match is "lexical" or "semantic".
	Match string `json:"match"`
}

// LogRef locates a turn in its master log: bytes [Start, End) of File,
// a slash-separated path relative to the data directory (logs/ID.jsonl).
type LogRef struct {
	File  string `json:"file"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
}

// FindQuoteResult holds the hits, best first.
type FindQuoteResult struct {
	Query  string  `json:"query"`
	Quotes []Quote `json:"quotes"`
	// CatchingUp, IndexedThrough and Note say that the search index is
	// behind the stored turns, so some may be missing (see RecallResult).
	CatchingUp     bool   `json:"catching_up,omitempty"`
	IndexedThrough string `json:"indexed_through,omitempty"`
	Note           string `json:"note,omitempty"`
}

// Status describes one conversation's memory (domain_status).
type Status struct {
	ConversationID string      `json:"conversation_id"`
	Tags           []TagStatus `json:"tags"`
	Totals         Totals      `json:"totals"`
	Features       Features    `json:"features"`
}

// TagStatus is one tag's line in a Status.
type TagStatus struct {
	Tag           string    `json:"tag"`
	Turns         int       `json:"turns"`
	Segments      int       `json:"segments"`
	FullTokens    int       `json:"full_tokens"`
	SummaryTokens int       `json:"summary_tokens"`
	FirstSeen     time.Time `json:"first_seen"`
	LastSeen      time.Time `json:"last_seen"`
	Depth         Depth     `json:"depth"`
	Description   string    `json:"description,omitempty"`
}

// Totals are store-wide or conversation-wide counts.
type Totals struct {
	Conversations   int   `json:"conversations"`
	Turns           int   `json:"turns"`
	Segments        int   `json:"segments"`
	TagSummaries    int   `json:"tag_summaries"`
	Tokens          int   `json:"tokens"`
	ActiveTokens    int   `json:"active_tokens"`
	CompactedTokens int   `json:"compacted_tokens"`
	LogBytes        int64 `json:"log_bytes"`
	// DamagedRecords counts turns whose master-log record failed its
	// checksum or went missing: they are skipped, and their bytes are kept
	// under quarantine/ in the data directory.
	DamagedRecords int `json:"damaged_records"`
}

// Features says what is enabled, and why not when it is not.
type Features struct {
	Embeddings       bool   `json:"embeddings"`
	EmbeddingsReason string `json:"embeddings_reason,omitempty"`
	LLM              bool   `json:"llm"`
	LLMReason        string `json:"llm_reason,omitempty"`
	// LLMUsage is this conversation's model usage and estimated cost.
	LLMUsage []LLMUsage `json:"llm_usage,omitempty"`
	// ReadOnly is set when the data directory is served read-only;
	// ReadOnlyReason then says why and what still works.
	ReadOnly       bool   `json:"read_only,omitempty"`
	ReadOnlyReason string `json:"read_only_reason,omitempty"`
}

// Domain is one tag's full view (the virtualcontext://domains/{tag} resource).
type Domain struct {
	ConversationID string    `json:"conversation_id"`
	Tag            string    `json:"tag"`
	Description    string    `json:"description,omitempty"`
	Summary        string    `json:"summary,omitempty"`
	Segments       []Segment `json:"segments"`
	Status         TagStatus `json:"status"`
}

// Segment is a Layer 1 unit: contiguous turns sharing a primary tag.
type Segment struct {
	ID             string    `json:"id"`
	ConversationID string    `json:"conversation_id"`
	Primary        string    `json:"primary"`
	Tags           []string  `json:"tags"`
	FirstTurn      string    `json:"first_turn"`
	LastTurn       string    `json:"last_turn"`
	Turns          int       `json:"turns"`
	Start          time.Time `json:"start"`
	End            time.Time `json:"end"`
	Summary        string    `json:"summary"`
	SummaryTokens  int       `json:"summary_tokens"`
	FullTokens     int       `json:"full_tokens"`
	Method         string    `json:"method"`
	Version        string    `json:"version"`
	CreatedAt      time.Time `json:"created_at"`
}

// ConversationInfo lists a conversation.
type ConversationInfo struct {
	ID        string    `json:"id"`
	Turns     int       `json:"turns"`
	Tokens    int       `json:"tokens"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// Damaged, when set, says that the conversation's record in vc.db
	// cannot be read, and what to run; its counts are then unknown.
	Damaged string `json:"damaged,omitempty"`
}
