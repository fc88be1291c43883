//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/vc-mcp/vc-mcp/memory"
)

// fakeChatProvider is an OpenAI-compatible API on loopback: chat requests
// get a numbered answer; JSON requests (tagging and summaries) get an
// answer that parses as both.
type fakeChatProvider struct {
	mu      sync.Mutex
	chats   []fakeChatRequest
	jsonReq int
}

type fakeChatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

func (f *fakeChatProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var req fakeChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	if last := req.Messages[len(req.Messages)-1].Content; req.ResponseFormat == nil && strings.HasPrefix(last, "FAIL") {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"model overloaded"}}`)
		return
	}
	f.mu.Lock()
	var text string
	if req.ResponseFormat != nil {
		f.jsonReq++
		text = `{"tags":["rate-limit","gateway"],"primary":"rate-limit","related":["api"],"broad":false,"temporal":false,` +
			`"summary":"The gateway allows 600 requests per minute per key.","description":"API gateway limits"}`
	} else {
		f.chats = append(f.chats, req)
		last := req.Messages[len(req.Messages)-1].Content
		text = fmt.Sprintf("ANSWER-%d about %s", len(f.chats), strings.Fields(last)[0])
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"model":   req.Model,
		"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]int{"prompt_tokens": 50, "completion_tokens": 10},
	})
}

// screen collects what the program writes to the terminal.
type screen struct {
	mu  sync.Mutex
	raw strings.Builder
}

var ansiSeq = regexp.MustCompile(`\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]`)

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ansiSeq.ReplaceAllString(s.raw.String(), "")
}

// waitFor waits until the screen shows want (escape sequences removed).
func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(s.text(), want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	txt := s.text()
	t.Fatalf("the screen never showed %q; last output:\n%s", want, txt[max(0, len(txt)-3000):])
}

// TestChatPTY drives "vc-mcp chat" through a pseudo-terminal against a fake
// provider: two messages, /compact, /export, /quit; then checks the export,
// that replay reads it, and that memory holds the turns.
func TestChatPTY(t *testing.T) {
	fake := &fakeChatProvider{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	export := filepath.Join(dir, "session.json")

	cmd := exec.Command(binary, "chat", "--data-dir", data, "--model-dir", filepath.Join(dir, "no-model"),
		"--config", filepath.Join("testdata", "replay", "empty.yaml"), "--conversation", "ptychat", "--protected-turns", "1")
	cmd.Env = append(os.Environ(), "VC_LLM_PROVIDER=openai", "VC_LLM_BASE_URL="+srv.URL+"/v1", "VC_LLM_MODEL=fake-model",
		"VC_LLM_API_KEY_ENV=", "VC_LLM_MAX_RETRIES=-1", "VC_LOG_FILE="+filepath.Join(dir, "chat.log"), "VC_LOG_LEVEL=debug", "TERM=xterm-256color", "NO_COLOR=1")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 140})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var scr screen
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			scr.mu.Lock()
			scr.raw.Write(buf[:n])
			scr.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waited := false
	defer func() {
		if !waited {
			cmd.Process.Kill()
			<-exited
		}
	}()
	typeLine := func(s string) {
		t.Helper()
		if _, err := io.WriteString(tty, s+"\r"); err != nil {
			t.Fatal(err)
		}
	}

	scr.waitFor(t, "vc-mcp chat")
	scr.waitFor(t, "Topics")
	typeLine("Our API gateway rate limit is 600 requests per minute per key.")
	scr.waitFor(t, "ANSWER-1 about Our")
	scr.waitFor(t, "turn 1 stored")
	typeLine("Which rate limit did we set on the gateway?")
	scr.waitFor(t, "ANSWER-2 about Which")
	scr.waitFor(t, "turn 2 stored")
	scr.waitFor(t, "rate-limit") // the tag panel and turn list

	// The inspector shows what recall assembled for the selected turn.
	if _, err := io.WriteString(tty, "\t"); err != nil {
		t.Fatal(err)
	}
	scr.waitFor(t, "Turn 2 inspector")
	scr.waitFor(t, "assembled context")
	if _, err := io.WriteString(tty, "\t"); err != nil {
		t.Fatal(err)
	}

	typeLine("/compact")
	scr.waitFor(t, "compacted 1 segments")
	typeLine("/export " + export)
	scr.waitFor(t, "exported 2 turns")
	// A provider failure is shown, and nothing is stored for it.
	typeLine("FAIL this one")
	scr.waitFor(t, "model overloaded")
	typeLine("/nonsense")
	scr.waitFor(t, "unknown command /nonsense")
	typeLine("/quit")
	select {
	case err := <-exited:
		waited = true
		if err != nil {
			t.Fatalf("chat exited with %v; screen:\n%s", err, scr.text())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("chat did not exit after /quit")
	}

	// The model got memory's context: the second question's system prompt
	// holds the first exchange, recalled.
	fake.mu.Lock()
	chats := fake.chats
	fake.mu.Unlock()
	if len(chats) != 2 {
		t.Fatalf("provider got %d chat requests, want 2", len(chats))
	}
	if sys := chats[1].Messages[0]; sys.Role != "system" || !strings.Contains(sys.Content, "600 requests per minute") {
		t.Errorf("second request's system message %q does not hold the recalled first turn", sys.Content)
	}

	b, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	var s chatSession
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Format != chatSessionFormat || s.Conversation != "ptychat" || s.Model != "openai/fake-model" || len(s.Turns) != 2 {
		t.Fatalf("export: format %q conversation %q model %q, %d turns", s.Format, s.Conversation, s.Model, len(s.Turns))
	}
	if s.Turns[1].Assistant != "ANSWER-2 about Which" || s.Turns[1].Report == nil {
		t.Fatalf("turn 2: %+v", s.Turns[1])
	}
	r := s.Turns[1].Report
	if !strings.Contains(r.Context, "600 requests") || len(r.Chosen.TurnIDs) == 0 || r.Tokens.Context == 0 {
		t.Errorf("turn 2 report: context %q, chosen %v, tokens %+v", r.Context, r.Chosen.TurnIDs, r.Tokens)
	}
	if strings.Join(r.Tags, ",") != "rate-limit,gateway" {
		t.Errorf("turn 2 tags %v, want the provider's rate-limit,gateway", r.Tags)
	}
	if len(s.Events) != 1 || s.Events[0].Kind != "compact" || s.Events[0].Segments != 1 {
		t.Errorf("events %+v, want one compaction", s.Events)
	}

	// Memory holds the four messages and the compaction.
	store, err := memory.Open(context.Background(), memory.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Status(context.Background(), "ptychat")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Turns != 4 || st.Totals.Segments == 0 {
		t.Errorf("memory: %d turns, %d segments; want 4 turns and a segment", st.Totals.Turns, st.Totals.Segments)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	// replay reads the export.
	out, err := runReplayCLI(t, export, "--no-timings")
	if err != nil {
		t.Fatal(err)
	}
	var rep replayReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Turns) != 2 || rep.Turns[1].Answer != "ANSWER-2 about Which" {
		t.Errorf("replay of the export: %d turns", len(rep.Turns))
	}
	tty.Close()
	<-readDone
}
