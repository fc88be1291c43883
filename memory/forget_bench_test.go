package memory

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkForget forgets one turn of a compacted conversation of 2,000
// turns: the cost of rewriting both logs and rebuilding the conversation's
// derived state (go test ./memory -run '^$' -bench Forget -benchtime 5x).
func BenchmarkForget(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, Options{ContextWindow: 8000, ProtectedTurns: 4, noSync: true})
	msgs := chat(2000, t0)
	for i := 0; i < len(msgs); i += 100 {
		ingest(b, s, "c", msgs[i:i+100])
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seq := 10 + i*7
		r, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", TurnIDs: []string{fmt.Sprintf("t%d", seq)}})
		if err != nil || r.Forgotten != 1 {
			b.Fatalf("forget t%d: %+v %v", seq, r, err)
		}
	}
}
