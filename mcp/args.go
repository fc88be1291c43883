package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Limits of the MCP surface. They are part of the published schemas.
const (
	maxConversationIDLen = 128
	minMessages          = 1
	maxMessages          = 1000
	minMaxTokens         = 100
	maxMaxTokens         = 32000
	defaultRecallTokens  = 2000
	defaultExpandTokens  = 4000
	defaultMaxResults    = 5
	maxMaxResults        = 50
	maxQueryBytes        = 64 << 10
	maxTagLen            = 200
)

// CompactArgs are compact_context's arguments.
type CompactArgs struct {
	ConversationID string `json:"conversation_id,omitempty" jsonschema:"Memory space: one chat or one project you keep coming back to. 1-128 characters of [A-Za-z0-9._:-]. Omit (or leave empty) for the default space. Keep using the same id for the same chat or project."`
	// Messages stay raw here: each one is decoded leniently (clients send
	// extra fields) after the strict top-level decode.
	Messages []json.RawMessage `json:"messages" jsonschema:"The new exchange (or the whole history: messages already stored are counted as duplicates and not stored again). 1-1000 messages."`
	Force    bool              `json:"force,omitempty" jsonschema:"Compact now, whatever the thresholds say."`
}

// MessageArg is one message of compact_context. Content is a string or an
// array of content blocks (text, tool_use, tool_result, image...); it may be
// omitted or null for a tool-only turn. ToolCalls holds OpenAI-style tool
// calls. Both are passed to memory as raw JSON: memory normalises them.
type MessageArg struct {
	Role       string          `json:"role" jsonschema:"Who spoke: user, assistant, system or tool."`
	Content    json.RawMessage `json:"content,omitempty" jsonschema:"A string, or an array of content blocks (text, tool_use, tool_result, image). May be omitted for a tool-only turn."`
	Name       string          `json:"name,omitempty" jsonschema:"Speaker name, e.g. a person in a group chat or a tool name."`
	Timestamp  string          `json:"timestamp,omitempty" jsonschema:"When the message was sent, RFC3339 (e.g. 2025-05-01T10:00:00Z). Omit for now."`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty" jsonschema:"OpenAI-style tool calls made by an assistant message."`
	ToolCallID string          `json:"tool_call_id,omitempty" jsonschema:"For a tool message: the id of the call it answers."`
	ID         string          `json:"id,omitempty" jsonschema:"Optional unique id of the message: a message with an id is stored once per id, however often it is sent."`
}

// RecallArgs are recall_context's arguments.
type RecallArgs struct {
	Message        string `json:"message" jsonschema:"The user's current message (or what you need context for). It is not stored."`
	ConversationID string `json:"conversation_id,omitempty" jsonschema:"Memory space to read. Omit for the default space."`
	MaxTokens      *int   `json:"max_tokens,omitempty" jsonschema:"Budget for the returned context in cl100k tokens, headers included (100-32000, default 2000)."`
	Scope          string `json:"scope,omitempty" jsonschema:"conversation (default) reads this memory space only; all reads every space (\"what did we say in the other chat\")."`
}

// ExpandArgs are expand_topic's arguments.
type ExpandArgs struct {
	Tag            string `json:"tag" jsonschema:"The topic tag to page in (see domain_status or recall_context's matched_tags)."`
	Depth          string `json:"depth,omitempty" jsonschema:"segments (default): the topic's segment summaries; full: the original turns read back from the master log."`
	ConversationID string `json:"conversation_id,omitempty" jsonschema:"Memory space. Omit for the default space."`
	MaxTokens      *int   `json:"max_tokens,omitempty" jsonschema:"Budget for the returned content in cl100k tokens (100-32000, default 4000)."`
}

// CollapseArgs are collapse_topic's arguments.
type CollapseArgs struct {
	Tag            string `json:"tag" jsonschema:"The topic tag to page out."`
	Depth          string `json:"depth,omitempty" jsonschema:"summary (default): keep only the topic summary in the working set; none: drop the topic from it."`
	ConversationID string `json:"conversation_id,omitempty" jsonschema:"Memory space. Omit for the default space."`
}

