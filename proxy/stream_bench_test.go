package proxy_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// streamChunks is how many SSE chunks the upstream sends per answer, one
// every streamGap.
const (
	streamChunks = 40
	streamGap    = 2 * time.Millisecond
)

// chunkUpstream streams an OpenAI answer whose every chunk carries the
// time it was written (unix ns), flushed one by one.
func chunkUpstream(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := range streamChunks {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t=%d \"}}]}\n\n", time.Now().UnixNano())
			fl.Flush()
			if i < streamChunks-1 {
				time.Sleep(streamGap)
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	})}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// chunkDelays posts a streaming request to base and returns, for each
// chunk, the time from its write upstream to its arrival here (ms).
func chunkDelays(tb testing.TB, base string, body string) []float64 {
	req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out []float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		now := time.Now().UnixNano()
		line := sc.Text()
		i := strings.Index(line, `"t=`)
		if i < 0 {
			continue
		}
		rest := line[i+3:]
		sent, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ' ')], 10, 64)
		if err != nil {
			tb.Fatalf("chunk %q: %v", line, err)
		}
		out = append(out, float64(now-sent)/1e6)
	}
	if len(out) != streamChunks {
		tb.Fatalf("got %d timed chunks, want %d", len(out), streamChunks)
	}
	return out
}

// BenchmarkStreamChunk measures what the proxy adds to each streamed chunk:
// the delay from the upstream's write of a chunk to the client's read of
// it, through the proxy and straight from the upstream, alternately, in
// the same run. The proxy forwards every chunk as it arrives and keeps a
// copy for storage; the difference of the two p50s is its cost per chunk.
//
//	go test -run '^$' -bench StreamChunk -benchtime 50x ./proxy/
func BenchmarkStreamChunk(b *testing.B) {
	up := chunkUpstream(b)
	via := newHarnessFor(b, up, nil).url
	var viaMS, directMS []float64
	for i := 0; b.Loop(); i++ {
		body := fmt.Sprintf(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Tell me about sailing plan %d"}]}`, i)
		viaMS = append(viaMS, chunkDelays(b, via, body)...)
		directMS = append(directMS, chunkDelays(b, up, body)...)
	}
	b.StopTimer()
	b.ReportMetric(percentile(viaMS, 50), "via-proxy-p50-ms")
	b.ReportMetric(percentile(viaMS, 99), "via-proxy-p99-ms")
	b.ReportMetric(percentile(directMS, 50), "direct-p50-ms")
	b.ReportMetric(percentile(directMS, 99), "direct-p99-ms")
	b.ReportMetric(percentile(viaMS, 50)-percentile(directMS, 50), "added-per-chunk-p50-ms")
}
