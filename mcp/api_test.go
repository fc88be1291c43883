package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

func apiServer(t *testing.T, opts HTTPOptions) string {
	t.Helper()
	st := openStore(t)
	opts.API = st
	h := NewHTTPHandler(NewServer(st, Options{Version: "test"}), opts)
	ts := httptest.NewServer(h) // 127.0.0.1
	t.Cleanup(func() {
		h.Shutdown(context.Background())
		ts.Close()
	})
	return ts.URL
}

func apiCall(t *testing.T, method, url, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Errorf("%s %s: %d, body is not JSON: %v", method, url, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// TestAPIRefusalsAreJSON: the transport's refusals (foreign Origin, body
// too large) answer /api/ in JSON, with what to do.
func TestAPIRefusalsAreJSON(t *testing.T) {
	base := apiServer(t, HTTPOptions{MaxBodyBytes: 4096})
	code, out := apiCall(t, "GET", base+"/api/config", "", map[string]string{"Origin": "http://evil.example"})
	if code != http.StatusForbidden || !strings.Contains(fmt.Sprint(out["error"]), "--allow-origin") {
		t.Errorf("foreign Origin: got %d %v", code, out)
	}
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`
	code, out = apiCall(t, "POST", base+"/api/compact", big, nil)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(fmt.Sprint(out["error"]), "max_body_bytes") {
		t.Errorf("large body: got %d %v", code, out)
	}
}

// TestAPIReadOnly: on a read-only data directory the REST API answers
// reads, and a compaction is refused with 403 and the store's message.
func TestAPIReadOnly(t *testing.T) {
	dir := t.TempDir()
	st, err := memory.Open(context.Background(), memory.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Ingest(context.Background(), memory.IngestRequest{Messages: []memory.Message{{Role: "user", Content: json.RawMessage(`"The boat leaves at seven."`)}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := memory.Open(context.Background(), memory.Options{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	h := NewHTTPHandler(NewServer(ro, Options{Version: "test"}), HTTPOptions{API: ro})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown(context.Background())
		ts.Close()
	})
	if code, out := apiCall(t, "GET", ts.URL+"/api/status", "", nil); code != http.StatusOK {
		t.Errorf("status: got %d %v", code, out)
	}
	code, out := apiCall(t, "POST", ts.URL+"/api/compact", `{"messages":[{"role":"user","content":"a new one"}]}`, nil)
	if code != http.StatusForbidden || !strings.Contains(fmt.Sprint(out["error"]), "is served read-only") {
		t.Errorf("compact on a read-only store: got %d %v", code, out)
	}
}

// TestAPIConcurrent changes the settings while compacting and reading the
// status over HTTP (run with -race).
func TestAPIConcurrent(t *testing.T) {
	base := apiServer(t, HTTPOptions{})
	msgs, _ := json.Marshal(chatMessages(10))
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				var code int
				var out map[string]any
				switch w {
				case 0:
					code, out = apiCall(t, "POST", base+"/api/config", fmt.Sprintf(`{"keep_last": %d, "protected_turns": %d}`, 1+i%4, 2+i), nil)
				case 1:
					code, out = apiCall(t, "POST", base+"/api/compact", fmt.Sprintf(`{"conversation_id":"c%d","messages":%s}`, i%2, msgs), nil)
				case 2:
					code, out = apiCall(t, "GET", base+"/api/status", "", nil)
				}
				if code != http.StatusOK {
					t.Errorf("worker %d: got %d %v", w, code, out)
				}
			}
		}()
	}
	wg.Wait()
	_, cfg := apiCall(t, "GET", base+"/api/config", "", nil)
	if cfg["keep_last"] != 4.0 || cfg["protected_turns"] != 9.0 {
		t.Errorf("last change not in force: %v", cfg)
	}
}
