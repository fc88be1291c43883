package share

import (
	"strings"
	"testing"
)

func TestPeek(t *testing.T) {
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", 10000) + `"}]}`
	tests := []struct {
		line, id, method string
	}{
		{`{"jsonrpc":"2.0","id":7,"result":` + big + `}`, `7`, ""},
		{`{"result":{},"jsonrpc":"2.0","id":"a"}`, `"a"`, ""},
		{`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`, `3`, "sampling/createMessage"},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, ``, "notifications/progress"},
		{`{"jsonrpc":"2.0","id":"a,b","result":{}}`, `"a,b"`, ""},
		{`{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"x"}}`, `4`, ""},
	}
	for _, tt := range tests {
		m, ok := peek([]byte(tt.line))
		if !ok || string(m.ID) != tt.id || m.Method != tt.method {
			t.Errorf("peek(%.60s): id %s method %q ok %v; want id %s method %q", tt.line, m.ID, m.Method, ok, tt.id, tt.method)
		}
	}
	if _, ok := peek([]byte(`[1,2]`)); ok {
		t.Errorf("peek of an array: ok, want not ok")
	}
}

func BenchmarkPeekLargeResult(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 20000) + `"}]}}`)
	for b.Loop() {
		peek(line)
	}
}
