package memory

// TEMPORARY: signatures of the Store API while the engine is being written.
// This file is replaced by the real implementation.

import (
	"context"
	"errors"
)

var errUnimplemented = errors.New("not implemented yet")

// Store is a data directory's memory: master logs, the bbolt store and the
// Bleve index. Safe for concurrent use.
type Store struct{}

// Open opens (creating if needed) the data directory opts.Dir.
func Open(ctx context.Context, opts Options) (*Store, error) { return nil, errUnimplemented }

// Close releases the data directory.
func (s *Store) Close() error { return nil }

// Ingest appends messages to a conversation (compact_context).
func (s *Store) Ingest(ctx context.Context, req IngestRequest) (IngestResult, error) {
	return IngestResult{}, errUnimplemented
}

// Recall assembles context for a message within a token budget (recall_context).
func (s *Store) Recall(ctx context.Context, req RecallRequest) (RecallResult, error) {
	return RecallResult{}, errUnimplemented
}

// Expand pages a topic in (expand_topic).
func (s *Store) Expand(ctx context.Context, req ExpandRequest) (ExpandResult, error) {
	return ExpandResult{}, errUnimplemented
}

// Collapse pages a topic out (collapse_topic).
func (s *Store) Collapse(ctx context.Context, req CollapseRequest) (CollapseResult, error) {
	return CollapseResult{}, errUnimplemented
}

// FindQuote searches every stored original turn (find_quote).
func (s *Store) FindQuote(ctx context.Context, req FindQuoteRequest) (FindQuoteResult, error) {
	return FindQuoteResult{}, errUnimplemented
}

// Status describes a conversation's memory (domain_status). An empty id
// means the default conversation.
func (s *Store) Status(ctx context.Context, conversationID string) (Status, error) {
	return Status{}, errUnimplemented
}

// Domain returns one tag's summaries and segments.
func (s *Store) Domain(ctx context.Context, conversationID, tag string) (Domain, error) {
	return Domain{}, errUnimplemented
}

// Conversations lists every conversation in the store.
func (s *Store) Conversations(ctx context.Context) ([]ConversationInfo, error) {
	return nil, errUnimplemented
}

// Rebuild deletes the derived bbolt file and Bleve index of opts.Dir and
// recreates them from the master logs. The directory must not be open.
func Rebuild(ctx context.Context, opts Options, progress Progress) error { return errUnimplemented }

// ValidateConversationID checks a conversation id: 1-128 characters of
// [A-Za-z0-9._:-], not "." or "..".
func ValidateConversationID(id string) error { return errUnimplemented }
