package pgstore_test

import (
	"context"
	"crypto/sha256"
	"hash/fnv"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/vc-mcp/vc-mcp/internal/pgtest"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/pgstore"
)

// wordEmbedder is a deterministic bag-of-words embedder (hashed words,
// L2-normalised) that counts the texts it embeds: the test's model, so
// that what the cache saves is countable.
type wordEmbedder struct{ texts atomic.Int64 }

func (e *wordEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			h := fnv.New32a()
			h.Write([]byte(strings.Trim(w, ".,:;!?")))
			v[h.Sum32()%64]++
		}
		var n float64
		for _, f := range v {
			n += float64(f * f)
		}
		if n > 0 {
			for j := range v {
				v[j] /= float32(math.Sqrt(n))
			}
		}
		out[i] = v
	}
	return out, nil
}

// TestVectorsSharedThroughPostgreSQL: a second process caching a memory
// another process embedded reads the turn vectors from PostgreSQL instead
// of computing them, and recalls the same.
func TestVectorsSharedThroughPostgreSQL(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	openWith := func(emb *wordEmbedder) (*memory.Store, *pgstore.Vectors) {
		logs, err := pgstore.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		vecs := logs.CacheVectors(emb, nil)
		s, err := memory.Open(ctx, memory.Options{Dir: t.TempDir(), Shared: logs, Embedder: vecs})
		if err != nil {
			t.Fatal(err)
		}
		return s, vecs
	}
	embA, embB := &wordEmbedder{}, &wordEmbedder{}
	a, va := openWith(embA)
	defer a.Close()
	msgs := chatAbout(40)
	for i := 0; i < len(msgs); i += 10 {
		ingest(t, a, "team", msgs[i:i+10]...)
	}
	if err := a.WaitEmbedded(ctx); err != nil {
		t.Fatal(err)
	}
	if _, computed := va.Counts(); computed < int64(len(msgs)) {
		t.Fatalf("A computed %d vectors for %d turns", computed, len(msgs))
	}

	b, vb := openWith(embB)
	defer b.Close()
	q := memory.RecallRequest{ConversationID: "team", Message: "what about the catamaran jib sail schedule?", MaxTokens: 600}
	rb, err := b.Recall(ctx, q) // B caches the conversation, then embeds its turns
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WaitEmbedded(ctx); err != nil {
		t.Fatal(err)
	}
	hits, computed := vb.Counts()
	t.Logf("process B: %d vectors read from PostgreSQL, %d computed (the model probe and queries)", hits, computed)
	if hits < int64(len(msgs)) {
		t.Errorf("B read %d vectors from PostgreSQL, want at least the %d turns'", hits, len(msgs))
	}
	if computed > 3 || embB.texts.Load() != computed+1 {
		t.Errorf("B's model embedded %d texts (%d through the cache), want only the probe and the queries", embB.texts.Load(), computed)
	}
	rb, _ = b.Recall(ctx, q)
	ra, err := a.Recall(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Text != rb.Text {
		t.Errorf("A and B recall differently with shared vectors:\nA: %s\nB: %s", ra.Text, rb.Text)
	}

	// Forget drops the forgotten turn's vector from the shared table.
	vectorsOf := func(text string) int {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		sum := sha256.Sum256([]byte(text))
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM vc_vectors WHERE text_hash = $1`, sum[:]).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if vectorsOf(secretFact) != 1 {
		t.Fatal("setup: the secret turn has no vector in PostgreSQL")
	}
	if _, err := b.Forget(ctx, memory.ForgetRequest{ConversationID: "team", Query: "quartzlynx"}); err != nil {
		t.Fatal(err)
	}
	if n := vectorsOf(secretFact); n != 0 {
		t.Errorf("the forgotten turn's vector is still in PostgreSQL (%d rows)", n)
	}
	if n := vectorsOf(msgs[5]); n != 1 {
		t.Errorf("a kept turn's vector: %d rows, want 1", n)
	}
}
