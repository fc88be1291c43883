package proxy

import (
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

// TestAlignBatch: where the batch for memory starts, for histories that
// extend, repeat, resend or depart from what the session stored last.
// Letters are messages; the last one of hist is the answer.
func TestAlignBatch(t *testing.T) {
	cases := []struct {
		name         string
		synced, hist string
		start        int
		ok           bool
	}{
		{name: "first store", synced: "", hist: "uA", ok: false},
		{name: "next exchange", synced: "uA", hist: "uAvB", start: 2, ok: true},
		{name: "repeat", synced: "uAcX", hist: "uAcXcX", start: 3, ok: true},
		{name: "repeat again", synced: "uAcXcX", hist: "uAcXcXcX", start: 3, ok: true},
		{name: "tool loop", synced: "uT", hist: "uTrA", start: 2, ok: true},
		{name: "retry, new answer", synced: "uAcX", hist: "uAcY", start: 3, ok: true},
		{name: "retry, same answer: the whole history", synced: "uAcX", hist: "uAcX", start: 0, ok: true},
		{name: "older message edited", synced: "uAvB", hist: "zAvBwC", start: 4, ok: true},
		{name: "last stored message differs", synced: "uAvB", hist: "uAvDwC", ok: false},
		{name: "history cut at the front", synced: "uAvB", hist: "vBwC", ok: false},
		// Found by a hostile review: one equal message at one place lined
		// these up, dropping the window's new "continue" as a retry and
		// storing the second client's older exchange again.
		{name: "sliding window, as long as a retry", synced: "sAcD", hist: "cDcE", ok: false},
		{name: "sliding window, shorter", synced: "sAcDcE", hist: "DcEcF", ok: false},
		{name: "second client on the conversation", synced: "bAxK", hist: "bAyKzKwK", ok: false},
		{name: "the message before the last three edited", synced: "uAvBwC", hist: "zAvBwCxD", start: 6, ok: true},
	}
	keys := func(s string) []msgKey {
		out := make([]msgKey, len(s))
		for i, c := range s {
			out[i] = keyOf(memory.Message{Role: "user", Content: mustJSON(string(c))})
		}
		return out
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start, ok := alignBatch(keys(tc.synced), keys(tc.hist), len(tc.hist)-1)
			if ok != tc.ok || ok && start != tc.start {
				t.Fatalf("alignBatch(%q, %q) = %d, %t; want %d, %t", tc.synced, tc.hist, start, ok, tc.start, tc.ok)
			}
		})
	}
}
