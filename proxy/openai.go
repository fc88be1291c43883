package proxy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory"
)

// openAI is the Chat Completions API (/v1/chat/completions), which most
// OpenAI-compatible servers also speak.
type openAI struct{}

func (openAI) format() Format        { return FormatOpenAI }
func (openAI) messagesField() string { return "messages" }

type oToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []oToolCall     `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// oText is the text of OpenAI content: a string or an array of parts.
func oText(raw json.RawMessage) (string, []string, error) {
	if isNull(raw) {
		return "", nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, []string{"text"}, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("content must be a string or an array of parts: %w", err)
	}
	var texts, types []string
	for _, p := range parts {
		types = append(types, p.Type)
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), types, nil
}

func (openAI) parse(raw json.RawMessage) (message, error) {
	var m oMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return message{}, err
	}
	text, types, err := oText(m.Content)
	if err != nil {
		return message{}, err
	}
	role := m.Role
	if role == "developer" {
		role = "system"
	}
	out := message{raw: raw, role: role, text: text, blocks: types}
	for _, c := range m.ToolCalls {
		out.uses = append(out.uses, c.ID)
		out.blocks = append(out.blocks, "tool_call")
	}
	if m.ToolCallID != "" {
		out.results = []string{m.ToolCallID}
		out.blocks = append(out.blocks, "tool_result")
	}
	return out, nil
}

func (openAI) strip(raw json.RawMessage) (json.RawMessage, string) { return stripAssistantMarker(raw) }

func (openAI) system(_ map[string]json.RawMessage, msgs []json.RawMessage, text string) ([]json.RawMessage, error) {
	// After the client's own leading system messages: their prefix (and
	// the provider's prompt cache) stays as it was.
	at := 0
	for at < len(msgs) {
		var m struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(msgs[at], &m) != nil || (m.Role != "system" && m.Role != "developer") {
			break
		}
		at++
	}
	out := make([]json.RawMessage, 0, len(msgs)+1)
	out = append(out, msgs[:at]...)
	out = append(out, mustJSON(map[string]string{"role": "system", "content": text}))
	return append(out, msgs[at:]...), nil
}

func (o openAI) addTools(body map[string]json.RawMessage, defs []toolDef) bool {
	if c, ok := body["tool_choice"]; ok && (jsonString(c) == "none" || (len(c) > 0 && c[0] == '{')) {
		return false
	}
	if _, ok := body["functions"]; ok {
		return false
	}
	var tools []json.RawMessage
	if t, ok := body["tools"]; ok && !isNull(t) {
		if json.Unmarshal(t, &tools) != nil {
			return false
		}
	}
	for _, have := range o.tools(body) {
		for _, d := range defs {
			if have.Name == d.Name {
				return false
			}
		}
	}
	for _, d := range defs {
		tools = append(tools, mustJSON(map[string]any{"type": "function", "function": map[string]any{
			"name": d.Name, "description": d.Description, "parameters": d.Schema}}))
	}
	body["tools"] = mustJSON(tools)
	return true
}

func (openAI) forceNoTools(body map[string]json.RawMessage) {
	body["tool_choice"] = mustJSON("none")
}

func (openAI) tools(body map[string]json.RawMessage) []toolInfo {
	var tools []struct {
		Function struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"function"`
	}
	if json.Unmarshal(body["tools"], &tools) != nil {
		return nil
	}
	out := make([]toolInfo, len(tools))
	for i, t := range tools {
		out[i] = toolInfo{t.Function.Name, t.Function.Description}
	}
	return out
}

func (openAI) keepTools(body map[string]json.RawMessage, keep func(string) bool) {
	body["tools"] = filterTools(body["tools"], func(raw json.RawMessage) string {
		var t struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		_ = json.Unmarshal(raw, &t) // an undecodable tool has no name and is kept
		return t.Function.Name
	}, keep)
}

func (openAI) toMemory(m message) (memory.Message, bool) {
	var om oMessage
	if json.Unmarshal(m.raw, &om) != nil {
		return memory.Message{}, false
	}
	switch m.role {
	case "user", "assistant", "tool":
	default:
		return memory.Message{}, false
	}
	out := memory.Message{Role: m.role, ToolCallID: om.ToolCallID}
	if strings.TrimSpace(m.text) != "" {
		out.Content = mustJSON(m.text)
	}
	if len(om.ToolCalls) > 0 {
		calls := make([]map[string]any, len(om.ToolCalls))
		for i, c := range om.ToolCalls {
			calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]string{"name": c.Function.Name, "arguments": c.Function.Arguments}}
		}
		out.ToolCalls = mustJSON(calls)
	}
	if out.Content == nil && out.ToolCalls == nil {
		return memory.Message{}, false
	}
	return out, true
}

type oResponse struct {
	Choices []struct {
		Message json.RawMessage `json:"message"`
	} `json:"choices"`
}

func (openAI) parseReply(body []byte) (reply, error) {
	var r oResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return reply{}, err
	}
	if len(r.Choices) == 0 {
		return reply{}, fmt.Errorf("no choices")
	}
	var m oMessage
	if err := json.Unmarshal(r.Choices[0].Message, &m); err != nil {
		return reply{}, err
	}
	text, _, _ := oText(m.Content)
	out := reply{text: text, assistant: r.Choices[0].Message}
	for _, c := range m.ToolCalls {
		args := json.RawMessage(c.Function.Arguments)
		if !json.Valid(args) {
			args = json.RawMessage(`{}`)
		}
		out.calls = append(out.calls, toolCall{ID: c.ID, Name: c.Function.Name, Args: args, argText: c.Function.Arguments})
	}
	return out, nil
}

