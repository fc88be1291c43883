package proxy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory"
)

// anthropic is the Messages API (/v1/messages).
type anthropic struct{}

func (anthropic) format() Format        { return FormatAnthropic }
func (anthropic) messagesField() string { return "messages" }

type aBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type aMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// aContent decodes content that is a string or an array of blocks.
func aContent(raw json.RawMessage) ([]aBlock, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []aBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []aBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("content must be a string or an array of blocks: %w", err)
	}
	return blocks, nil
}

// aResultText is a tool_result's text (its content is a string or blocks).
func aResultText(raw json.RawMessage) string {
	blocks, err := aContent(raw)
	if err != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (anthropic) parse(raw json.RawMessage) (message, error) {
	var m aMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return message{}, err
	}
	blocks, err := aContent(m.Content)
	if err != nil {
		return message{}, err
	}
	out := message{raw: raw, role: m.Role}
	var texts []string
	for _, b := range blocks {
		out.blocks = append(out.blocks, b.Type)
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use", "server_tool_use":
			out.uses = append(out.uses, b.ID)
		case "tool_result":
			out.results = append(out.results, b.ToolUseID)
		}
	}
	out.text = strings.Join(texts, "\n")
	out.onlyResults = m.Role == "user" && len(out.results) > 0 && strings.TrimSpace(out.text) == ""
	return out, nil
}

func (anthropic) strip(raw json.RawMessage) (json.RawMessage, string) {
	return stripAssistantMarker(raw)
}

// stripAssistantMarker removes the session marker from an assistant message whose
// "content" is a string or text blocks (the Anthropic and OpenAI shapes),
// returning the session id it carried.
func stripAssistantMarker(raw json.RawMessage) (json.RawMessage, string) {
	if !strings.Contains(string(raw), "vc:session=") {
		return raw, ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || jsonString(m["role"]) != "assistant" {
		return raw, ""
	}
	content, id := stripContent(m["content"])
	if id == "" {
		return raw, ""
	}
	m["content"] = content
	return mustJSON(m), id
}

// stripContent strips markers from Anthropic/OpenAI content: a string or
// an array of blocks with "text". Blocks left empty are dropped unless
// nothing else is left.
func stripContent(raw json.RawMessage) (json.RawMessage, string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		clean, id := stripMarker(s)
		if id == "" {
			return raw, ""
		}
		return mustJSON(clean), id
	}
	var blocks []map[string]json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return raw, ""
	}
	id := ""
	out := blocks[:0:0]
	for _, b := range blocks {
		if t, ok := b["text"]; ok {
			clean, found := stripMarker(jsonString(t))
			if found != "" {
				id = found
				if strings.TrimSpace(clean) == "" && len(blocks) > 1 {
					continue
				}
				b["text"] = mustJSON(clean)
			}
		}
		out = append(out, b)
	}
	if id == "" {
		return raw, ""
	}
	return mustJSON(out), id
}

func (anthropic) system(body map[string]json.RawMessage, msgs []json.RawMessage, text string) ([]json.RawMessage, error) {
	sys, ok := body["system"]
	switch {
	case !ok || isNull(sys):
		body["system"] = mustJSON(text)
	case sys[0] == '"':
		body["system"] = mustJSON(jsonString(sys) + "\n\n" + text)
	default:
		var blocks []json.RawMessage
		if err := json.Unmarshal(sys, &blocks); err != nil {
			return nil, fmt.Errorf("system: %w", err)
		}
		blocks = append(blocks, mustJSON(map[string]string{"type": "text", "text": text}))
		body["system"] = mustJSON(blocks)
	}
	return msgs, nil
}

func (a anthropic) addTools(body map[string]json.RawMessage, defs []toolDef) bool {
	var choice struct {
		Type string `json:"type"`
	}
	if c, ok := body["tool_choice"]; ok && json.Unmarshal(c, &choice) == nil && (choice.Type == "tool" || choice.Type == "none") {
		return false
	}
	var tools []json.RawMessage
	if t, ok := body["tools"]; ok && !isNull(t) {
		if json.Unmarshal(t, &tools) != nil {
			return false
		}
	}
	for _, have := range a.tools(body) {
		for _, d := range defs {
			if have.Name == d.Name {
				return false
			}
		}
	}
	for _, d := range defs {
		tools = append(tools, mustJSON(map[string]any{"name": d.Name, "description": d.Description, "input_schema": d.Schema}))
	}
	body["tools"] = mustJSON(tools)
	return true
}

func (anthropic) forceNoTools(body map[string]json.RawMessage) {
	body["tool_choice"] = json.RawMessage(`{"type":"none"}`)
}

