package proxy

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory"
)

// message is one message of a request, parsed for the proxy's decisions.
type message struct {
	raw  json.RawMessage
	role string // system, user, assistant or tool
	text string
	// blocks are the content block types, for the dashboard.
	blocks []string
	// uses and results are tool call ids (Gemini: function names) issued
	// and answered by this message.
	uses, results []string
	// onlyResults: a user message that answers tool calls and says nothing
	// new, so it continues the turn instead of starting one.
	onlyResults bool
}

// toolCall is one tool call in a model's answer.
type toolCall struct {
	ID   string
	Name string
	Args json.RawMessage
	// argText is the arguments as the model wrote them (OpenAI's string,
	// which Args makes valid JSON), for the answer as the client resends it.
	argText string
}

// reply is a model's answer, as far as the proxy needs it.
type reply struct {
	text  string
	calls []toolCall
	// assistant is the answer as the format's assistant message content
	// (Anthropic content blocks, an OpenAI message, Gemini parts), for a
	// continuation.
	assistant json.RawMessage
	// resent is the whole answer (every round) as the client will send it
	// back in its next request's history, set by exchange for storing.
	resent json.RawMessage
}

// toolAnswer is the proxy's answer to one paging tool call.
type toolAnswer struct {
	call    toolCall
	text    string
	isError bool
}

// toolDef is a tool offered to the model.
type toolDef struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// toolInfo is one of the client's own tools (seed 002 narrowing).
type toolInfo struct {
	Name, Description string
}

// dialect is one API format's way of saying things.
type dialect interface {
	format() Format
	// messagesField is the body field holding the history.
	messagesField() string
	parse(raw json.RawMessage) (message, error)
	// strip removes session markers from an assistant message, returning
	// the session id found ("" and raw unchanged when none).
	strip(raw json.RawMessage) (json.RawMessage, string)
	// system puts text where the format keeps its system prompt.
	system(body map[string]json.RawMessage, msgs []json.RawMessage, text string) ([]json.RawMessage, error)
	// addTools offers defs to the model; false when the client forbids or
	// forces tools, or already has tools by those names.
	addTools(body map[string]json.RawMessage, defs []toolDef) bool
	// forceNoTools makes the next answer text only (last paging round).
	forceNoTools(body map[string]json.RawMessage)
	// tools lists the client's tools; keepTools drops the others.
	tools(body map[string]json.RawMessage) []toolInfo
	keepTools(body map[string]json.RawMessage, keep func(name string) bool)
	toMemory(m message) (memory.Message, bool)
	parseReply(body []byte) (reply, error)
	// markReply prepends earlier rounds' text and appends the marker.
	markReply(body []byte, prior []reply, marker string) ([]byte, error)
	newStream(round, offset int) streamer
	// resent is the assistant message the client sends back in its next
	// request's history after getting this answer (prior are the paging
	// rounds before last, marker the session marker it got): the proxy
	// stores the answer from it, as it stores any message of a history, so
	// that the next request's resend of it is recognised as stored.
	resent(prior []reply, last reply, stream bool, marker string) json.RawMessage
	appendRound(msgs []json.RawMessage, r reply, answers []toolAnswer) ([]json.RawMessage, error)
	model(path string, body map[string]json.RawMessage) string
	streaming(path string, body map[string]json.RawMessage) bool
}

// action is what the stream loop does with one upstream event.
type action int

const (
	actForward action = iota // write it to the client now
	actHold                  // a paging call starts: hold this and the rest
	actStop                  // the answer's last event: the marker goes first
	actSkip                  // drop it (a continuation's repeated opening)
)

// streamer follows one streamed answer, event by event.
type streamer interface {
	// event inspects one SSE event and returns what to do, and the bytes
	// to write when they differ from raw (nil: raw).
	event(raw, data []byte) (action, []byte)
	reply() reply
	// marker renders the events that carry the session marker (nil when
	// they cannot go where the stream is).
	marker(text string) []byte
	// done reports whether the upstream ended the answer as its format
	// ends a whole one, without an error event: a stream that broke off
	// is neither marked nor stored (the client retries it).
	done() bool
	// forwarded counts content blocks written to the client (Anthropic
	// continuations renumber theirs after these).
	forwarded() int
}

// Session markers: an HTML comment, invisible in rendered Markdown.
var markerRE = regexp.MustCompile(`\s*<!-- vc:session=([A-Za-z0-9._:-]{1,128}) -->`)

func markerText(id string) string { return "\n\n<!-- vc:session=" + id + " -->" }

// stripMarker removes every marker from s and returns the last session id.
func stripMarker(s string) (string, string) {
	if !strings.Contains(s, "<!-- vc:session=") {
		return s, ""
	}
	id := ""
	for _, m := range markerRE.FindAllStringSubmatch(s, -1) {
		id = m[1]
	}
	if id == "" {
		return s, ""
	}
	return markerRE.ReplaceAllString(s, ""), id
}

// marshal is json.Marshal without HTML escaping, so markers and the
// client's text keep their < and > on the wire.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := marshal(v)
	if err != nil {
		panic(err) // only called with values that always marshal
	}
	return b
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// jsonString decodes a JSON string ("" for anything else).
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// sseEvent renders one SSE event with an optional event name.
func sseEvent(name string, data []byte, eol string) []byte {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + eol)
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString(eol + eol)
	return b.Bytes()
}

// eolOf returns the line ending an upstream event uses.
func eolOf(raw []byte) string {
	if bytes.Contains(raw, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// eventName returns an SSE event's "event:" field.
func eventName(raw []byte) string {
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		if v, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("event:")); ok {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}