// FindQuoteArgs are find_quote's arguments.
type FindQuoteArgs struct {
	Query          string `json:"query" jsonschema:"Words or a phrase to find in the stored original turns."`
	ConversationID string `json:"conversation_id,omitempty" jsonschema:"Memory space to search. Omit for the default space."`
	MaxResults     *int   `json:"max_results,omitempty" jsonschema:"How many hits to return (1-50, default 5)."`
	Since          string `json:"since,omitempty" jsonschema:"Only turns at or after this RFC3339 time."`
	Until          string `json:"until,omitempty" jsonschema:"Only turns before this RFC3339 time."`
	Speaker        string `json:"speaker,omitempty" jsonschema:"Only turns by this speaker (a role such as user, or a name)."`
	Scope          string `json:"scope,omitempty" jsonschema:"conversation (default) searches this memory space; all searches every space."`
	Cursor         string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous find_quote answer with the same arguments: the next max_results hits. Omit for the best hits."`
}

// StatusArgs are domain_status's arguments.
type StatusArgs struct {
	ConversationID string `json:"conversation_id,omitempty" jsonschema:"Memory space. Omit for the default space."`
	Limit          *int   `json:"limit,omitempty" jsonschema:"Most tags to list (1-500, default 50), busiest first."`
	Cursor         string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous domain_status answer: the next page of tags. Omit for the first page."`
}

// ReadLogArgs are read_log's arguments.
type ReadLogArgs struct {
	ConversationID string `json:"conversation_id,omitempty" jsonschema:"Memory space whose master log to read (the one the reference came with). Omit for the default space."`
	Start          *int64 `json:"start" jsonschema:"First byte, from a [truncated: ... bytes START-END] reference."`
	End            *int64 `json:"end" jsonschema:"Byte after the last one (END of the reference); at most 262144 bytes after start."`
}

// argError is a caller mistake found while decoding or validating arguments.
// Its message is what the model sees.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

func argErrorf(format string, a ...any) error { return &argError{msg: fmt.Sprintf(format, a...)} }

// decodeStrict decodes a JSON object into dst, rejecting unknown fields,
// invalid UTF-8, trailing data and non-object input with messages that name
// the argument.
func decodeStrict(raw []byte, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if !utf8.Valid(raw) {
		return argErrorf("arguments are not valid UTF-8: send text as UTF-8")
	}
	if raw[0] != '{' {
		return argErrorf("arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonArgError("", dst, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return argErrorf("arguments must be a single JSON object")
	}
	return nil
}

// jsonArgError turns an encoding/json error into a message naming the
// argument. prefix is prepended to field names ("messages[3].").
func jsonArgError(prefix string, dst any, err error) error {
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &ute):
		field := ute.Field
		if field == "" {
			return argErrorf("%s must be %s, got %s", strings.TrimSuffix(prefix, "."), describeType(ute.Type), ute.Value)
		}
		return argErrorf("%s%s: must be %s, got %s", prefix, field, describeType(ute.Type), ute.Value)
	case errors.As(err, &se):
		return argErrorf("arguments are not valid JSON at byte %d: %v", se.Offset, se)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return argErrorf("arguments are not valid JSON: the input ends too early")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return argErrorf("%sunknown argument %s; allowed: %s", prefix, name, strings.Join(jsonFields(dst), ", "))
	default:
		return argErrorf("%sarguments could not be decoded: %v", prefix, err)
	}
}

func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// checkConversationID validates an optional conversation id ("" = default).
func checkConversationID(id string) error {
	if id == "" {
		return nil
	}
	if len(id) > maxConversationIDLen || id == "." || id == ".." || !conversationIDChars(id) {
		return argErrorf("conversation_id: must be 1-128 characters of [A-Za-z0-9._:-] and not \".\" or \"..\" (got %q); omit it for the default memory space", truncate(id, 40))
	}
	return nil
}

