package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// apiClient calls the REST API of a running server.
type apiClient struct {
	t     *testing.T
	base  string
	token string
}

// do sends a request and returns the status and the decoded JSON body.
func (a apiClient) do(method, path, body string, hdr ...string) (int, map[string]any) {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		a.t.Fatalf("%s %s: got Content-Type %q (body %q), want JSON", method, path, ct, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		a.t.Fatalf("%s %s: body is not JSON: %q", method, path, raw)
	}
	return resp.StatusCode, out
}

func (a apiClient) want(method, path, body string, status int, errContains string) map[string]any {
	a.t.Helper()
	got, out := a.do(method, path, body)
	if got != status {
		a.t.Fatalf("%s %s %s: got %d %v, want %d", method, path, body, got, out, status)
	}
	if errContains != "" {
		if msg, _ := out["error"].(string); !strings.Contains(msg, errContains) {
			a.t.Fatalf("%s %s: got error %q, want it to contain %q", method, path, msg, errContains)
		}
	}
	return out
}

// TestRESTAPI drives /api/* on the built binary over real HTTP on
// 127.0.0.1: the bearer token is required, mistakes are 400 with a message,
// a change applies at once and survives a restart.
func TestRESTAPI(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "token")
	const token = "0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, cmd := startHTTP(t, dir, "--auth-token-file", tokenFile, "--keep-last", "3")

	anon := apiClient{t: t, base: base}
	anon.want("GET", "/api/config", "", http.StatusUnauthorized, "Authorization: Bearer")
	anon.want("POST", "/api/compact", `{"messages":[]}`, http.StatusUnauthorized, "unauthorized")
	wrong := apiClient{t: t, base: base, token: strings.Repeat("x", 32)}
	wrong.want("GET", "/api/status", "", http.StatusUnauthorized, "unauthorized")

	api := apiClient{t: t, base: base, token: token}
	cfg := api.want("GET", "/api/config", "", http.StatusOK, "")
	if cfg["keep_last"] != 3.0 || cfg["enabled"] != true || cfg["soft_threshold"] != 0.7 || cfg["context_hint_style"] != "auto" {
		t.Fatalf("GET /api/config: got %v, want keep_last 3 (flag), enabled, soft 0.7, auto", cfg)
	}

	// Mistakes: 400 with what to change.
	api.want("POST", "/api/config", `{"soft_threshold": 0.5`, http.StatusBadRequest, "not valid JSON")
	api.want("POST", "/api/config", `{"threshold": 0.5}`, http.StatusBadRequest, "unknown field \"threshold\"")
	api.want("POST", "/api/config", `{"soft_threshold": 0.9}`, http.StatusBadRequest, "soft_threshold (0.9) must be below hard_threshold (0.85)")
	api.want("POST", "/api/config", `{"protected_turns": "six"}`, http.StatusBadRequest, "protected_turns")
	api.want("POST", "/api/config", `{"context_hint_style": "fancy"}`, http.StatusBadRequest, "auto, short or dashboard")
	api.want("POST", "/api/config", ``, http.StatusBadRequest, "empty body")
	api.want("PUT", "/api/config", `{}`, http.StatusMethodNotAllowed, "GET, POST, DELETE")
	api.want("GET", "/api/nope", "", http.StatusNotFound, "/api/status")
	api.want("POST", "/api/compact", `{"messages": "hi"}`, http.StatusBadRequest, "messages")
	api.want("POST", "/api/compact", `{"messages": [{"role": "robot", "content": "x"}]}`, http.StatusBadRequest, "messages[0].role")
	if got, out := api.do("GET", "/api/config", "", "Host", "evil.example"); got != http.StatusForbidden {
		t.Fatalf("Host evil.example: got %d %v, want 403", got, out)
	}

	// Disabled at run time: the messages come back unchanged, still stored.
	out := api.want("POST", "/api/config", `{"enabled": false, "soft_threshold": 0.5, "summary_prompt": "Keep every price."}`, http.StatusOK, "")
	if out["enabled"] != false || out["soft_threshold"] != 0.5 || !strings.Contains(strings.Join(toStrings(out["overridden"]), ","), "enabled") {
		t.Fatalf("POST /api/config: got %v", out)
	}
	msgs := `[{"role":"system","content":"You plan trips."},` +
		`{"role":"user","content":"We go to Kyoto in May, budget 30,000 yen a night."},` +
		`{"role":"assistant","content":"A ryokan in Gion fits that budget."},` +
		`{"role":"user","content":"Book the Gion ryokan for 4 nights."},` +
		`{"role":"assistant","content":"Booked: Gion ryokan, 4 nights, 28,000 yen a night."},` +
		`{"role":"user","content":"Which day for Nara?"},` +
		`{"role":"assistant","content":"Day 3."}]`
	out = api.want("POST", "/api/compact", `{"conversation_id":"trip","messages":`+msgs+`}`, http.StatusOK, "")
	if out["compacted"] != false || len(out["messages"].([]any)) != 7 || !strings.Contains(out["reason"].(string), "disabled") {
		t.Fatalf("compact while disabled: got %v", out)
	}
	api.want("POST", "/api/config", `{"enabled": true}`, http.StatusOK, "")
	out = api.want("POST", "/api/compact", `{"conversation_id":"trip","messages":`+msgs+`}`, http.StatusOK, "")
	list := out["messages"].([]any)
	if out["compacted"] != true || len(list) != 5 || out["notice"] == "" {
		t.Fatalf("compact: got %v, want system + summary + the last 3, with a notice", out)
	}
	if first := list[1].(map[string]any); first["role"] != "system" || !strings.Contains(first["content"].(string), "30,000 yen") {
		t.Errorf("summary message: got %v", first)
	}

	st := api.want("GET", "/api/status", "", http.StatusOK, "")
	convs := st["conversations"].([]any)
	if len(convs) != 1 {
		t.Fatalf("status: got %v", st)
	}
	c := convs[0].(map[string]any)
	last, _ := c["last_replacement"].(map[string]any)
	if c["conversation_id"] != "trip" || c["turns"] != 7.0 || last == nil || last["compacted"] != true || last["replaced"] != 3.0 {
		t.Fatalf("status: got %v, want trip with 7 turns and the last replacement", c)
	}

	// A restart keeps the run-time changes.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("server exit: %v", err)
	}
	base, _ = startHTTP(t, dir, "--auth-token-file", tokenFile, "--keep-last", "3")
	api.base = base
	cfg = api.want("GET", "/api/config", "", http.StatusOK, "")
	if cfg["soft_threshold"] != 0.5 || cfg["summary_prompt"] != "Keep every price." || cfg["enabled"] != true {
		t.Fatalf("after restart: got %v, want the changes kept", cfg)
	}
	// DELETE goes back to the configuration.
	cfg = api.want("DELETE", "/api/config", "", http.StatusOK, "")
	if cfg["soft_threshold"] != 0.7 || len(toStrings(cfg["overridden"])) != 0 {
		t.Fatalf("after DELETE: got %v", cfg)
	}
	if _, err := os.Stat(filepath.Join(dir, "runtime-settings.json")); !os.IsNotExist(err) {
		t.Errorf("DELETE left the settings file: %v", err)
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
