package proxy

import (
	"context"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Memory is what the proxy needs of the memory engine. *memory.Store
// implements it; so can a client of a shared memory daemon.
type Memory interface {
	Ingest(ctx context.Context, req memory.IngestRequest) (memory.IngestResult, error)
	Recall(ctx context.Context, req memory.RecallRequest) (memory.RecallResult, error)
	FindQuote(ctx context.Context, req memory.FindQuoteRequest) (memory.FindQuoteResult, error)
	Expand(ctx context.Context, req memory.ExpandRequest) (memory.ExpandResult, error)
	Collapse(ctx context.Context, req memory.CollapseRequest) (memory.CollapseResult, error)
	TagsOfTexts(ctx context.Context, conversationID string, texts []string) (map[string][]string, error)
}

var _ Memory = (*memory.Store)(nil)