func conversationIDChars(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

func checkTokens(name string, v *int, def int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < minMaxTokens || *v > maxMaxTokens {
		return 0, argErrorf("%s: must be between %d and %d, got %d", name, minMaxTokens, maxMaxTokens, *v)
	}
	return *v, nil
}

func checkScope(s string) (memory.Scope, error) {
	switch s {
	case "", string(memory.ScopeConversation):
		return memory.ScopeConversation, nil
	case string(memory.ScopeAll):
		return memory.ScopeAll, nil
	}
	return "", argErrorf("scope: must be \"conversation\" or \"all\", got %q", truncate(s, 40))
}

func checkTag(tag string) (string, error) {
	t := strings.TrimSpace(tag)
	if t == "" {
		return "", argErrorf("tag: required, e.g. one of the tags domain_status lists")
	}
	if len(t) > maxTagLen {
		return "", argErrorf("tag: at most %d bytes, got %d", maxTagLen, len(t))
	}
	return t, nil
}

func parseTime(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, argErrorf("%s: must be an RFC3339 time like 2025-05-01T10:00:00Z, got %q", name, truncate(s, 40))
	}
	return t, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// decodeCompact decodes and validates compact_context's arguments.
func decodeCompact(raw []byte) (memory.IngestRequest, error) {
	var a CompactArgs
	if err := decodeStrict(raw, &a); err != nil {
		return memory.IngestRequest{}, err
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return memory.IngestRequest{}, err
	}
	if a.Messages == nil {
		return memory.IngestRequest{}, argErrorf("messages: required, an array of 1-%d messages like {\"role\":\"user\",\"content\":\"...\"}", maxMessages)
	}
	if len(a.Messages) < minMessages || len(a.Messages) > maxMessages {
		return memory.IngestRequest{}, argErrorf("messages: must hold %d-%d messages, got %d; split larger histories into several calls", minMessages, maxMessages, len(a.Messages))
	}
	msgs := make([]memory.Message, 0, len(a.Messages))
	for i, rm := range a.Messages {
		m, err := decodeMessage(i, rm)
		if err != nil {
			return memory.IngestRequest{}, err
		}
		msgs = append(msgs, m)
	}
	return memory.IngestRequest{ConversationID: a.ConversationID, Messages: msgs, Force: a.Force}, nil
}

func decodeMessage(i int, raw json.RawMessage) (memory.Message, error) {
	prefix := fmt.Sprintf("messages[%d].", i)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return memory.Message{}, argErrorf("messages[%d]: must be an object like {\"role\":\"user\",\"content\":\"...\"}", i)
	}
	var m MessageArg
	if err := json.Unmarshal(raw, &m); err != nil {
		return memory.Message{}, jsonArgError(prefix, &m, err)
	}
	// Roles, content blocks, tool calls and timestamps are the engine's to
	// validate (memory.Ingest): its errors name the message and field too.
	return memory.Message{
		Role:       m.Role,
		Content:    m.Content,
		Name:       m.Name,
		Timestamp:  m.Timestamp,
		ToolCalls:  m.ToolCalls,
		ToolCallID: m.ToolCallID,
		ID:         m.ID,
	}, nil
}

// decodeRecall decodes and validates recall_context's arguments.
func decodeRecall(raw []byte) (memory.RecallRequest, error) {
	var a RecallArgs
	if err := decodeStrict(raw, &a); err != nil {
		return memory.RecallRequest{}, err
	}
	if strings.TrimSpace(a.Message) == "" {
		return memory.RecallRequest{}, argErrorf("message: required, the user's current message or what you need context for")
	}
	if len(a.Message) > maxQueryBytes {
		return memory.RecallRequest{}, argErrorf("message: at most %d bytes, got %d; send the gist", maxQueryBytes, len(a.Message))
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return memory.RecallRequest{}, err
	}
	budget, err := checkTokens("max_tokens", a.MaxTokens, defaultRecallTokens)
	if err != nil {
		return memory.RecallRequest{}, err
	}
	scope, err := checkScope(a.Scope)
	if err != nil {
		return memory.RecallRequest{}, err
	}
	return memory.RecallRequest{ConversationID: a.ConversationID, Message: a.Message, MaxTokens: budget, Scope: scope}, nil
}

// decodeExpand decodes and validates expand_topic's arguments.
func decodeExpand(raw []byte) (memory.ExpandRequest, error) {
	var a ExpandArgs
	if err := decodeStrict(raw, &a); err != nil {
		return memory.ExpandRequest{}, err
	}
	tag, err := checkTag(a.Tag)
	if err != nil {
		return memory.ExpandRequest{}, err
	}
	depth := memory.DepthSegments
	switch a.Depth {
	case "", string(memory.DepthSegments):
	case string(memory.DepthFull):
		depth = memory.DepthFull
	default:
		return memory.ExpandRequest{}, argErrorf("depth: must be \"segments\" or \"full\", got %q", truncate(a.Depth, 40))
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return memory.ExpandRequest{}, err
	}
	budget, err := checkTokens("max_tokens", a.MaxTokens, defaultExpandTokens)
	if err != nil {
		return memory.ExpandRequest{}, err
	}
	return memory.ExpandRequest{ConversationID: a.ConversationID, Tag: tag, Depth: depth, MaxTokens: budget}, nil
}

