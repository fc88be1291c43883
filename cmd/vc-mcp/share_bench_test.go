package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/vc-mcp/vc-mcp/share"
)

// BenchmarkSharedHosts is the load run of the shared server: 8 hosts, each
// alternating compact_context and recall_context on its own conversation
// for VC_BENCH_SECONDS (default 60) seconds, first through stdio bridges
// (`vc-mcp serve` processes, as hosts run them), then directly on the
// socket (share.Dial, no bridge). Every acknowledged message must be
// stored exactly once. Run it alone:
//
//	go test -run '^$' -bench BenchmarkSharedHosts -benchtime 1x ./cmd/vc-mcp/
func BenchmarkSharedHosts(b *testing.B) {
	secs := 60
	if v := os.Getenv("VC_BENCH_SECONDS"); v != "" {
		fmt.Sscan(v, &secs)
	}
	const hosts = 8
	for b.Loop() {
		home := b.TempDir()
		env := hostEnv(home)
		stopOwner(b, env)
		dir := sharedDataDir(home)
		keep := startHost(b, env, "keeper") // keeps the server up between the runs

		bridged := make([]*client.Client, hosts)
		for i := range bridged {
			bridged[i] = startHost(b, env, fmt.Sprintf("bridge-%d", i)).c
		}
		rb := loadRun(b, "bridge", bridged, time.Duration(secs)*time.Second)

		direct := make([]*client.Client, hosts)
		for i := range direct {
			c, err := share.Dial(context.Background(), share.Config{DataDir: dir, Version: buildVersion()})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			initAs(b, c, fmt.Sprintf("direct-%d", i))
			direct[i] = c
		}
		rd := loadRun(b, "direct", direct, time.Duration(secs)*time.Second)
		_ = keep

		for _, tool := range []string{"compact_context", "recall_context"} {
			b50, b99 := rb.pct(tool, 50), rb.pct(tool, 99)
			d50, d99 := rd.pct(tool, 50), rd.pct(tool, 99)
			b.Logf("%-15s bridge: %6.1f/s p50 %6.2f ms p99 %6.2f ms | direct: %6.1f/s p50 %6.2f ms p99 %6.2f ms | bridge adds p50 %+.2f ms",
				tool, rb.rate(tool), ms(b50), ms(b99), rd.rate(tool), ms(d50), ms(d99), ms(b50-d50))
			b.ReportMetric(ms(b50-d50), tool+"-bridge-added-p50-ms")
		}
		// The bridge's own cost, without 16 clients competing for 2 cores:
		// one client at a time, interleaved.
		seq := map[string][]time.Duration{}
		for i := range 400 {
			for _, m := range []struct {
				name string
				c    *client.Client
			}{{"bridge", bridged[0]}, {"direct", direct[0]}} {
				t0 := time.Now()
				r, err := callErr(m.c, "recall_context", map[string]any{"conversation_id": "load-direct-0", "message": "which codeword was " + codeword("load", i), "max_tokens": 500}, nil)
				if err != nil || r.IsError {
					b.Fatalf("sequential recall: %v", err)
				}
				seq[m.name] = append(seq[m.name], time.Since(t0))
			}
		}
		for _, l := range seq {
			slices.Sort(l)
		}
		sb, sd := seq["bridge"][len(seq["bridge"])/2], seq["direct"][len(seq["direct"])/2]
		b.Logf("one client at a time, recall_context: bridge p50 %.2f ms, direct p50 %.2f ms: the bridge adds %+.2f ms", ms(sb), ms(sd), ms(sb-sd))
		b.ReportMetric(ms(sb-sd), "unloaded-bridge-added-p50-ms")
		b.Logf("bridge: %d errors, %d lost, %d duplicated; direct: %d errors, %d lost, %d duplicated",
			rb.errors, rb.lost, rb.dup, rd.errors, rd.lost, rd.dup)
		if rb.errors+rb.lost+rb.dup+rd.errors+rd.lost+rd.dup != 0 {
			b.Errorf("want 0 errors, 0 lost, 0 duplicated")
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type loadResult struct {
	took              time.Duration
	lat               map[string][]time.Duration
	errors, lost, dup int
}

func (r *loadResult) pct(tool string, p int) time.Duration {
	l := r.lat[tool]
	if len(l) == 0 {
		return 0
	}
	return l[(len(l)-1)*p/100]
}

func (r *loadResult) rate(tool string) float64 { return float64(len(r.lat[tool])) / r.took.Seconds() }

// loadRun drives every client for d, then checks each conversation holds
// exactly the acknowledged messages.
func loadRun(b *testing.B, mode string, clients []*client.Client, d time.Duration) *loadResult {
	res := &loadResult{lat: map[string][]time.Duration{}}
	var mu sync.Mutex
	acked := make([]int, len(clients))
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i, c := range clients {
		wg.Go(func() {
			conv := fmt.Sprintf("load-%s-%d", mode, i)
			local := map[string][]time.Duration{}
			errs := 0
			for n := 0; time.Now().Before(deadline); n++ {
				w := codeword("load", n)
				t0 := time.Now()
				r, err := callErr(c, "compact_context", map[string]any{"conversation_id": conv, "messages": []any{
					msg("user", fmt.Sprintf("Message %d of host %d: remember the codeword %s.", n, i, w)),
				}}, nil)
				if err != nil || r.IsError {
					errs++
					continue
				}
				local["compact_context"] = append(local["compact_context"], time.Since(t0))
				acked[i]++
				t0 = time.Now()
				r, err = callErr(c, "recall_context", map[string]any{"conversation_id": conv, "message": "which codeword was " + w, "max_tokens": 500}, nil)
				if err != nil || r.IsError {
					errs++
					continue
				}
				local["recall_context"] = append(local["recall_context"], time.Since(t0))
			}
			mu.Lock()
			defer mu.Unlock()
			res.errors += errs
			for k, v := range local {
				res.lat[k] = append(res.lat[k], v...)
			}
		})
	}
	wg.Wait()
	res.took = time.Since(start)
	for _, l := range res.lat {
		slices.Sort(l)
	}
	for i, c := range clients {
		r, err := callErr(c, "domain_status", map[string]any{"conversation_id": fmt.Sprintf("load-%s-%d", mode, i)}, nil)
		if err != nil || r.IsError {
			b.Fatalf("domain_status: %v", err)
		}
		var st struct {
			Totals struct{ Turns int } `json:"totals"`
		}
		raw, _ := json.Marshal(r.StructuredContent)
		if len(r.RawStructuredContent) > 0 {
			raw = r.RawStructuredContent
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			b.Fatalf("domain_status: %v", err)
		}
		switch {
		case st.Totals.Turns < acked[i]:
			res.lost += acked[i] - st.Totals.Turns
		case st.Totals.Turns > acked[i]:
			res.dup += st.Totals.Turns - acked[i]
		}
	}
	return res
}
