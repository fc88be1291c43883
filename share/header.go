package share

import (
	"bytes"
	"encoding/json"
)

// peek reads a message's id and method without decoding the rest: it walks
// the top-level keys and stops once it knows the message's kind, so a large
// result is not decoded on its way through the bridge.
func peek(line []byte) (m message, ok bool) {
	if m, ok := peekFast(line); ok {
		return m, true
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return m, false
	}
	kind := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return m, false
		}
		key, _ := t.(string)
		switch key {
		case "id":
			if err := dec.Decode(&m.ID); err != nil {
				return m, false
			}
		case "method":
			if err := dec.Decode(&m.Method); err != nil {
				return m, false
			}
			kind = true
		case "result", "error":
			if len(m.ID) > 0 {
				return m, true
			}
			kind = true
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return m, false
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return m, false
			}
		}
		if kind && len(m.ID) > 0 && m.Method != "" {
			return m, true
		}
	}
	return m, true
}

var fastPrefix = []byte(`{"jsonrpc":"2.0","id":`)

// peekFast reads the shape mcp-go writes ({"jsonrpc":"2.0","id":ID,"result"
// | "error" | "method"...) in constant time; anything else is left to peek.
func peekFast(line []byte) (message, bool) {
	rest, ok := bytes.CutPrefix(line, fastPrefix)
	if !ok {
		return message{}, false
	}
	end := bytes.IndexByte(rest, ',')
	if end <= 0 || bytes.ContainsAny(rest[:end], `\{[`) {
		return message{}, false
	}
	if id := rest[:end]; id[0] == '"' && (len(id) < 2 || id[len(id)-1] != '"') {
		return message{}, false
	}
	m := message{ID: json.RawMessage(rest[:end])}
	rest = rest[end+1:]
	switch {
	case bytes.HasPrefix(rest, []byte(`"result":`)), bytes.HasPrefix(rest, []byte(`"error":`)):
		return m, true
	}
	return message{}, false
}