func (anthropic) tools(body map[string]json.RawMessage) []toolInfo {
	var tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	if json.Unmarshal(body["tools"], &tools) != nil {
		return nil
	}
	out := make([]toolInfo, len(tools))
	for i, t := range tools {
		out[i] = toolInfo{t.Name, t.Description}
	}
	return out
}

func (anthropic) keepTools(body map[string]json.RawMessage, keep func(string) bool) {
	body["tools"] = filterTools(body["tools"], func(raw json.RawMessage) string {
		var t struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &t) // an undecodable tool has no name and is kept
		return t.Name
	}, keep)
}

// filterTools keeps the tools whose name keep accepts (nameless ones too).
func filterTools(raw json.RawMessage, name func(json.RawMessage) string, keep func(string) bool) json.RawMessage {
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return raw
	}
	out := tools[:0:0]
	for _, t := range tools {
		if n := name(t); n == "" || keep(n) {
			out = append(out, t)
		}
	}
	return mustJSON(out)
}

func (anthropic) toMemory(m message) (memory.Message, bool) {
	if m.role != "user" && m.role != "assistant" {
		return memory.Message{}, false
	}
	var am aMessage
	if json.Unmarshal(m.raw, &am) != nil {
		return memory.Message{}, false
	}
	blocks, err := aContent(am.Content)
	if err != nil {
		return memory.Message{}, false
	}
	var out []map[string]any
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				out = append(out, map[string]any{"type": "text", "text": b.Text})
			}
		case "tool_use":
			in := b.Input
			if isNull(in) {
				in = json.RawMessage(`{}`)
			}
			out = append(out, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": in})
		case "tool_result":
			out = append(out, map[string]any{"type": "tool_result", "tool_use_id": b.ToolUseID, "content": aResultText(b.Content)})
		}
	}
	if len(out) == 0 {
		return memory.Message{}, false
	}
	if len(out) == 1 && out[0]["type"] == "text" {
		return memory.Message{Role: m.role, Content: mustJSON(out[0]["text"])}, true
	}
	return memory.Message{Role: m.role, Content: mustJSON(out)}, true
}

func (anthropic) parseReply(body []byte) (reply, error) {
	var r struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return reply{}, err
	}
	blocks, err := aContent(r.Content)
	if err != nil {
		return reply{}, err
	}
	out := reply{assistant: r.Content}
	var texts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use":
			out.calls = append(out.calls, toolCall{ID: b.ID, Name: b.Name, Args: b.Input})
		}
	}
	out.text = strings.Join(texts, "")
	return out, nil
}

func (anthropic) markReply(body []byte, prior []reply, marker string) ([]byte, error) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(r["content"], &blocks); err != nil {
		return nil, err
	}
	r["content"] = mustJSON(aMarked(prior, blocks, marker, false))
	return marshal(r)
}

// aMarked is an answer's content as the client gets it: the earlier
// rounds' text blocks, the last round's blocks, and the marker, added to
// the last block when it is text (a whole answer) or as a block of its own
// (separate, as a stream sends it).
func aMarked(prior []reply, blocks []map[string]json.RawMessage, marker string, separate bool) []map[string]json.RawMessage {
	var all []map[string]json.RawMessage
	for _, p := range prior {
		var pb []map[string]json.RawMessage
		_ = json.Unmarshal(p.assistant, &pb) // earlier rounds decoded before
		for _, b := range pb {
			if jsonString(b["type"]) == "text" {
				all = append(all, b)
			}
		}
	}
	all = append(all, blocks...)
	if n := len(all); !separate && n > 0 && jsonString(all[n-1]["type"]) == "text" {
		all[n-1]["text"] = mustJSON(jsonString(all[n-1]["text"]) + marker)
	} else {
		all = append(all, map[string]json.RawMessage{"type": mustJSON("text"), "text": mustJSON(marker)})
	}
	return all
}

func (anthropic) resent(prior []reply, last reply, stream bool, marker string) json.RawMessage {
	var blocks []map[string]json.RawMessage
	_ = json.Unmarshal(last.assistant, &blocks) // parseReply or the stream made it
	return mustJSON(map[string]any{"role": "assistant", "content": aMarked(prior, blocks, marker, stream)})
}

func (anthropic) appendRound(msgs []json.RawMessage, r reply, answers []toolAnswer) ([]json.RawMessage, error) {
	msgs = append(msgs, mustJSON(map[string]any{"role": "assistant", "content": r.assistant}))
	results := make([]map[string]any, 0, len(answers))
	for _, a := range answers {
		res := map[string]any{"type": "tool_result", "tool_use_id": a.call.ID, "content": a.text}
		if a.isError {
			res["is_error"] = true
		}
		results = append(results, res)
	}
	return append(msgs, mustJSON(map[string]any{"role": "user", "content": results})), nil
}

func (anthropic) model(_ string, body map[string]json.RawMessage) string {
	return jsonString(body["model"])
}

