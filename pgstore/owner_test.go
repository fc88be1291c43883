package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

// TestOwnerTravelsThroughPostgreSQL: the owner one process records when it
// first writes a conversation is enforced by another process, which only
// read the shared logs.
func TestOwnerTravelsThroughPostgreSQL(t *testing.T) {
	a, b := twoProcesses(t)
	ana, bo := memory.WithOwner(context.Background(), "ana"), memory.WithOwner(context.Background(), "bo")
	if _, err := a.Ingest(ana, memory.IngestRequest{ConversationID: "ana-notes", Messages: []memory.Message{{Role: "user", Content: text("The heron survey starts in April.")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.FindQuote(bo, memory.FindQuoteRequest{ConversationID: "ana-notes", Query: "heron"}); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("bo through the other process: %v, want a refusal", err)
	}
	if _, err := b.Ingest(bo, memory.IngestRequest{ConversationID: "ana-notes", Messages: []memory.Message{{Role: "user", Content: text("bo was here")}}}); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("bo writing through the other process: %v, want a refusal", err)
	}
	q, err := b.FindQuote(ana, memory.FindQuoteRequest{ConversationID: "ana-notes", Query: "heron"})
	if err != nil || len(q.Quotes) != 1 {
		t.Fatalf("ana through the other process: %+v %v", q, err)
	}
}
