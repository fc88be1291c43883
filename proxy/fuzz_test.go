package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDialects feeds arbitrary bytes to every parser the proxy runs on
// client and upstream data: none may panic.
func FuzzDialects(f *testing.F) {
	f.Add([]byte(`{"role":"assistant","content":[{"type":"text","text":"hi <!-- vc:session=abc -->"}]}`))
	f.Add([]byte(`{"role":"model","parts":[{"text":"x"},{"functionCall":{"name":"vc_find_quote","args":{}}}]}`))
	f.Add([]byte(`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"1","function":{"name":"f","arguments":"{"}}]}}]}`))
	f.Add([]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"name\":\"vc_find_quote\"}}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range []dialect{anthropic{}, openAI{}, gemini{}} {
			if m, err := d.parse(data); err == nil {
				d.toMemory(m)
			}
			d.strip(data)
			if r, err := d.parseReply(data); err == nil {
				d.appendRound(nil, r, []toolAnswer{{call: toolCall{ID: "x", Name: "vc_find_quote"}, text: "t"}})
			}
			d.markReply(data, nil, markerText("s"))
			var body map[string]json.RawMessage
			if json.Unmarshal(data, &body) == nil && body != nil {
				d.system(body, nil, "ctx")
				d.addTools(body, pagingTools)
				d.tools(body)
				d.keepTools(body, func(string) bool { return false })
			}
			st := d.newStream(1, 2)
			r := bufio.NewReader(bytes.NewReader(data))
			for {
				raw, ev, err := nextEvent(r)
				if len(raw) > 0 {
					st.event(raw, ev)
				}
				if err != nil {
					break
				}
			}
			st.reply()
			st.marker("m")
		}
	})
}
