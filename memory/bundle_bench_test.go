package memory

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// BenchmarkBundle exports a 5,000-turn compacted conversation, reads the
// bundle back and imports it into an empty data directory (replay and
// full-text indexing included), reporting turns/s for each step.
func BenchmarkBundle(b *testing.B) {
	const turns = 5000
	ctx := context.Background()
	src := openTest(b, Options{ContextWindow: 20000})
	msgs := chat(turns, t0)
	for i := 0; i < len(msgs); i += 500 {
		ingest(b, src, "big", msgs[i:i+500])
	}
	var buf bytes.Buffer
	var exp, rd, imp time.Duration
	for b.Loop() {
		buf.Reset()
		start := time.Now()
		if _, err := src.ExportBundle(ctx, &buf, BundleExportOptions{}); err != nil {
			b.Fatal(err)
		}
		exp += time.Since(start)
		start = time.Now()
		bundle, err := ReadBundle(bytes.NewReader(buf.Bytes()))
		if err != nil {
			b.Fatal(err)
		}
		rd += time.Since(start)
		dst := openTest(b, Options{})
		start = time.Now()
		if _, err := dst.ImportBundle(ctx, bundle, BundleImportOptions{}, nil); err != nil {
			b.Fatal(err)
		}
		if err := dst.WaitIndexed(ctx); err != nil {
			b.Fatal(err)
		}
		imp += time.Since(start)
		if err := dst.Close(); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N * turns)
	b.ReportMetric(n/exp.Seconds(), "export-turns/s")
	b.ReportMetric(n/rd.Seconds(), "read-turns/s")
	b.ReportMetric(n/imp.Seconds(), "import-turns/s")
	b.ReportMetric(float64(buf.Len())/turns, "bytes/turn")
}
