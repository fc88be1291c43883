package llm

import (
	"context"
	"fmt"
	"sync"
)

// MapOrdered calls fn on every item with at most limit calls running at
// once (limit < 1 means 1) and returns the results in the items' order.
// The first error cancels the context handed to the remaining calls, stops
// new ones from starting, and is returned with its item's index; results
// are then nil. All goroutines have ended when MapOrdered returns.
//
// It holds no lock while fn runs, so callers can gather inputs under a
// store lock, release it, fan out the model calls, and write the results
// back in order under the lock again.
func MapOrdered[T, R any](ctx context.Context, limit int, items []T, fn func(context.Context, T) (R, error)) ([]R, error) {
	if limit < 1 {
		limit = 1
	}
	limit = min(limit, len(items))
	out := make([]R, len(items))
	if len(items) == 0 {
		return out, ctx.Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		errIndex int
		next     int
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil || next >= len(items) || ctx.Err() != nil {
			return 0, false
		}
		i := next
		next++
		return i, true
	}
	for range limit {
		wg.Go(func() {
			for {
				i, ok := take()
				if !ok {
					return
				}
				r, err := fn(ctx, items[i])
				if err != nil {
					mu.Lock()
					// The first error wins; the others are mostly the
					// cancellation it caused.
					if firstErr == nil {
						firstErr, errIndex = err, i
					}
					mu.Unlock()
					cancel()
					return
				}
				out[i] = r
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, fmt.Errorf("item %d: %w", errIndex, firstErr)
	}
	if err := ctx.Err(); err != nil && next < len(items) {
		return nil, err
	}
	return out, nil
}
