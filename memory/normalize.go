package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

const (
	maxBatchMessages = 1000
	maxNameLen       = 256
	maxMessageIDLen  = 256
)

var validRoles = map[string]bool{"user": true, "assistant": true, "system": true, "tool": true}

// turnInput is a validated, normalised message ready to be appended.
type turnInput struct {
	Role       string
	Name       string
	Text       string          // what is indexed, tagged and counted; "" = an empty (tool-only) turn
	Raw        json.RawMessage // original content when it was not a plain string
	ToolCalls  json.RawMessage // OpenAI-style tool calls, verbatim
	ToolCallID string
	ToolUse    bool // carries a tool call
	ToolResult bool // carries a tool result
	Timestamp  time.Time
	HasTime    bool
	ID         string // the client's message id, if any
	Hash       [32]byte
}

// normalizeBatch validates every message and normalises its content. A
// batch is all or nothing: the first bad message fails the whole batch.
func normalizeBatch(msgs []Message, maxBytes int) ([]turnInput, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: messages must hold at least one message", ErrInvalid)
	}
	if len(msgs) > maxBatchMessages {
		return nil, fmt.Errorf("%w: %d messages in one call; the limit is %d (send them in several calls)", ErrTooLarge, len(msgs), maxBatchMessages)
	}
	out := make([]turnInput, 0, len(msgs))
	for i, m := range msgs {
		t, err := normalizeMessage(m, maxBytes)
		if err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				fe.Field = fmt.Sprintf("messages[%d].%s", i, fe.Field)
			}
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// FieldError is a bad argument: which field, what is wrong with it. It
// wraps ErrInvalid or ErrTooLarge, and its message is meant for the model
// or person who sent the request ("messages[2].role: must be one of ...").
type FieldError struct {
	Field   string
	Problem string
	Kind    error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }
func (e *FieldError) Unwrap() error { return e.Kind }

func fieldError(kind error, field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...), Kind: kind}
}

func normalizeMessage(m Message, maxBytes int) (turnInput, error) {
	var t turnInput
	role := strings.TrimSpace(m.Role)
	if !validRoles[role] {
		if m.Role == "" {
			return t, fieldError(ErrInvalid, "role", "required, one of user, assistant, system, tool")
		}
		return t, fieldError(ErrInvalid, "role", "must be one of user, assistant, system, tool, got %q", clip(m.Role, 40))
	}
	t.Role = role
	if !utf8.ValidString(m.Name) {
		return t, fieldError(ErrInvalid, "name", "is not valid UTF-8")
	}
	if len(m.Name) > maxNameLen {
		return t, fieldError(ErrInvalid, "name", "is %d bytes; the limit is %d", len(m.Name), maxNameLen)
	}
	t.Name = strings.TrimSpace(m.Name)
	if len(m.ID) > maxMessageIDLen {
		return t, fieldError(ErrInvalid, "id", "is %d bytes; the limit is %d", len(m.ID), maxMessageIDLen)
	}
	if !utf8.ValidString(m.ID) {
		return t, fieldError(ErrInvalid, "id", "is not valid UTF-8")
	}
	t.ID = m.ID
	if len(m.Content)+len(m.ToolCalls) > maxBytes {
		return t, fieldError(ErrTooLarge, "content", "is %d bytes; the limit is %d bytes (max_message_bytes)", len(m.Content)+len(m.ToolCalls), maxBytes)
	}
	if !utf8.Valid(m.Content) || !utf8.Valid(m.ToolCalls) {
		return t, fieldError(ErrInvalid, "content", "is not valid UTF-8")
	}
	if m.Timestamp != "" {
		ts, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(m.Timestamp))
		if err != nil {
			return t, fieldError(ErrInvalid, "timestamp", "must be an RFC3339 time like 2024-05-08T13:56:00Z, got %q", clip(m.Timestamp, 40))
		}
		t.Timestamp, t.HasTime = ts.UTC(), true
	}
	text, err := contentText(m.Content, &t)
	if err != nil {
		return t, fieldError(ErrInvalid, "content", "%v", err)
	}
	if len(bytes.TrimSpace(m.ToolCalls)) > 0 && !bytes.Equal(bytes.TrimSpace(m.ToolCalls), []byte("null")) {
		var calls []json.RawMessage
		if err := json.Unmarshal(m.ToolCalls, &calls); err != nil {
			return t, fieldError(ErrInvalid, "tool_calls", "must be an array of tool calls, got %s", jsonKind(m.ToolCalls))
		}
		if len(calls) > 0 {
			t.ToolCalls = compactJSON(m.ToolCalls)
			t.ToolUse = true
		}
	}
	t.ToolCallID = m.ToolCallID
	if t.ToolCallID != "" || role == "tool" {
		t.ToolResult = true
	}
	// Stored byte for byte; only the hash, the empty check and the index
	// look past surrounding white space.
	t.Text = text
	t.Hash = messageHash(t)
	return t, nil
}

// contentText extracts the indexable text of a content value: a string, an
// array of blocks, or null. Tool calls are kept in Raw but are not text, so a
// tool-only message is empty.
func contentText(raw json.RawMessage, t *turnInput) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("is not a valid JSON string")
		}
		return s, nil
	case '[':
		var blocks []json.RawMessage
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return "", fmt.Errorf("must be a string or an array of content blocks")
		}
		t.Raw = compactJSON(raw)
		var parts []string
		for i, b := range blocks {
			s, err := blockText(b, t)
			if err != nil {
				return "", fmt.Errorf("block %d %w", i, err)
			}
			if s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n"), nil
	default:
		return "", fmt.Errorf("must be a string or an array of content blocks, got %s", jsonKind(raw))
	}
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
}

func blockText(raw json.RawMessage, t *turnInput) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("is not a valid string")
		}
		return s, nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return "", fmt.Errorf("must be an object with a \"type\" (got %s)", jsonKind(raw))
	}
	var b contentBlock
	if err := json.Unmarshal(raw, &b); err != nil {
		return "", fmt.Errorf("is malformed: %v", err)
	}
	switch b.Type {
	case "text", "input_text", "output_text":
		if b.Text == nil {
			return "", fmt.Errorf("of type %q has no \"text\"", b.Type)
		}
		return *b.Text, nil
	case "tool_use", "function_call", "server_tool_use":
		t.ToolUse = true
		return "", nil
	case "tool_result", "function_call_output":
		t.ToolResult = true
		if t.ToolCallID == "" {
			t.ToolCallID = b.ToolUseID
		}
		if len(b.Content) == 0 {
			return "", nil
		}
		var inner turnInput
		s, err := contentText(b.Content, &inner)
		if err != nil {
			return "", fmt.Errorf("content %v", err)
		}
		return s, nil
	default:
		// Images, documents, thinking blocks and unknown types carry no
		// indexable text; they stay in Raw, verbatim.
		if b.Type == "" {
			return "", fmt.Errorf("has no \"type\"")
		}
		return "", nil
	}
}

func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return buf.Bytes()
}

// messageHash identifies a message for aligning a batch with what is
// stored: role, name, content (without surrounding white space, as stored
// before content was kept verbatim) and timestamp. It is the hash of the
// master log record that holds the message (masterlog.Record.MessageHash).
func messageHash(t turnInput) [32]byte {
	r := masterlog.Record{Role: t.Role, Name: t.Name, Content: t.Text, Raw: t.Raw, ToolCalls: t.ToolCalls, ToolCallID: t.ToolCallID}
	if t.HasTime {
		r.Timestamp = &t.Timestamp
	}
	return r.MessageHash()
}