func (openAI) markReply(body []byte, prior []reply, marker string) ([]byte, error) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	var choices []map[string]json.RawMessage
	if err := json.Unmarshal(r["choices"], &choices); err != nil || len(choices) == 0 {
		return nil, fmt.Errorf("no choices")
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(choices[0]["message"], &msg); err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, p := range prior {
		b.WriteString(p.text)
	}
	text, _, _ := oText(msg["content"])
	b.WriteString(text)
	b.WriteString(marker)
	msg["content"] = mustJSON(b.String())
	choices[0]["message"] = mustJSON(msg)
	r["choices"] = mustJSON(choices)
	return marshal(r)
}

// resent: the client keeps the message's text (every round's, as
// markReply and the stream give it) and its tool calls, arguments as the
// model wrote them; streamed or not, it is the same message.
func (openAI) resent(prior []reply, last reply, _ bool, marker string) json.RawMessage {
	var b strings.Builder
	for _, p := range prior {
		b.WriteString(p.text)
	}
	b.WriteString(last.text)
	b.WriteString(marker)
	m := map[string]any{"role": "assistant", "content": b.String()}
	if len(last.calls) > 0 {
		calls := make([]map[string]any, len(last.calls))
		for i, c := range last.calls {
			args := c.argText
			if args == "" && !isNull(c.Args) {
				args = string(c.Args)
			}
			calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]string{"name": c.Name, "arguments": args}}
		}
		m["tool_calls"] = calls
	}
	return mustJSON(m)
}

func (openAI) appendRound(msgs []json.RawMessage, r reply, answers []toolAnswer) ([]json.RawMessage, error) {
	calls := make([]map[string]any, len(r.calls))
	for i, c := range r.calls {
		calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]string{"name": c.Name, "arguments": string(c.Args)}}
	}
	var content any
	if r.text != "" {
		content = r.text
	}
	msgs = append(msgs, mustJSON(map[string]any{"role": "assistant", "content": content, "tool_calls": calls}))
	for _, a := range answers {
		msgs = append(msgs, mustJSON(map[string]any{"role": "tool", "tool_call_id": a.call.ID, "content": a.text}))
	}
	return msgs, nil
}

func (openAI) model(_ string, body map[string]json.RawMessage) string {
	return jsonString(body["model"])
}

func (openAI) streaming(_ string, body map[string]json.RawMessage) bool {
	return string(body["stream"]) == "true"
}

// oStream follows a Chat Completions chunk stream.
type oStream struct {
	text    strings.Builder
	calls   map[int]*toolCall
	args    map[int]*strings.Builder
	order   []int
	held    bool
	stopped bool // the marker's place is passed: a finish_reason or [DONE]
	failed  bool // an error chunk came mid-stream
	last    struct {
		ID      string          `json:"id"`
		Created json.RawMessage `json:"created"`
		Model   string          `json:"model"`
	}
}

func (openAI) newStream(int, int) streamer {
	return &oStream{calls: map[int]*toolCall{}, args: map[int]*strings.Builder{}}
}

func (s *oStream) event(_, data []byte) (action, []byte) {
	if string(data) == "[DONE]" {
		if s.stopped {
			return actForward, nil
		}
		s.stopped = true
		return actStop, nil
	}
	var ch struct {
		ID      string          `json:"id"`
		Created json.RawMessage `json:"created"`
		Model   string          `json:"model"`
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Content   *string     `json:"content"`
				ToolCalls []oToolCall `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	if len(data) == 0 || json.Unmarshal(data, &ch) != nil {
		return actForward, nil
	}
	if !isNull(ch.Error) {
		// The API's way to fail mid-stream: the SDK raises on it.
		s.failed = true
		return actForward, nil
	}
	if ch.ID != "" {
		s.last.ID, s.last.Created, s.last.Model = ch.ID, ch.Created, ch.Model
	}
	act := actForward
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		if c.Delta.Content != nil {
			s.text.WriteString(*c.Delta.Content)
		}
		for _, tc := range c.Delta.ToolCalls {
			i := 0
			if tc.Index != nil {
				i = *tc.Index
			}
			call, ok := s.calls[i]
			if !ok {
				call = &toolCall{}
				s.calls[i], s.args[i] = call, &strings.Builder{}
				s.order = append(s.order, i)
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Function.Name != "" {
				call.Name += tc.Function.Name
				if isPagingTool(call.Name) && !s.held {
					s.held = true
					act = actHold
				}
			}
			s.args[i].WriteString(tc.Function.Arguments)
		}
		if c.FinishReason != nil && *c.FinishReason != "" && act == actForward && !s.stopped {
			s.stopped = true
			act = actStop
		}
	}
	return act, nil
}

func (s *oStream) reply() reply {
	out := reply{text: s.text.String()}
	for _, i := range s.order {
		c := *s.calls[i]
		c.argText = s.args[i].String()
		c.Args = json.RawMessage(c.argText)
		if !json.Valid(c.Args) {
			c.Args = json.RawMessage(`{}`)
		}
		out.calls = append(out.calls, c)
	}
	return out
}

func (s *oStream) marker(text string) []byte {
	created := s.last.Created
	if isNull(created) {
		created = json.RawMessage("0")
	}
	return sseEvent("", mustJSON(map[string]any{
		"id": s.last.ID, "object": "chat.completion.chunk", "created": created, "model": s.last.Model,
		"choices": []map[string]any{{"index": 0, "delta": map[string]string{"content": text}, "finish_reason": nil}},
	}), "\n")
}

func (s *oStream) forwarded() int { return 0 }

func (s *oStream) done() bool { return s.stopped && !s.failed }
