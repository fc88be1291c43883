package mcp

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

// TestResourceErrorMessages: a resource read answers the caller's
// mistakes and storage faults (a full disk, a damaged vc.db) with memory's
// message, which says what to do; only other faults are hidden.
func TestResourceErrorMessages(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	storage := &memory.StorageError{Message: "vc.db in /d is damaged: stop vc-mcp and run `vc-mcp rebuild --data-dir /d`", Err: errors.New("decode")}
	tests := []struct {
		err  error
		want string
	}{
		{storage, "run `vc-mcp rebuild --data-dir /d`"},
		{memory.ErrNotFound, "not found"},
		{errors.New("a bug"), "internal error"},
	}
	for _, tt := range tests {
		if got := resourceError(log, "virtualcontext://x", tt.err).Error(); !strings.Contains(got, tt.want) {
			t.Errorf("resourceError(%v) = %q, want it to say %q", tt.err, got, tt.want)
		}
	}
}
