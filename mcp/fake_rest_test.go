package mcp

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Turn, Watch and DefaultConversation complete fakeMemory's Memory.

func (f *fakeMemory) Turn(ctx context.Context, id, turn string) (memory.Turn, error) {
	if f.failWith != nil {
		return memory.Turn{}, f.failWith
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := conv(id)
	n, err := strconv.Atoi(strings.TrimPrefix(turn, c+"-"))
	if err != nil || n < 1 || n > len(f.turns[c]) {
		return memory.Turn{}, fmt.Errorf("%w: conversation %q has no turn %s", memory.ErrNotFound, c, turn)
	}
	t := f.turns[c][n-1]
	return memory.Turn{ConversationID: c, TurnID: t.id, Role: t.role, Speaker: t.name, Text: t.text,
		Timestamp: time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC), Tags: []string{"general"}}, nil
}

// Watch publishes nothing: the fake's changes are not observable. The
// subscription tests use the real store.
func (f *fakeMemory) Watch(ctx context.Context) <-chan memory.Change {
	ch := make(chan memory.Change)
	close(ch)
	return ch
}

func (f *fakeMemory) DefaultConversation() string { return "default" }

// ReadLog: the fake has no master log; read_log is tested on the real store.
func (f *fakeMemory) ReadLog(ctx context.Context, req memory.ReadLogRequest) (memory.ReadLogResult, error) {
	return memory.ReadLogResult{}, fmt.Errorf("%w: the fake memory has no master log", memory.ErrNotFound)
}
