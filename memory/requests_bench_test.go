package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/requestlog"
)

// BenchmarkRequestHistoryOpen times what the first recall of a
// conversation after a start pays to number its record ("open": the
// history's next sequence number) beside reading every record back (what
// the requests tool does), on a full history of real recall records.
func BenchmarkRequestHistoryOpen(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, Options{})
	for i := 0; i < 2000; i += 50 {
		msgs := make([]Message, 50)
		for j := range msgs {
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			msgs[j] = msg(role, "", fmt.Sprintf("turn %d about the deployment of service %d, its database migration %d and the rollback plan for region %d", i+j, (i+j)%37, (i+j)%11, (i+j)%5), time.Time{})
		}
		if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: msgs}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < RequestRetention+RequestRetention/2-1; i++ {
		if _, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: fmt.Sprintf("what was the rollback plan for service %d?", i%37), MaxTokens: 2000}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.flushRequests(); err != nil {
		b.Fatal(err)
	}
	path := s.requestsPath("c")
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			h := requestlog.New(path, requestFormat)
			if err := h.Open(); err != nil || h.Next() != RequestRetention+RequestRetention/2 {
				b.Fatalf("open: next %d, %v", h.Next(), err)
			}
		}
	})
	b.Run("read-all", func(b *testing.B) {
		for b.Loop() {
			if recs, err := s.readRequestHistory("c"); err != nil || len(recs) != RequestRetention+RequestRetention/2-1 {
				b.Fatalf("read: %d records, %v", len(recs), err)
			}
		}
	})
}
