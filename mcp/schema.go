package mcp

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Schemas are generated from the argument structs (descriptions come from
// their jsonschema tags) and then given what Go types cannot say: enums,
// ranges, defaults, patterns, and a sensible shape for the raw-JSON fields.

// conversationIDPattern is an optional id's: empty is the default memory
// space, as omitted is (models often fill optional strings with "").
// forget, which never guesses the space, wants one that is not empty
// (requiredConversationIDPattern).
const (
	conversationIDPattern         = `^([A-Za-z0-9._:-]{1,128})?$`
	requiredConversationIDPattern = `^[A-Za-z0-9._:-]{1,128}$`
)

func mustSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{IgnoreInvalidTypes: true})
	if err != nil {
		// The argument types are fixed at compile time: this is a programming
		// error caught by every test, never request data.
		panic(fmt.Sprintf("schema: %v", err))
	}
	return s
}

func marshalSchema(s *jsonschema.Schema) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("schema: %v", err))
	}
	return b
}

func ptr[T any](v T) *T { return &v }

func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("schema default: %v", err))
	}
	return b
}

// prop returns property name of s, failing loudly when the struct and the
// decorations drift apart.
func prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := s.Properties[name]
	if !ok {
		panic(fmt.Sprintf("schema: no property %q", name))
	}
	return p
}

func single(p *jsonschema.Schema, typ string) {
	p.Type, p.Types = typ, nil
}

func conversationProp(s *jsonschema.Schema) {
	p := prop(s, "conversation_id")
	p.Pattern = conversationIDPattern
	p.MaxLength = ptr(maxConversationIDLen)
}

func tokensProp(s *jsonschema.Schema, def int) {
	p := prop(s, "max_tokens")
	single(p, "integer")
	p.Minimum, p.Maximum = ptr(float64(minMaxTokens)), ptr(float64(maxMaxTokens))
	p.Default = rawJSON(def)
}

func scopeProp(s *jsonschema.Schema) {
	p := prop(s, "scope")
	p.Enum = []any{"conversation", "all"}
	p.Default = rawJSON("conversation")
}

func compactInputSchema() json.RawMessage {
	s := mustSchema[CompactArgs]()
	conversationProp(s)
	messages := prop(s, "messages")
	single(messages, "array")
	messages.Items = messageSchema()
	messages.MinItems, messages.MaxItems = ptr(minMessages), ptr(maxMessages)
	prop(s, "force").Default = rawJSON(false)
	return marshalSchema(s)
}

// messageSchema is one message's schema (MessageArg, decorated).
func messageSchema() *jsonschema.Schema {
	msg := mustSchema[MessageArg]()
	prop(msg, "role").Enum = []any{"user", "assistant", "system", "tool"}
	content := prop(msg, "content")
	*content = jsonschema.Schema{
		Description: content.Description,
		AnyOf: []*jsonschema.Schema{
			{Type: "string"},
			{Type: "array", Items: &jsonschema.Schema{
				Type:     "object",
				Required: []string{"type"},
				Properties: map[string]*jsonschema.Schema{
					"type": {Type: "string", Description: "text, tool_use, tool_result, image, ..."},
				},
			}},
			{Type: "null"},
		},
	}
	calls := prop(msg, "tool_calls")
	*calls = jsonschema.Schema{
		Description: calls.Description,
		Type:        "array",
		Items:       &jsonschema.Schema{Type: "object"},
	}
	prop(msg, "timestamp").Format = "date-time"
	// Clients send extra per-message fields (ids, annotations); they are
	// ignored, not refused.
	msg.AdditionalProperties = nil
	msg.PropertyOrder = nil
	return msg
}

func compactMessagesInputSchema() json.RawMessage {
	s := mustSchema[CompactMessagesArgs]()
	conversationProp(s)
	messages := prop(s, "messages")
	single(messages, "array")
	messages.Items = messageSchema()
	messages.MinItems, messages.MaxItems = ptr(minMessages), ptr(maxMessages)
	k := prop(s, "keep_last")
	single(k, "integer")
	k.Minimum, k.Maximum = ptr(0.0), ptr(float64(memory.MaxKeepLast))
	single(prop(s, "use_simple_prompt"), "boolean")
	single(prop(s, "notify_user"), "boolean")
	prop(s, "only_over_threshold").Default = rawJSON(false)
	return marshalSchema(s)
}

func replaceOutputSchema() json.RawMessage {
	s := mustSchema[ReplaceOutput]()
	single(s, "object")
	m := prop(s, "messages")
	single(m, "array")
	m.Items = messageSchema()
	return marshalSchema(s)
}

func recallInputSchema() json.RawMessage {
	s := mustSchema[RecallArgs]()
	prop(s, "message").MinLength = ptr(1)
	conversationProp(s)
	tokensProp(s, defaultRecallTokens)
	scopeProp(s)
	return marshalSchema(s)
}

func expandInputSchema() json.RawMessage {
	s := mustSchema[ExpandArgs]()
	prop(s, "tag").MinLength = ptr(1)
	d := prop(s, "depth")
	d.Enum, d.Default = []any{"segments", "full"}, rawJSON("segments")
	conversationProp(s)
	tokensProp(s, defaultExpandTokens)
	return marshalSchema(s)
}

func collapseInputSchema() json.RawMessage {
	s := mustSchema[CollapseArgs]()
	prop(s, "tag").MinLength = ptr(1)
	d := prop(s, "depth")
	d.Enum, d.Default = []any{"summary", "none"}, rawJSON("summary")
	conversationProp(s)
	return marshalSchema(s)
}

func findQuoteInputSchema() json.RawMessage {
	s := mustSchema[FindQuoteArgs]()
	prop(s, "query").MinLength = ptr(1)
	conversationProp(s)
	n := prop(s, "max_results")
	single(n, "integer")
	n.Minimum, n.Maximum, n.Default = ptr(1.0), ptr(float64(maxMaxResults)), rawJSON(defaultMaxResults)
	prop(s, "since").Format = "date-time"
	prop(s, "until").Format = "date-time"
	scopeProp(s)
	return marshalSchema(s)
}

func statusInputSchema() json.RawMessage {
	s := mustSchema[StatusArgs]()
	conversationProp(s)
	l := prop(s, "limit")
	single(l, "integer")
	l.Minimum, l.Maximum, l.Default = ptr(1.0), ptr(float64(maxStatusTags)), rawJSON(defaultStatusTags)
	return marshalSchema(s)
}

func readLogInputSchema() json.RawMessage {
	s := mustSchema[ReadLogArgs]()
	conversationProp(s)
	for _, name := range []string{"start", "end"} {
		p := prop(s, name)
		single(p, "integer")
		p.Minimum = ptr(0.0)
	}
	return marshalSchema(s)
}

// outputSchema is the schema of a structuredContent type.
func outputSchema[T any]() json.RawMessage {
	s := mustSchema[T]()
	single(s, "object")
	return marshalSchema(s)
}

// rawInputSchema sets a tool's input schema; unlike mcpgo.WithRawInputSchema
// it also clears the builder's default object schema, which would otherwise
// make the tool fail to marshal.
func rawInputSchema(schema json.RawMessage) mcpgo.ToolOption {
	return func(t *mcpgo.Tool) {
		t.InputSchema = mcpgo.ToolInputSchema{}
		t.RawInputSchema = schema
	}
}
