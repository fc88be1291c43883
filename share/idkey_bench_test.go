package share

import (
	"encoding/json"
	"testing"
)

func BenchmarkIDKey(b *testing.B) {
	for _, id := range []string{`17`, `"req-17"`} {
		b.Run(id, func(b *testing.B) {
			raw := json.RawMessage(id)
			for b.Loop() {
				_ = idKey(raw)
			}
		})
	}
}