func (anthropic) streaming(_ string, body map[string]json.RawMessage) bool {
	return string(body["stream"]) == "true"
}

// aStream follows a Messages API event stream.
type aStream struct {
	round, offset int
	blocks        []*aStreamBlock
	byIndex       map[int]*aStreamBlock
	held          bool
	nForward      int
	// open counts blocks started and not stopped: the marker's block may
	// only start when none is.
	open int
	// stopped: the marker's place (message_delta) is passed; ended: the
	// message_stop came; failed: an error event came.
	stopped, ended, failed bool
}

type aStreamBlock struct {
	typ, id, name string
	text          strings.Builder
	input         strings.Builder
	signature     string
	data          string
}

func (anthropic) newStream(round, offset int) streamer {
	return &aStream{round: round, offset: offset, byIndex: map[int]*aStreamBlock{}}
}

func (s *aStream) event(raw, data []byte) (action, []byte) {
	var ev struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock aBlock `json:"content_block"`
		Delta        struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
			Thinking    string `json:"thinking"`
			Signature   string `json:"signature"`
		} `json:"delta"`
	}
	if len(data) == 0 || json.Unmarshal(data, &ev) != nil {
		return actForward, nil
	}
	switch ev.Type {
	case "message_start":
		if s.round > 0 {
			return actSkip, nil
		}
	case "content_block_start":
		b := &aStreamBlock{typ: ev.ContentBlock.Type, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
		b.text.WriteString(ev.ContentBlock.Text)
		s.blocks = append(s.blocks, b)
		s.byIndex[ev.Index] = b
		s.open++
		if b.typ == "tool_use" && isPagingTool(b.name) && !s.held {
			s.held = true
			return actHold, nil
		}
		s.nForward++
		return actForward, s.reindex(raw, data)
	case "content_block_delta":
		if b := s.byIndex[ev.Index]; b != nil {
			switch ev.Delta.Type {
			case "text_delta":
				b.text.WriteString(ev.Delta.Text)
			case "input_json_delta":
				b.input.WriteString(ev.Delta.PartialJSON)
			case "thinking_delta":
				b.text.WriteString(ev.Delta.Thinking)
			case "signature_delta":
				b.signature += ev.Delta.Signature
			}
		}
		return actForward, s.reindex(raw, data)
	case "content_block_stop":
		s.open = max(0, s.open-1)
		return actForward, s.reindex(raw, data)
	case "message_delta":
		return s.stop(), nil
	case "message_stop":
		s.ended = true
		return s.stop(), nil // an upstream that sent no message_delta
	case "error":
		// Overloaded mid-stream, say: the SDK raises on it.
		s.failed = true
	}
	return actForward, nil
}

// stop returns actStop the first time the message ends.
func (s *aStream) stop() action {
	if s.stopped {
		return actForward
	}
	s.stopped = true
	return actStop
}

// reindex shifts a continuation's block indexes after the blocks the
// client already has.
func (s *aStream) reindex(raw, data []byte) []byte {
	if s.offset == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	var i int
	if json.Unmarshal(m["index"], &i) != nil {
		return nil
	}
	m["index"] = mustJSON(i + s.offset)
	return sseEvent(eventName(raw), mustJSON(m), eolOf(raw))
}

func (s *aStream) reply() reply {
	var out reply
	var content []map[string]any
	var texts []string
	for _, b := range s.blocks {
		switch b.typ {
		case "text":
			texts = append(texts, b.text.String())
			content = append(content, map[string]any{"type": "text", "text": b.text.String()})
		case "thinking":
			content = append(content, map[string]any{"type": "thinking", "thinking": b.text.String(), "signature": b.signature})
		case "tool_use":
			in := json.RawMessage(b.input.String())
			if !json.Valid(in) || isNull(in) {
				in = json.RawMessage(`{}`)
			}
			out.calls = append(out.calls, toolCall{ID: b.id, Name: b.name, Args: in})
			content = append(content, map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": in})
		}
	}
	out.text = strings.Join(texts, "")
	out.assistant = mustJSON(content)
	return out
}

func (s *aStream) marker(text string) []byte {
	if s.open > 0 || s.failed {
		// Its block would start inside another: invalid framing.
		return nil
	}
	i := s.offset + s.nForward
	var b []byte
	b = append(b, sseEvent("content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]string{"type": "text", "text": ""}}), "\n")...)
	b = append(b, sseEvent("content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "text_delta", "text": text}}), "\n")...)
	b = append(b, sseEvent("content_block_stop", mustJSON(map[string]any{"type": "content_block_stop", "index": i}), "\n")...)
	return b
}

func (s *aStream) forwarded() int { return s.offset + s.nForward }

func (s *aStream) done() bool { return s.ended && !s.failed }
