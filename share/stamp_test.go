package share

import (
	"encoding/json"
	"strings"
	"testing"
)

// A compact_context call forwarded by a bridge carries an id on every
// message, stable across a re-send, so the store keeps each message once.
func TestStampMessageIDs(t *testing.T) {
	b := &Bridge{}
	tests := []struct {
		name, line string
		wantIDs    []string // "" = a bridge id; anything else is kept as is
	}{
		{"stamps every message", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"compact_context","arguments":{"messages":[{"role":"user","content":"yes"},{"role":"assistant","content":"ok"}]}}}` + "\n", []string{"", ""}},
		{"keeps a client id", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"compact_context","arguments":{"messages":[{"role":"user","content":"yes","id":"mine"}]}}}` + "\n", []string{"mine"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m message
			if err := json.Unmarshal([]byte(tt.line), &m); err != nil {
				t.Fatal(err)
			}
			got := b.stampMessageIDs(m, []byte(tt.line))
			if again := b.stampMessageIDs(m, []byte(tt.line)); string(again) != string(got) {
				t.Errorf("a re-send got other ids:\n%s\n%s", got, again)
			}
			if !strings.HasSuffix(string(got), "\n") {
				t.Errorf("the line lost its newline: %q", got)
			}
			var out struct {
				Params struct {
					Arguments struct {
						Messages []struct {
							ID string `json:"id"`
						} `json:"messages"`
					} `json:"arguments"`
				} `json:"params"`
			}
			if err := json.Unmarshal(got, &out); err != nil {
				t.Fatalf("stamped line is not JSON: %v\n%s", err, got)
			}
			msgs := out.Params.Arguments.Messages
			if len(msgs) != len(tt.wantIDs) {
				t.Fatalf("got %d messages, want %d", len(msgs), len(tt.wantIDs))
			}
			seen := map[string]bool{}
			for i, want := range tt.wantIDs {
				id := msgs[i].ID
				switch {
				case want == "" && !strings.HasPrefix(id, "bridge:"):
					t.Errorf("messages[%d].id = %q, want a bridge id", i, id)
				case want != "" && id != want:
					t.Errorf("messages[%d].id = %q, want %q", i, id, want)
				}
				if seen[id] {
					t.Errorf("id %q given twice", id)
				}
				seen[id] = true
			}
		})
	}
	// A host that reuses a request id once it is answered sends other
	// messages under it: they get other ids.
	first := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"compact_context","arguments":{"messages":[{"role":"user","content":"hello"}]}}}` + "\n"
	second := strings.Replace(first, "hello", "goodbye", 1)
	var m1, m2 message
	if json.Unmarshal([]byte(first), &m1) != nil || json.Unmarshal([]byte(second), &m2) != nil {
		t.Fatal("setup")
	}
	if got1, got2 := string(b.stampMessageIDs(m1, []byte(first))), string(b.stampMessageIDs(m2, []byte(second))); strings.Replace(got1, "hello", "goodbye", 1) == got2 {
		t.Errorf("two calls under one request id got the same stamped ids:\n%s\n%s", got1, got2)
	}
	if got := b.stampMessageIDs(message{Params: json.RawMessage(`"x"`)}, []byte("not json\n")); string(got) != "not json\n" {
		t.Errorf("an unparsable call was changed: %q", got)
	}
}
