package llm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestMapOrdered(t *testing.T) {
	errBoom := errors.New("boom")
	cases := []struct {
		name    string
		limit   int
		n       int
		failAt  int // -1: never
		wantErr error
	}{
		{"empty", 4, 0, -1, nil},
		{"one worker", 1, 10, -1, nil},
		{"zero limit means one", 0, 5, -1, nil},
		{"more workers than items", 16, 3, -1, nil},
		{"many", 4, 200, -1, nil},
		{"error stops the rest", 3, 100, 10, errBoom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items := make([]int, tc.n)
			for i := range items {
				items[i] = i
			}
			var inFlight, peak, started atomic.Int64
			got, err := MapOrdered(t.Context(), tc.limit, items, func(ctx context.Context, i int) (string, error) {
				started.Add(1)
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(time.Duration(i%3) * time.Millisecond) // finish out of order
				if i == tc.failAt {
					return "", errBoom
				}
				return fmt.Sprint("r", i), ctx.Err()
			})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || got != nil {
					t.Fatalf("got %v, %v; want nil, %v", got, err, tc.wantErr)
				}
				if s := started.Load(); s >= int64(tc.n) {
					t.Errorf("got %d items started after an early error, want fewer than %d", s, tc.n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := make([]string, tc.n)
			for i := range want {
				want[i] = fmt.Sprint("r", i)
			}
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if limit := max(tc.limit, 1); peak.Load() > int64(limit) {
				t.Errorf("got peak concurrency %d, want at most %d", peak.Load(), limit)
			}
		})
	}
}

func TestMapOrderedCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var calls atomic.Int64
	_, err := MapOrdered(ctx, 2, make([]int, 50), func(ctx context.Context, _ int) (int, error) {
		switch n := calls.Add(1); {
		case n == 3:
			cancel()
		case n > 3:
			// The third call may be preempted between its count and its
			// cancel while the other worker runs every remaining item (a
			// flake under -race): a later call waits for the cancel.
			<-ctx.Done()
		}
		return 0, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if c := calls.Load(); c > 4 {
		t.Errorf("got %d calls, want at most 4 (the third cancels; the other worker's may have started)", c)
	}
}
