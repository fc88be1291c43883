package proxy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory"
)

// gemini is the Generative Language API (models/*:generateContent and
// :streamGenerateContent?alt=sse). Field names are accepted in camelCase
// and snake_case, as the API does.
type gemini struct{}

func (gemini) format() Format        { return FormatGemini }
func (gemini) messagesField() string { return "contents" }

type gPart struct {
	Text             *string         `json:"text"`
	Thought          bool            `json:"thought"`
	FunctionCall     *gFunctionCall  `json:"functionCall"`
	FunctionCallS    *gFunctionCall  `json:"function_call"`
	FunctionResponse json.RawMessage `json:"functionResponse"`
	FunctionRespS    json.RawMessage `json:"function_response"`
	InlineData       json.RawMessage `json:"inlineData"`
}

type gFunctionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type gContent struct {
	Role  string  `json:"role"`
	Parts []gPart `json:"parts"`
}

func (p gPart) call() *gFunctionCall {
	if p.FunctionCall != nil {
		return p.FunctionCall
	}
	return p.FunctionCallS
}

func (p gPart) response() json.RawMessage {
	if len(p.FunctionResponse) > 0 {
		return p.FunctionResponse
	}
	return p.FunctionRespS
}

func (gemini) parse(raw json.RawMessage) (message, error) {
	var c gContent
	if err := json.Unmarshal(raw, &c); err != nil {
		return message{}, err
	}
	role := "user"
	if c.Role == "model" {
		role = "assistant"
	}
	out := message{raw: raw, role: role}
	var texts []string
	for _, p := range c.Parts {
		switch {
		case p.call() != nil:
			out.blocks = append(out.blocks, "functionCall")
			out.uses = append(out.uses, p.call().Name)
		case len(p.response()) > 0:
			out.blocks = append(out.blocks, "functionResponse")
			var fr struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(p.response(), &fr) // a nameless response pairs with nothing
			out.results = append(out.results, fr.Name)
		case p.Text != nil:
			out.blocks = append(out.blocks, "text")
			if !p.Thought {
				texts = append(texts, *p.Text)
			}
		default:
			out.blocks = append(out.blocks, "data")
		}
	}
	out.text = strings.Join(texts, "\n")
	out.onlyResults = role == "user" && len(out.results) > 0 && strings.TrimSpace(out.text) == ""
	return out, nil
}

