package memory

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkForget forgets one turn of a compacted conversation of 2,000
// turns: the cost of rewriting both logs and rebuilding the conversation's
// derived state (go test ./memory -run '^$' -bench Forget -benchtime 5x).
func BenchmarkForget(b *testing.B) {
	ctx := context.Background()
	s := forgetBenchStore(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seq := 10 + i*7
		r, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", TurnIDs: []string{fmt.Sprintf("t%d", seq)}})
		if err != nil || r.Forgotten != 1 {
			b.Fatalf("forget t%d: %+v %v", seq, r, err)
		}
	}
}

// BenchmarkRecallDuringForget times recalls made while each forget of
// BenchmarkForget's conversation runs: the longest a recall took
// (max-recall-ms) against the forget itself (forget-ms). A recall that
// waits for the forget takes about as long as it
// (go test ./memory -run '^$' -bench RecallDuringForget -benchtime 5x).
func BenchmarkRecallDuringForget(b *testing.B) {
	ctx := context.Background()
	s := forgetBenchStore(b)
	var forgetMS, maxRecallMS float64
	recalls := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seq := 10 + i*7
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", TurnIDs: []string{fmt.Sprintf("t%d", seq)}})
			done <- err
		}()
		for running := true; running; {
			select {
			case err := <-done:
				if err != nil {
					b.Fatal(err)
				}
				running = false
			default:
				t := time.Now()
				if _, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "what does the Kyoto ryokan cost?"}); err != nil {
					b.Fatal(err)
				}
				maxRecallMS = max(maxRecallMS, float64(time.Since(t).Microseconds())/1000)
				recalls++
			}
		}
		forgetMS += float64(time.Since(start).Microseconds()) / 1000
	}
	b.ReportMetric(forgetMS/float64(b.N), "forget-ms")
	b.ReportMetric(maxRecallMS, "max-recall-ms")
	b.ReportMetric(float64(recalls)/float64(b.N), "recalls/forget")
}

// forgetBenchStore is a store holding a compacted conversation "c" of
// 2,000 turns.
func forgetBenchStore(b *testing.B) *Store {
	s := openTest(b, Options{ContextWindow: 8000, ProtectedTurns: 4, noSync: true})
	msgs := chat(2000, t0)
	for i := 0; i < len(msgs); i += 100 {
		ingest(b, s, "c", msgs[i:i+100])
	}
	return s
}

// BenchmarkForgetBesideHistories forgets one turn of a small conversation
// in a store where other conversations have full request histories (200
// records each, none naming it): what looking through the other histories
// for recalls over every conversation adds to a forget
// (go test ./memory -run '^$' -bench ForgetBesideHistories -benchtime 20x).
func BenchmarkForgetBesideHistories(b *testing.B) {
	for _, others := range []int{0, 100, 400} {
		b.Run(fmt.Sprintf("histories=%d", others), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			var msgs []Message
			for i := range b.N + 1 {
				msgs = append(msgs, msg("user", "", fmt.Sprintf("note %d about the Zephyr service", i), time.Time{}))
			}
			if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: msgs}); err != nil {
				b.Fatal(err)
			}
			ids := make([]string, 40)
			inc := make([]Inclusion, 40)
			for i := range ids {
				ids[i] = fmt.Sprintf("t%d", 100+i*13)
				inc[i] = Inclusion{ID: ids[i], Kind: "turn", Mode: IncludeAgent, Tag: "deploy"}
			}
			for o := range others {
				conv := fmt.Sprintf("other-%d", o)
				for range RequestRetention {
					rec := &RequestRecord{ConversationID: conv, Budget: 2000, Memory: RequestMemory{MatchedTags: []string{"deploy", "zephyr"}, TurnIDs: ids, Included: inc}}
					if err := s.appendRequest(rec, s.logRewrites.Load()); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := s.flushRequests(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				if r, err := s.Forget(ctx, ForgetRequest{ConversationID: "c", TurnIDs: []string{fmt.Sprintf("t%d", i+1)}}); err != nil || r.Forgotten != 1 {
					b.Fatalf("forget t%d: %+v %v", i+1, r, err)
				}
			}
		})
	}
}
