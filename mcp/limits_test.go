package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func post(t *testing.T, url, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func TestBearerAuth(t *testing.T) {
	const token = "0123456789abcdef-token"
	h := NewHTTPHandler(NewServer(newFakeMemory(), Options{}), HTTPOptions{AuthToken: token})
	srv := httptest.NewServer(h)
	defer srv.Close()
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	tests := []struct {
		name   string
		header string
		want   int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer 0123456789abcdef-tokeX", http.StatusUnauthorized},
		{"prefix of the token", "Bearer 0123456789abcdef", http.StatusUnauthorized},
		{"basic scheme", "Basic " + token, http.StatusUnauthorized},
		{"right token", "Bearer " + token, http.StatusOK},
		{"scheme is case-insensitive", "bearer " + token, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.header != "" {
				hdr["Authorization"] = tt.header
			}
			res := post(t, srv.URL+"/mcp", initBody, hdr)
			if res.StatusCode != tt.want {
				t.Fatalf("status: got %d, want %d", res.StatusCode, tt.want)
			}
			if tt.want == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate: got %q, want a Bearer challenge", res.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// endless streams n bytes of a JSON-ish body without holding them.
type endless struct{ left int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), e.left)
	for i := range p[:n] {
		p[i] = 'a'
	}
	e.left -= n
	return int(n), nil
}

// TestBodyLimit: a 300 MB streamed body gets 413 and the process allocates
// a small, bounded amount for it (without the limit mcp-go's io.ReadAll
// would allocate about twice the body).
func TestBodyLimit(t *testing.T) {
	h := NewHTTPHandler(NewServer(newFakeMemory(), Options{}), HTTPOptions{})
	srv := httptest.NewServer(h)
	defer srv.Close()
	t.Cleanup(func() { h.Shutdown(context.Background()) })

	// Declared too large: refused before reading.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", &endless{left: 300 << 20})
	req.ContentLength = 300 << 20
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		res.Body.Close()
	}
	if err != nil || res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("declared 300 MB: got %v %v, want 413", res, err)
	}

	// Streamed without a length: read up to the limit, then refused.
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/mcp", io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"x","params":"`), &endless{left: 300 << 20}))
	req.ContentLength = -1
	res, err = http.DefaultClient.Do(req)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("streamed 300 MB: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "max_body_bytes") {
		t.Fatalf("streamed 300 MB: got %d %q, want 413 naming max_body_bytes", res.StatusCode, body)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("300 MB streamed body: %d MiB allocated in the process (client and server)", alloc>>20)
	if alloc > 64<<20 {
		t.Errorf("allocated %d MiB for a refused body; want under 64 MiB", alloc>>20)
	}

	// A body under the limit still works.
	if res := post(t, srv.URL+"/mcp", initBody, nil); res.StatusCode != http.StatusOK {
		t.Errorf("initialize: got %d, want 200", res.StatusCode)
	}
}

// TestIdleSessionsExpire: sessions past their idle TTL are dropped (their
// id gets 404), and new sessions beyond the cap get 503 until then.
func TestIdleSessionsExpire(t *testing.T) {
	const n = 60
	h := NewHTTPHandler(NewServer(newFakeMemory(), Options{}), HTTPOptions{SessionIdleTTL: time.Second, MaxSessions: n})
	srv := httptest.NewServer(h)
	defer srv.Close()
	t.Cleanup(func() { h.Shutdown(context.Background()) })

	var ids []string
	for range n {
		res := post(t, srv.URL+"/mcp", initBody, nil)
		id := res.Header.Get("Mcp-Session-Id")
		if res.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("initialize: got %d, session %q", res.StatusCode, id)
		}
		ids = append(ids, id)
	}
	if got := h.LiveSessions(); got != n {
		t.Fatalf("live sessions: got %d, want %d", got, n)
	}
	if res := post(t, srv.URL+"/mcp", initBody, nil); res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("session %d: got %d, want 503 with Retry-After", n+1, res.StatusCode)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if res := post(t, srv.URL+"/mcp", ping, map[string]string{"Mcp-Session-Id": ids[0]}); res.StatusCode != http.StatusOK {
		t.Fatalf("ping on a live session: got %d, want 200", res.StatusCode)
	}
	deadline := time.Now().Add(30 * time.Second)
	for h.LiveSessions() > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if got := h.LiveSessions(); got != 0 {
		t.Fatalf("live sessions after the idle TTL: got %d, want 0", got)
	}
	if res := post(t, srv.URL+"/mcp", ping, map[string]string{"Mcp-Session-Id": ids[1]}); res.StatusCode != http.StatusNotFound {
		t.Errorf("ping on an expired session: got %d, want 404", res.StatusCode)
	}
	if res := post(t, srv.URL+"/mcp", initBody, nil); res.StatusCode != http.StatusOK {
		t.Errorf("initialize after expiry: got %d, want 200", res.StatusCode)
	}
}

// getStream opens GET /mcp with hdr and returns its status once the headers
// arrive (or the request has waited a second), closing the stream.
func getStream(t *testing.T, url string, hdr map[string]string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestSessionlessGETRefused: a Streamable HTTP GET without Mcp-Session-Id
// (or with one no initialize gave) is refused and opens no session, so such
// streams never use up max_sessions; a GET on an initialized session and a
// legacy SSE stream still open.
func TestSessionlessGETRefused(t *testing.T) {
	const n = 3
	h := NewHTTPHandler(NewServer(newFakeMemory(), Options{}), HTTPOptions{MaxSessions: n})
	srv := httptest.NewServer(h)
	defer srv.Close()
	t.Cleanup(func() { h.Shutdown(context.Background()) })

	for range 2 * n {
		if got := getStream(t, srv.URL+"/mcp", nil); got != http.StatusBadRequest {
			t.Fatalf("GET /mcp without Mcp-Session-Id: got %d, want 400", got)
		}
	}
	if got := getStream(t, srv.URL+"/mcp", map[string]string{"Mcp-Session-Id": "vc-0b8a3e52-5f0e-4a8e-9d57-2a4b0c1d9e77"}); got != http.StatusNotFound {
		t.Fatalf("GET /mcp with a session id no initialize gave: got %d, want 404", got)
	}
	if got := h.LiveSessions(); got != 0 {
		t.Fatalf("live sessions after the refused GETs: %d, want 0", got)
	}
	var ids []string
	for i := range n {
		res := post(t, srv.URL+"/mcp", initBody, nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("initialize %d after the refused GETs: got %d, want 200", i+1, res.StatusCode)
		}
		ids = append(ids, res.Header.Get("Mcp-Session-Id"))
	}
	if got := getStream(t, srv.URL+"/mcp", map[string]string{"Mcp-Session-Id": ids[0]}); got != http.StatusOK {
		t.Errorf("GET /mcp on an initialized session: got %d, want 200", got)
	}
	if got := h.LiveSessions(); got != n {
		t.Errorf("live sessions: %d, want %d", got, n)
	}
	for _, id := range ids[1:] {
		req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", id)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}
	if got := getStream(t, srv.URL+"/sse", nil); got != http.StatusOK {
		t.Errorf("GET /sse (legacy SSE): got %d, want 200", got)
	}
}

// TestFailedInitializeOpensNoSession: an initialize answered with an error
// leaves no session behind to count against max_sessions, and its id (mcp-go
// sends one all the same) is refused afterwards.
func TestFailedInitializeOpensNoSession(t *testing.T) {
	const n = 2
	h := NewHTTPHandler(NewServer(newFakeMemory(), Options{}), HTTPOptions{MaxSessions: n})
	srv := httptest.NewServer(h)
	defer srv.Close()
	t.Cleanup(func() { h.Shutdown(context.Background()) })

	var failed []string
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`,
	} {
		res := post(t, srv.URL+"/mcp", body, nil)
		if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusBadRequest {
			t.Fatalf("bad initialize %s: got %d, want a JSON-RPC error (200 or 400)", body, res.StatusCode)
		}
		if id := res.Header.Get("Mcp-Session-Id"); id != "" {
			failed = append(failed, id)
		}
	}
	if got := h.LiveSessions(); got != 0 {
		t.Fatalf("live sessions after failed initializes: %d, want 0", got)
	}
	for i := range n {
		if res := post(t, srv.URL+"/mcp", initBody, nil); res.StatusCode != http.StatusOK {
			t.Fatalf("initialize %d after the failed ones: got %d, want 200", i+1, res.StatusCode)
		}
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for _, id := range failed {
		if res := post(t, srv.URL+"/mcp", ping, map[string]string{"Mcp-Session-Id": id}); res.StatusCode != http.StatusNotFound {
			t.Errorf("ping with the id of a failed initialize: got %d, want 404", res.StatusCode)
		}
	}
}

