package proxy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

// TestResendSkipIsMemorys: alignBatch counts on resendSkip taking for a
// resend exactly what memory's ingest takes (memory's newInputs); were
// memory's rule to change, the proxy would store repeats twice or drop
// them. Random conversations over a few messages (repeats are the point)
// are stored whole in a real store, then a random batch is sent: memory
// must store all but resendSkip's count of it.
func TestResendSkipIsMemorys(t *testing.T) {
	store, err := memory.Open(context.Background(), memory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	words := []memory.Message{
		{Role: "user", Content: mustJSON("continue")},
		{Role: "assistant", Content: mustJSON("done")},
		{Role: "user", Content: mustJSON("yes")},
	}
	rng := rand.New(rand.NewPCG(7, 11))
	pick := func(n int) ([]memory.Message, []msgKey) {
		msgs, keys := make([]memory.Message, n), make([]msgKey, n)
		for i := range msgs {
			msgs[i] = words[rng.IntN(len(words))]
			keys[i] = keyOf(msgs[i])
		}
		return msgs, keys
	}
	for i := range 300 {
		conv := fmt.Sprintf("c%d", i)
		stored, sk := pick(1 + rng.IntN(8))
		batch, bk := pick(1 + rng.IntN(6))
		ctx := context.Background()
		// One batch into an empty conversation keeps every message.
		if res, err := store.Ingest(ctx, memory.IngestRequest{ConversationID: conv, Messages: stored}); err != nil || res.Stored != len(stored) {
			t.Fatalf("%s: storing the conversation: %+v %v", conv, res, err)
		}
		res, err := store.Ingest(ctx, memory.IngestRequest{ConversationID: conv, Messages: batch})
		if err != nil {
			t.Fatal(err)
		}
		if want := len(batch) - resendSkip(sk, bk); res.Stored != want {
			t.Fatalf("%s: stored %v, then sent %v: memory stored %d, resendSkip says %d", conv, sk, bk, res.Stored, want)
		}
	}
}
