package bench

import (
	"fmt"

	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

// NewCounter returns the cl100k counter that the store measures its budgets
// with (tokens.Cl100k), once its ranks are loaded: a benchmark's figures
// must be exact, so ranks that failed to load are an error here, not a
// fallback to counting bytes.
func NewCounter() (*tokens.Counter, error) {
	c := tokens.Cl100k()
	if err := c.Err(); err != nil {
		return nil, fmt.Errorf("cl100k token counter: %w", err)
	}
	return c, nil
}
