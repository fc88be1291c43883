package mcp

import (
	"context"
	"fmt"

	"github.com/vc-mcp/vc-mcp/memory"
)

// The fake has no context items; the tests of items.go use the real store.

func (f *fakeMemory) ContextItems(ctx context.Context, id string) (memory.ContextItemsResult, error) {
	return memory.ContextItemsResult{ConversationID: conv(id), Items: []memory.ContextItemInfo{}}, nil
}

func (f *fakeMemory) AddContextItem(ctx context.Context, id, name string) (memory.ContextItemsResult, error) {
	return memory.ContextItemsResult{}, fmt.Errorf("%w: no context item %q: none are configured", memory.ErrNotFound, name)
}

func (f *fakeMemory) RemoveContextItem(ctx context.Context, id, name string) (memory.ContextItemsResult, error) {
	return f.AddContextItem(ctx, id, name)
}

func (f *fakeMemory) ContextItem(name string) (memory.ContextItem, error) {
	return memory.ContextItem{}, fmt.Errorf("%w: no context item %q: none are configured", memory.ErrNotFound, name)
}

func (f *fakeMemory) Requests(ctx context.Context, id string) ([]memory.RequestRecord, error) {
	return []memory.RequestRecord{}, nil
}