func (gemini) strip(raw json.RawMessage) (json.RawMessage, string) {
	if !strings.Contains(string(raw), "vc:session=") {
		return raw, ""
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(raw, &c) != nil || jsonString(c["role"]) != "model" {
		return raw, ""
	}
	parts, id := stripContent(c["parts"])
	if id == "" {
		return raw, ""
	}
	c["parts"] = parts
	return mustJSON(c), id
}

func (gemini) systemKey(body map[string]json.RawMessage) string {
	if _, ok := body["system_instruction"]; ok {
		return "system_instruction"
	}
	return "systemInstruction"
}

func (g gemini) system(body map[string]json.RawMessage, msgs []json.RawMessage, text string) ([]json.RawMessage, error) {
	key := g.systemKey(body)
	part := map[string]string{"text": text}
	sys, ok := body[key]
	if !ok || isNull(sys) {
		body[key] = mustJSON(map[string]any{"parts": []any{part}})
		return msgs, nil
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal(sys, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	var parts []json.RawMessage
	if p, ok := c["parts"]; ok && !isNull(p) {
		if err := json.Unmarshal(p, &parts); err != nil {
			return nil, fmt.Errorf("%s.parts: %w", key, err)
		}
	}
	c["parts"] = mustJSON(append(parts, mustJSON(part)))
	body[key] = mustJSON(c)
	return msgs, nil
}

func (g gemini) addTools(body map[string]json.RawMessage, defs []toolDef) bool {
	for _, k := range []string{"toolConfig", "tool_config"} {
		if strings.Contains(strings.ToUpper(string(body[k])), `"NONE"`) || strings.Contains(strings.ToUpper(string(body[k])), "ALLOWED") {
			return false
		}
	}
	var tools []map[string]json.RawMessage
	if t, ok := body["tools"]; ok && !isNull(t) {
		if json.Unmarshal(t, &tools) != nil {
			return false
		}
	}
	for _, t := range tools {
		for k := range t {
			if k != "functionDeclarations" && k != "function_declarations" {
				return false // search or code tools do not mix with functions everywhere
			}
		}
	}
	for _, have := range g.tools(body) {
		for _, d := range defs {
			if have.Name == d.Name {
				return false
			}
		}
	}
	decls := make([]map[string]any, len(defs))
	for i, d := range defs {
		decls[i] = map[string]any{"name": d.Name, "description": d.Description, "parameters": d.Schema}
	}
	out := make([]any, 0, len(tools)+1)
	for _, t := range tools {
		out = append(out, t)
	}
	body["tools"] = mustJSON(append(out, map[string]any{"functionDeclarations": decls}))
	return true
}

func (gemini) forceNoTools(body map[string]json.RawMessage) {
	delete(body, "tool_config")
	body["toolConfig"] = json.RawMessage(`{"functionCallingConfig":{"mode":"NONE"}}`)
}

type gDecl struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func (gemini) tools(body map[string]json.RawMessage) []toolInfo {
	var tools []struct {
		A []gDecl `json:"functionDeclarations"`
		B []gDecl `json:"function_declarations"`
	}
	if json.Unmarshal(body["tools"], &tools) != nil {
		return nil
	}
	var out []toolInfo
	for _, t := range tools {
		for _, d := range append(t.A, t.B...) {
			out = append(out, toolInfo{d.Name, d.Description})
		}
	}
	return out
}

func (gemini) keepTools(body map[string]json.RawMessage, keep func(string) bool) {
	var tools []map[string]json.RawMessage
	if json.Unmarshal(body["tools"], &tools) != nil {
		return
	}
	for _, t := range tools {
		for _, k := range []string{"functionDeclarations", "function_declarations"} {
			if d, ok := t[k]; ok {
				t[k] = filterTools(d, func(raw json.RawMessage) string {
					var x gDecl
					_ = json.Unmarshal(raw, &x) // an undecodable declaration is kept
					return x.Name
				}, keep)
			}
		}
	}
	body["tools"] = mustJSON(tools)
}

// toMemory keeps a message's text, function calls and responses. A
// model's answer comes in pieces (a stream's chunks), which a client may
// send back as they came or joined: consecutive text parts of a model
// message are stored joined, and a call is named by its id or its place
// among the message's calls, so that both resends match what was stored.
func (gemini) toMemory(m message) (memory.Message, bool) {
	var c gContent
	if json.Unmarshal(m.raw, &c) != nil {
		return memory.Message{}, false
	}
	var blocks []map[string]any
	calls := 0
	for _, p := range c.Parts {
		switch {
		case p.call() != nil:
			args := p.call().Args
			if isNull(args) {
				args = json.RawMessage(`{}`)
			}
			id := p.call().ID
			if id == "" {
				id = fmt.Sprintf("%s#%d", p.call().Name, calls)
			}
			calls++
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": p.call().Name, "input": args})
		case len(p.response()) > 0:
			blocks = append(blocks, map[string]any{"type": "tool_result", "content": string(p.response())})
		case p.Text != nil && !p.Thought:
			if n := len(blocks); m.role == "assistant" && n > 0 && blocks[n-1]["type"] == "text" {
				blocks[n-1]["text"] = blocks[n-1]["text"].(string) + *p.Text
				continue
			}
			blocks = append(blocks, map[string]any{"type": "text", "text": *p.Text})
		}
	}
	kept := blocks[:0]
	for _, b := range blocks {
		if b["type"] != "text" || strings.TrimSpace(b["text"].(string)) != "" {
			kept = append(kept, b)
		}
	}
	if len(kept) == 0 {
		return memory.Message{}, false
	}
	if len(kept) == 1 && kept[0]["type"] == "text" {
		return memory.Message{Role: m.role, Content: mustJSON(kept[0]["text"])}, true
	}
	return memory.Message{Role: m.role, Content: mustJSON(kept)}, true
}

type gResponse struct {
	Candidates []struct {
		Content      gContent `json:"content"`
		FinishReason string   `json:"finishReason"`
	} `json:"candidates"`
	Error json.RawMessage `json:"error"`
}

func gReply(parts []gPart, raw json.RawMessage) reply {
	out := reply{assistant: raw}
	var b strings.Builder
	for _, p := range parts {
		if c := p.call(); c != nil {
			args := c.Args
			if isNull(args) {
				args = json.RawMessage(`{}`)
			}
			out.calls = append(out.calls, toolCall{ID: c.ID, Name: c.Name, Args: args})
		} else if p.Text != nil && !p.Thought {
			b.WriteString(*p.Text)
		}
	}
	out.text = b.String()
	return out
}

func (gemini) parseReply(body []byte) (reply, error) {
	var r struct {
		Candidates []struct {
			Content json.RawMessage `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return reply{}, err
	}
	if len(r.Candidates) == 0 {
		return reply{}, fmt.Errorf("no candidates")
	}
	var c struct {
		Parts json.RawMessage `json:"parts"`
	}
	if err := json.Unmarshal(r.Candidates[0].Content, &c); err != nil {
		return reply{}, err
	}
	var parts []gPart
	if !isNull(c.Parts) {
		if err := json.Unmarshal(c.Parts, &parts); err != nil {
			return reply{}, err
		}
	}
	return gReply(parts, c.Parts), nil
}

func (gemini) markReply(body []byte, prior []reply, marker string) ([]byte, error) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	var cands []map[string]json.RawMessage
	if err := json.Unmarshal(r["candidates"], &cands); err != nil || len(cands) == 0 {
		return nil, fmt.Errorf("no candidates")
	}
	var content map[string]json.RawMessage
	if err := json.Unmarshal(cands[0]["content"], &content); err != nil {
		return nil, err
	}
	if content == nil {
		content = map[string]json.RawMessage{"role": mustJSON("model")}
	}
	var parts []map[string]json.RawMessage
	if p, ok := content["parts"]; ok && !isNull(p) {
		if err := json.Unmarshal(p, &parts); err != nil {
			return nil, err
		}
	}
	all := gMarked(prior, parts, marker, false)
	content["parts"] = mustJSON(all)
	cands[0]["content"] = mustJSON(content)
	r["candidates"] = mustJSON(cands)
	return marshal(r)
}

// gMarked is an answer's parts as the client gets them: the earlier
// rounds' text, the last round's parts, and the marker, added to the last
// part when it is text (a whole answer) or as a part of its own (separate,
// as a stream sends it).
func gMarked(prior []reply, parts []map[string]json.RawMessage, marker string, separate bool) []map[string]json.RawMessage {
	var all []map[string]json.RawMessage
	for _, p := range prior {
		if p.text != "" {
			all = append(all, map[string]json.RawMessage{"text": mustJSON(p.text)})
		}
	}
	all = append(all, parts...)
	if n := len(all); !separate && n > 0 && all[n-1]["text"] != nil && string(all[n-1]["thought"]) != "true" {
		all[n-1]["text"] = mustJSON(jsonString(all[n-1]["text"]) + marker)
	} else {
		all = append(all, map[string]json.RawMessage{"text": mustJSON(marker)})
	}
	return all
}

func (gemini) resent(prior []reply, last reply, stream bool, marker string) json.RawMessage {
	var parts []map[string]json.RawMessage
	_ = json.Unmarshal(last.assistant, &parts) // parseReply or the stream made it
	return mustJSON(map[string]any{"role": "model", "parts": gMarked(prior, parts, marker, stream)})
}

func (gemini) appendRound(msgs []json.RawMessage, r reply, answers []toolAnswer) ([]json.RawMessage, error) {
	parts := r.assistant
	if isNull(parts) {
		parts = json.RawMessage(`[]`)
	}
	msgs = append(msgs, mustJSON(map[string]any{"role": "model", "parts": parts}))
	resp := make([]map[string]any, len(answers))
	for i, a := range answers {
		fr := map[string]any{"name": a.call.Name, "response": map[string]any{"content": a.text, "is_error": a.isError}}
		if a.call.ID != "" {
			fr["id"] = a.call.ID
		}
		resp[i] = map[string]any{"functionResponse": fr}
	}
	return append(msgs, mustJSON(map[string]any{"role": "user", "parts": resp})), nil
}

// model comes from the path: /v1beta/models/NAME:generateContent.
func (gemini) model(path string, _ map[string]json.RawMessage) string {
	i := strings.Index(path, "/models/")
	if i < 0 {
		return ""
	}
	name := path[i+len("/models/"):]
	if j := strings.IndexByte(name, ':'); j >= 0 {
		name = name[:j]
	}
	return name
}

func (gemini) streaming(path string, _ map[string]json.RawMessage) bool {
	return strings.Contains(path, ":streamGenerateContent")
}

// gStream follows a streamGenerateContent?alt=sse stream.
type gStream struct {
	parts []gPart
	held  bool
	eol   string
	// finished: a candidate gave its finishReason; failed: an error
	// object came instead of a chunk.
	finished, failed bool
}

func (gemini) newStream(int, int) streamer { return &gStream{eol: "\r\n"} }

func (s *gStream) event(raw, data []byte) (action, []byte) {
	s.eol = eolOf(raw)
	var r gResponse
	if len(data) == 0 || json.Unmarshal(data, &r) != nil {
		return actForward, nil
	}
	if !isNull(r.Error) {
		s.failed = true
	}
	if len(r.Candidates) == 0 {
		return actForward, nil
	}
	if r.Candidates[0].FinishReason != "" {
		s.finished = true
	}
	act := actForward
	for _, p := range r.Candidates[0].Content.Parts {
		s.parts = append(s.parts, p)
		if c := p.call(); c != nil && isPagingTool(c.Name) && !s.held {
			s.held = true
			act = actHold
		}
	}
	return act, nil
}

func (s *gStream) reply() reply {
	// Merge consecutive text pieces into one part for a continuation.
	var merged []gPart
	for _, p := range s.parts {
		if n := len(merged); n > 0 && p.Text != nil && merged[n-1].Text != nil && p.Thought == merged[n-1].Thought {
			t := *merged[n-1].Text + *p.Text
			merged[n-1].Text = &t
			continue
		}
		merged = append(merged, p)
	}
	raw := make([]map[string]any, 0, len(merged))
	for _, p := range merged {
		switch {
		case p.call() != nil:
			raw = append(raw, map[string]any{"functionCall": p.call()})
		case p.Text != nil:
			m := map[string]any{"text": *p.Text}
			if p.Thought {
				m["thought"] = true
			}
			raw = append(raw, m)
		}
	}
	return gReply(merged, mustJSON(raw))
}

func (s *gStream) marker(text string) []byte {
	return sseEvent("", mustJSON(map[string]any{"candidates": []any{map[string]any{
		"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": text}}}, "index": 0}}}), s.eol)
}

func (s *gStream) forwarded() int { return 0 }

func (s *gStream) done() bool { return s.finished && !s.failed }
