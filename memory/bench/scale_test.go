package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary play a minimal stdio MCP server, so that
// TimeStart and CrashServe can be tested against a real child process.
func TestMain(m *testing.M) {
	if os.Getenv("VC_BENCH_FAKE_SERVER") == "1" {
		os.Exit(fakeServer(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

func fakeServer(in io.Reader, out io.Writer) int {
	if len(os.Args) >= 3 && os.Args[1] == "daemon" && os.Args[2] == "stop" {
		return 0 // no shared server to stop
	}
	if len(os.Args) < 3 || os.Args[1] != "serve" || os.Args[2] != "--data-dir" {
		fmt.Fprintln(os.Stderr, "fake server: want serve --data-dir DIR or daemon stop")
		return 2
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			continue
		}
		fmt.Fprintln(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
		switch req.Method {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"fake","version":"0"}}}`+"\n", req.ID)
		case "tools/call":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"nothing stored yet"}]}}`+"\n", req.ID)
		}
	}
	return 0
}

func TestTimeStart(t *testing.T) {
	t.Setenv("VC_BENCH_FAKE_SERVER", "1")
	st, err := TimeStart(context.Background(), os.Args[0], t.TempDir())
	if err != nil {
		t.Fatalf("TimeStart: %v", err)
	}
	if st.Initialize <= 0 || st.FirstRecall < st.Initialize {
		t.Errorf("TimeStart = %+v, want initialize > 0 and the first recall after it", st)
	}
	paused, err := timeStart(context.Background(), os.Args[0], t.TempDir(), 50*time.Millisecond)
	if err != nil {
		t.Fatalf("timeStart with a pause: %v", err)
	}
	if paused.RecallAfterPause <= 0 || paused.FirstRecall < paused.RecallAfterPause+50*time.Millisecond {
		t.Errorf("timeStart with a 50 ms pause = %+v, want the recall timed alone, after the pause", paused)
	}
	if _, err := TimeStart(context.Background(), "/nonexistent/vc-mcp", t.TempDir()); err == nil {
		t.Errorf("TimeStart on a missing binary: nil error, want one")
	}
	if err := CrashServe(context.Background(), os.Args[0], t.TempDir()); err != nil {
		t.Errorf("CrashServe: %v", err)
	}
}

func TestRunScaleWithFakeEngine(t *testing.T) {
	counter := testCounter(t)
	var engines []*fakeEngine
	var progress bytes.Buffer
	rep, err := RunScale(context.Background(), ScaleConfig{
		Sizes: []int{200, 400}, Queries: 20, Seed: 1, Open: fakeOpener(counter, false, &engines),
		SmallBatchTurns: 100, TempDir: t.TempDir(), Progress: &progress,
	})
	if err != nil {
		t.Fatalf("RunScale: %v", err)
	}
	if len(rep.Rows) != 2 || len(rep.Growth) != 1 {
		t.Fatalf("rows %d, growth %d; want 2, 1", len(rep.Rows), len(rep.Growth))
	}
	for _, row := range rep.Rows {
		if len(row.Ingest) != 2 || row.Ingest[0].Batch != 100 || row.Ingest[1].Batch != 2 || row.Ingest[1].Turns != 100 {
			t.Errorf("%d turns: ingest %+v, want batch 100 over all turns then batch 2 over 100", row.Turns, row.Ingest)
		}
		if row.Recall.N != 20 || row.FindQuote.N != 20 {
			t.Errorf("%d turns: %d recall and %d find_quote timings, want 20 each", row.Turns, row.Recall.N, row.FindQuote.N)
		}
		// The fake engine is BM25: it finds every needle.
		if row.QuoteHits != 20 {
			t.Errorf("%d turns: %d find_quote calls with hits, want 20", row.Turns, row.QuoteHits)
		}
		if row.Needles == 0 || row.NeedlesRecalled != row.Needles {
			t.Errorf("%d turns: needles %d/%d, want all", row.Turns, row.NeedlesRecalled, row.Needles)
		}
		if row.RecallQuiet.N != 20 || row.RecallWhileWriting.N != 20 || row.Writes.Turns < 2 || row.Writes.Batch != 2 {
			t.Errorf("%d turns: recall alone %d, while writing %d timings, writes %+v; want 20, 20 and some turns two per call", row.Turns, row.RecallQuiet.N, row.RecallWhileWriting.N, row.Writes)
		}
		if row.BM25.N != 20 || row.RecallOverBM25 <= 0 {
			t.Errorf("%d turns: %d BM25 baseline timings, ratio %v; want 20, > 0", row.Turns, row.BM25.N, row.RecallOverBM25)
		}
		if row.RawTextBytes <= 0 || row.DiskParts == nil { // the fake engine writes nothing
			t.Errorf("%d turns: raw text %d bytes, parts %v", row.Turns, row.RawTextBytes, row.DiskParts)
		}
	}
	if g := rep.Growth[0]; g.SizeRatio != 2 || g.From != 200 || g.To != 400 {
		t.Errorf("growth %+v", g)
	}
	if len(engines) != 4 {
		t.Errorf("opened %d stores, want 4 (two per size)", len(engines))
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 200 |", "| 400 |", "200 -> 400", "not measured", "plain BM25 top 10 p50/p99 ms", "BM25 packed to the budget", "recall while writing p50/p95/p99 ms"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if root, lines := wellFormed(t, rep.LatencyChart().SVG()); root != "svg" || lines != 5 {
		t.Errorf("latency chart: root %q, %d lines; want svg, 5", root, lines)
	}
}

func TestPeakRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	if got := peakRSS(); got <= 0 {
		t.Errorf("peakRSS() = %d, want > 0", got)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{1.4}, 1.4},
		{[]float64{2.1, 1.2, 1.5}, 1.5},
		{[]float64{1.9, 1.1, 1.3, 1.6}, 1.45},
	} {
		if got := median(tc.in); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