// TestStdioLineCap: an oversized line gets a JSON-RPC error with its id
// (wherever the id stands),
// the server keeps serving, and the line is never held whole in memory.
func TestStdioLineCap(t *testing.T) {
	const max = 1 << 20
	const big = 64 << 20
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeStdioWith(ctx, NewServer(newFakeMemory(), Options{}), inR, outW, StdioOptions{MaxLineBytes: max})
	}()
	lines := make(chan map[string]any, 10)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			json.Unmarshal(sc.Bytes(), &m)
			lines <- m
		}
	}()
	answer := func(id float64) map[string]any {
		t.Helper()
		for {
			select {
			case m := <-lines:
				if m["id"] == id {
					return m
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no answer to id %v", id)
			}
		}
	}
	fmt.Fprintln(inW, initBody)
	answer(1)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		io.WriteString(inW, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"find_quote","arguments":{"query":"`)
		io.Copy(inW, &endless{left: big})
		io.WriteString(inW, "\"}}}\n")
		fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	}()
	m := answer(7)
	errObj, _ := m["error"].(map[string]any)
	if errObj == nil || errObj["code"] != float64(-32600) || !strings.Contains(fmt.Sprint(errObj["message"]), "max_line_bytes") {
		t.Fatalf("oversized line: got %v, want a -32600 error naming max_line_bytes", m)
	}
	if m := answer(8); m["error"] != nil {
		t.Fatalf("ping after the oversized line: %v", m)
	}
	// A client that puts the id after the params (Python's json.dumps of
	// a dict filled in that order) gets the error under its id, so its
	// wait ends; an id inside a message is not taken for it.
	go func() {
		io.WriteString(inW, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"compact_context","arguments":{"messages":[{"role":"user","id":"m-1","content":"`)
		io.Copy(inW, &endless{left: 2 * max})
		io.WriteString(inW, "\"}]}},\"id\":31}\n")
	}()
	if errObj, _ := answer(31)["error"].(map[string]any); errObj == nil || !strings.Contains(fmt.Sprint(errObj["message"]), "max_line_bytes") {
		t.Fatalf("oversized line with its id last: %v, want the max_line_bytes error", errObj)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("64 MiB line: %d MiB allocated", alloc>>20)
	if alloc > 16<<20 {
		t.Errorf("allocated %d MiB for a dropped 64 MiB line; want under 16 MiB", alloc>>20)
	}
	cancel()
	inW.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdioWith did not return")
	}
}

// TestUnusedSessionsExpireSoon: a session no request has named since its
// initialize (its client sent the initialize and left before reading the
// id, so it can neither use nor delete it) holds a place under
// max_sessions for a minute, not for the whole idle TTL (found by a
// hostile review: six such initializes locked new clients out for 30
// minutes). A session in use keeps the idle TTL.
func TestUnusedSessionsExpireSoon(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s := newSessions(30 * time.Minute)
	s.now = func() time.Time { return now }
	abandoned, used := s.Generate(), s.Generate()
	if _, err := s.Validate(used); err != nil { // notifications/initialized
		t.Fatal(err)
	}
	now = now.Add(unusedTTL - time.Second)
	if got := s.live(); got != 2 {
		t.Fatalf("live before a minute: %d, want 2", got)
	}
	now = now.Add(2 * time.Second)
	if got := s.live(); got != 1 {
		t.Fatalf("live after a minute: %d, want 1 (the abandoned one expired)", got)
	}
	if _, err := s.Validate(abandoned); err == nil {
		t.Error("the abandoned session is still valid")
	}
	if _, err := s.Validate(used); err != nil {
		t.Errorf("the session in use expired after a minute: %v", err)
	}
	now = now.Add(30*time.Minute + time.Second)
	if got := s.live(); got != 0 {
		t.Errorf("live after the idle TTL: %d, want 0", got)
	}
}

// TestIDScanner: the top-level id of a request, wherever it stands and
// however the line is cut into pieces; never an id inside the params.
func TestIDScanner(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"id first", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, `7`},
		{"id last", `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"messages":[{"id":"u1","content":"x"}]}},"id":12}`, `12`},
		{"string id last", `{"method":"m","params":{"id":"inner"},"id":"abc-\"1\""}`, `"abc-\"1\""`},
		{"spaces", `{ "id" : 42 , "method":"m"}`, `42`},
		{"only inner ids", `{"method":"m","params":{"id":5,"x":[{"id":6}]}}`, `null`},
		{"id in a string", `{"method":"m","params":{"q":"\"id\":9"}}`, `null`},
		{"key containing id", `{"idx":3,"uuid":4,"method":"m"}`, `null`},
		{"null id", `{"id":null,"method":"m"}`, `null`},
		{"object id", `{"id":{"a":1},"method":"m"}`, `null`},
		{"cut short", `{"method":"m","id":12`, `null`},
		{"not an object", `[{"id":1}]`, `null`},
		{"the last id wins", `{"id":41,"method":"m","id":42}`, `42`},
		{"escaped member name", `{"\u0069d":81,"method":"m"}`, `81`},
		{"escaped quote in a key", `{"i\"d":1,"id":2}`, `2`},
		{"long string id", `{"method":"m","id":"` + strings.Repeat("x", 300) + `"}`, `"` + strings.Repeat("x", 300) + `"`},
	}
	for _, tt := range tests {
		for _, piece := range []int{1, 3, len(tt.line)} {
			var s idScanner
			for i := 0; i < len(tt.line); i += piece {
				s.feed([]byte(tt.line[i:min(i+piece, len(tt.line))]))
			}
			if got := string(s.id()); got != tt.want {
				t.Errorf("%s, fed %d byte(s) at a time: id %s, want %s", tt.name, piece, got, tt.want)
			}
		}
	}
}

// TestReadRequestLine: the line cap for readers of their own (the shared
// server's bridge): a line within the cap comes back whole, one over it is
// read through and answered under its id, and the next line is intact.
func TestReadRequestLine(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"messages":[{"id":"m","content":"` + strings.Repeat("x", 200_000) + `"}]}},"id":9}` + "\n"
	in := bufio.NewReaderSize(strings.NewReader(`{"id":1,"method":"ping"}`+"\n"+big+`{"id":2,"method":"ping"}`), 4096)
	line, answer, _, err := ReadRequestLine(in, 64<<10)
	if err != nil || answer != nil || string(line) != `{"id":1,"method":"ping"}`+"\n" {
		t.Fatalf("first line: %q %q %v", line, answer, err)
	}
	line, answer, n, err := ReadRequestLine(in, 64<<10)
	if err != nil || line != nil || n != int64(len(big)) || !strings.Contains(string(answer), `"id":9`) || !strings.Contains(string(answer), "max_line_bytes") {
		t.Fatalf("oversized line: line %d bytes, n %d, answer %s, %v", len(line), n, answer, err)
	}
	line, answer, _, err = ReadRequestLine(in, 64<<10)
	if err != io.EOF || answer != nil || string(line) != `{"id":2,"method":"ping"}` {
		t.Fatalf("line after it: %q %q %v", line, answer, err)
	}
}