// decodeCollapse decodes and validates collapse_topic's arguments.
func decodeCollapse(raw []byte) (memory.CollapseRequest, error) {
	var a CollapseArgs
	if err := decodeStrict(raw, &a); err != nil {
		return memory.CollapseRequest{}, err
	}
	tag, err := checkTag(a.Tag)
	if err != nil {
		return memory.CollapseRequest{}, err
	}
	depth := memory.DepthSummary
	switch a.Depth {
	case "", string(memory.DepthSummary):
	case string(memory.DepthNone):
		depth = memory.DepthNone
	default:
		return memory.CollapseRequest{}, argErrorf("depth: must be \"summary\" or \"none\", got %q", truncate(a.Depth, 40))
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return memory.CollapseRequest{}, err
	}
	return memory.CollapseRequest{ConversationID: a.ConversationID, Tag: tag, Depth: depth}, nil
}

// decodeFindQuote decodes and validates find_quote's arguments.
func decodeFindQuote(raw []byte) (memory.FindQuoteRequest, error) {
	var a FindQuoteArgs
	if err := decodeStrict(raw, &a); err != nil {
		return memory.FindQuoteRequest{}, err
	}
	if strings.TrimSpace(a.Query) == "" {
		return memory.FindQuoteRequest{}, argErrorf("query: required, the words or phrase to find")
	}
	if len(a.Query) > maxQueryBytes {
		return memory.FindQuoteRequest{}, argErrorf("query: at most %d bytes, got %d", maxQueryBytes, len(a.Query))
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return memory.FindQuoteRequest{}, err
	}
	n := defaultMaxResults
	if a.MaxResults != nil {
		n = *a.MaxResults
		if n < 1 || n > maxMaxResults {
			return memory.FindQuoteRequest{}, argErrorf("max_results: must be between 1 and %d, got %d", maxMaxResults, n)
		}
	}
	since, err := parseTime("since", a.Since)
	if err != nil {
		return memory.FindQuoteRequest{}, err
	}
	until, err := parseTime("until", a.Until)
	if err != nil {
		return memory.FindQuoteRequest{}, err
	}
	if !since.IsZero() && !until.IsZero() && !until.After(since) {
		return memory.FindQuoteRequest{}, argErrorf("until: must be after since (%s), got %s", a.Since, a.Until)
	}
	scope, err := checkScope(a.Scope)
	if err != nil {
		return memory.FindQuoteRequest{}, err
	}
	return memory.FindQuoteRequest{
		ConversationID: a.ConversationID, Query: a.Query, MaxResults: n,
		Since: since, Until: until, Speaker: strings.TrimSpace(a.Speaker), Scope: scope,
	}, nil
}

// decodeStatus decodes and validates domain_status's arguments.
func decodeStatus(raw []byte) (string, error) {
	var a StatusArgs
	if err := decodeStrict(raw, &a); err != nil {
		return "", err
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return "", err
	}
	return a.ConversationID, nil
}

// decodeReadLog decodes and validates read_log's arguments.
func decodeReadLog(raw []byte) (memory.ReadLogRequest, error) {
	var a ReadLogArgs
	if err := decodeStrict(raw, &a); err != nil {
		return memory.ReadLogRequest{}, err
	}
	if a.Start == nil || a.End == nil {
		return memory.ReadLogRequest{}, argErrorf("start and end: required, the byte range of a [truncated: ... bytes START-END] reference")
	}
	if *a.Start < 0 || *a.End <= *a.Start {
		return memory.ReadLogRequest{}, argErrorf("start and end: want 0 <= start < end, got %d-%d", *a.Start, *a.End)
	}
	if err := checkConversationID(a.ConversationID); err != nil {
		return memory.ReadLogRequest{}, err
	}
	return memory.ReadLogRequest{ConversationID: a.ConversationID, Start: *a.Start, End: *a.End}, nil
}
