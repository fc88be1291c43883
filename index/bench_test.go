package index

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkAdd measures ingest throughput for different Add sizes, from
// one Add per client call (1-10 docs) to bulk rebuilds (1000). One
// operation ingests 10,000 new turns into a fresh index and closes it, so
// docs/s includes merging and the final write to disk.
func BenchmarkAdd(b *testing.B) {
	const total = 10_000
	docs := synthDocs(total, 11)
	for _, bc := range []struct {
		size int
		opts *Options
	}{
		{1, nil},
		{1, &Options{FlushDelay: -1}}, // unbuffered, for comparison
		{10, nil},
		{100, nil},
		{1000, nil},
	} {
		name := fmt.Sprintf("batch=%d", bc.size)
		if bc.opts != nil {
			name += "/unbuffered"
		}
		size := bc.size
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				ix, err := Open(filepath.Join(b.TempDir(), "idx"), bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				for i := 0; i < total; i += size {
					if err := ix.Add(ctx, docs[i:min(i+size, total)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := ix.Close(); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(b.N*total)/elapsed.Seconds(), "docs/s")
		})
	}
}

// BenchmarkSearch measures query latency on indexes of 10k and 100k turns
// (see buildIndex; -short skips 100k): plain BM25 text; text with a conversation
// filter, a boosting phrase, or highlighting; and all three.
func BenchmarkSearch(b *testing.B) {
	queries := synthQueries(500, 5)
	sizes := []int{10_000, 100_000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		ix := buildIndex(b, n)
		for _, mode := range []string{"text", "conversation", "phrase", "highlight", "all"} {
			b.Run(fmt.Sprintf("docs=%d/%s", n, mode), func(b *testing.B) {
				ctx := context.Background()
				var lat []time.Duration
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					q := Query{Text: queries[i%len(queries)], Limit: 10, DocText: testDocText}
					if mode == "conversation" || mode == "all" {
						q.Conversations = []string{fmt.Sprintf("c%d", i%10)}
					}
					if mode == "phrase" || mode == "all" {
						q.Phrases = []string{"the tax return"}
					}
					if mode == "highlight" || mode == "all" {
						q.Highlight = true
					}
					i++
					t0 := time.Now()
					hits, err := ix.Search(ctx, q)
					lat = append(lat, time.Since(t0))
					if err != nil || len(hits) == 0 {
						b.Fatalf("Search: %d hits, %v", len(hits), err)
					}
				}
				slices.Sort(lat)
				pct := func(p float64) float64 {
					return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
				}
				b.ReportMetric(pct(0.50), "p50_ms")
				b.ReportMetric(pct(0.99), "p99_ms")
			})
		}
		if err := ix.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// buildIndex adds n synthetic turns in Adds of 1000, closes and reopens
// the index (as a restarted server would find it) and warms it up.
func buildIndex(b *testing.B, n int) *Index {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "idx")
	ix, err := Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	docs := synthDocs(n, 1)
	rememberTexts(docs)
	for i := 0; i < n; i += 1000 {
		if err := ix.Add(ctx, docs[i:min(i+1000, n)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := ix.Close(); err != nil {
		b.Fatal(err)
	}
	if ix, err = Open(dir, nil); err != nil {
		b.Fatal(err)
	}
	for _, q := range synthQueries(50, 99) {
		if _, err := ix.Search(ctx, Query{Text: q}); err != nil {
			b.Fatal(err)
		}
	}
	return ix
}
