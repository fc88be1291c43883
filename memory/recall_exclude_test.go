package memory

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestRecallExclude checks that turns whose text the caller already holds
// are left out of recall, and only those, surrounding white space aside.
func TestRecallExclude(t *testing.T) {
	s := openTest(t, Options{})
	t0 := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	held := "The staging database password rotation happens every Tuesday at noon."
	other := "The staging database backup runs every night at two."
	ingest(t, s, "c", []Message{
		msg("user", "Ana", held, t0),
		msg("assistant", "", "Noted, rotation on Tuesdays.", t0.Add(time.Minute)),
		msg("user", "Ana", other, t0.Add(2*time.Minute)),
		msg("assistant", "", "Noted, nightly backups.", t0.Add(3*time.Minute)),
	})
	recall := func(exclude []string) RecallResult {
		t.Helper()
		res, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "when does the staging database rotation and backup happen?", Exclude: exclude})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	tests := []struct {
		name     string
		exclude  []string
		want     []string // turn ids that must be recalled
		absent   []string // and must not
		excluded int
	}{
		{"nothing held", nil, []string{"t1", "t3"}, nil, 0},
		{"one held", []string{"  " + held + "\n"}, []string{"t3"}, []string{"t1"}, 1},
		{"both held", []string{held, other}, nil, []string{"t1", "t3"}, 2},
		{"unknown text", []string{"something never said", ""}, []string{"t1", "t3"}, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := recall(tc.exclude)
			for _, id := range tc.want {
				if !slices.Contains(res.TurnIDs, id) {
					t.Errorf("turn %s not recalled: %v", id, res.TurnIDs)
				}
			}
			for _, id := range tc.absent {
				if slices.Contains(res.TurnIDs, id) {
					t.Errorf("turn %s recalled although the caller holds it: %v", id, res.TurnIDs)
				}
			}
			if res.Excluded != tc.excluded {
				t.Errorf("Excluded = %d, want %d", res.Excluded, tc.excluded)
			}
		})
	}
}
