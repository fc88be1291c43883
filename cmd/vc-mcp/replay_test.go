package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// replayGoldenArgs is the golden run: a tiny window and thresholds so that
// compaction happens, and a tight budget so that ranking decides what the
// assembled contexts hold.
var replayGoldenArgs = []string{
	"--no-timings", "--context-window", "1000", "--soft-threshold", "0.15", "--hard-threshold", "0.25",
	"--protected-turns", "2", "--budget", "200",
}

// runReplayCLI runs "vc-mcp replay" in process with no embedding model, no
// LLM and no config file of the machine's, and returns stdout.
func runReplayCLI(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	for _, k := range []string{"VC_LLM_PROVIDER", "VC_LLM_TAG_RULES", "VC_CONFIG", "VC_PRESET", "VC_DATA_DIR"} {
		t.Setenv(k, "")
	}
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	full := append([]string{"replay"}, args...)
	full = append(full, "--config", cfgFile, "--model-dir", t.TempDir(), "--log-level", "warn")
	err := run(context.Background(), full, strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Logf("stderr: %s", stderr.String())
	}
	return stdout.Bytes(), err
}

func TestReplayGolden(t *testing.T) {
	got, err := runReplayCLI(t, append([]string{filepath.Join("testdata", "replay", "prompts.txt")}, replayGoldenArgs...)...)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "replay", "prompts.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("replay output differs from %s (run with -update if the change is intended):\n%s", golden, firstDiff(string(want), string(got)))
	}

	// The golden is only worth having if it pins down what matters.
	var rep replayReport
	if err := json.Unmarshal(got, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Turns != 10 || len(rep.Turns) != 10 {
		t.Fatalf("got %d turns, want 10 (comments and blank lines skipped)", len(rep.Turns))
	}
	if rep.Totals.Compactions == 0 {
		t.Errorf("no compaction in the golden run; lower the thresholds so it covers compaction events")
	}
	for _, tr := range rep.Turns {
		if tr.Timings != nil {
			t.Errorf("turn %d has timings under --no-timings", tr.Turn)
		}
		if len(tr.Tags) == 0 || tr.Tokens.Message == 0 || tr.Tokens.Budget != 200 || tr.Tokens.Context > 200 {
			t.Errorf("turn %d: tags %v, tokens %+v: want tags and a context within the 200-token budget", tr.Turn, tr.Tags, tr.Tokens)
		}
	}
	last := rep.Turns[len(rep.Turns)-1]
	if !last.Broad || !strings.Contains(last.Context, "Henninger") {
		t.Errorf("last turn (a broad question): broad %v, context %q", last.Broad, last.Context)
	}
}

// TestReplayGoldenCoversRanking: a different ranking must change the
// golden output, through the assembled contexts and what was chosen.
func TestReplayGoldenCoversRanking(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "replay", "prompts.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := runReplayCLI(t, append([]string{filepath.Join("testdata", "replay", "prompts.txt"), "--ranking", "lexical=0.05,tags=0,recency=3"}, replayGoldenArgs...)...)
	if err != nil {
		t.Fatal(err)
	}
	var a, b replayReport
	if err := json.Unmarshal(want, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &b); err != nil {
		t.Fatal(err)
	}
	if len(a.Turns) != len(b.Turns) {
		t.Fatalf("got %d turns, want %d", len(b.Turns), len(a.Turns))
	}
	changed := 0
	for i := range a.Turns {
		if a.Turns[i].Context != b.Turns[i].Context {
			changed++
			if strings.Join(a.Turns[i].Chosen.TurnIDs, ",") == strings.Join(b.Turns[i].Chosen.TurnIDs, ",") &&
				len(a.Turns[i].Chosen.Summaries) == len(b.Turns[i].Chosen.Summaries) {
				t.Errorf("turn %d: the context changed but the chosen items did not", i+1)
			}
		}
	}
	if changed == 0 {
		t.Fatal("a recency-first ranking assembled the same contexts as the default: the golden does not cover ranking")
	}
}

func TestParseReplayInput(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		wantQueries []string
		wantAnswers []string
		wantMsgs    []int
		wantTimes   []string
		wantErr     string
	}{
		{name: "prompts", in: "# comment\n\nfirst question\n  second question  \n",
			wantQueries: []string{"first question", "second question"}, wantAnswers: []string{"", ""},
			wantMsgs: []int{1, 1}, wantTimes: []string{"2026-01-01T09:00:00Z", "2026-01-01T09:01:00Z"}},
		{name: "messages", in: `[{"role":"system","content":"be brief"},
			{"role":"user","content":"hello","timestamp":"2025-03-01T10:00:00Z"},
			{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"x"}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"x"}]},
			{"role":"user","content":"and then?"}]`,
			wantQueries: []string{"hello", "and then?"}, wantAnswers: []string{"hi", ""},
			wantMsgs: []int{4, 1}, wantTimes: []string{"2025-03-01T10:00:00Z", "2025-03-01T10:01:00Z"}},
		{name: "session", in: `{"format":"vc-mcp-chat-session","version":1,"turns":[
			{"user":"q1","assistant":"a1","timestamp":"2025-05-01T08:00:00Z"},{"user":"q2","assistant":""}]}`,
			wantQueries: []string{"q1", "q2"}, wantAnswers: []string{"a1", ""},
			wantMsgs: []int{2, 1}, wantTimes: []string{"2025-05-01T08:00:00Z", "2025-05-01T08:01:00Z"}},
		{name: "bad json array", in: `[{"role":`, wantErr: "not a JSON array of messages"},
		{name: "other object", in: `{"format":"something"}`, wantErr: `want a session saved by "vc-mcp chat"`},
		{name: "newer session", in: `{"format":"vc-mcp-chat-session","version":2}`, wantErr: "reads version 1"},
		{name: "bad content", in: `[{"role":"user","content":42}]`, wantErr: "content must be a string"},
		{name: "bad timestamp", in: `[{"role":"user","content":"x","timestamp":"yesterday"}]`, wantErr: "want RFC3339"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turns, err := parseReplayInput([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(turns) != len(tt.wantQueries) {
				t.Fatalf("got %d turns, want %d", len(turns), len(tt.wantQueries))
			}
			for i, turn := range turns {
				if turn.Query != tt.wantQueries[i] || turn.Answer != tt.wantAnswers[i] || len(turn.Messages) != tt.wantMsgs[i] {
					t.Errorf("turn %d: got query %q answer %q %d messages, want %q %q %d",
						i, turn.Query, turn.Answer, len(turn.Messages), tt.wantQueries[i], tt.wantAnswers[i], tt.wantMsgs[i])
				}
				if got := turn.Time.UTC().Format("2006-01-02T15:04:05Z"); got != tt.wantTimes[i] {
					t.Errorf("turn %d: got time %s, want %s", i, got, tt.wantTimes[i])
				}
			}
		})
	}
}

func TestReplayErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(empty, []byte("# nothing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args      []string
		wantUsage bool
		want      string
	}{
		{name: "no file", args: nil, wantUsage: true, want: "exactly one FILE"},
		{name: "missing file", args: []string{"no-such-file.txt"}, want: "no such file"},
		{name: "no prompts", args: []string{empty}, want: "no user messages"},
		{name: "budget", args: []string{empty, "--budget", "5"}, want: "want 100 to 32000"},
		{name: "unknown flag", args: []string{empty, "--bogus"}, wantUsage: true, want: "unknown flag --bogus"},
		{name: "ranking", args: []string{filepath.Join("testdata", "replay", "prompts.txt"), "--ranking", "nosuch=1"}, want: "--ranking"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runReplayCLI(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if got := errors.Is(err, errUsage); got != tt.wantUsage {
				t.Errorf("usage error %v, want %v", got, tt.wantUsage)
			}
		})
	}
}

// TestReplaySessionProcess runs the binary on a saved chat session with
// timings on, writing to --out in a data directory it keeps.
func TestReplaySessionProcess(t *testing.T) {
	dir := t.TempDir()
	session := filepath.Join(dir, "session.json")
	s := chatSession{Format: chatSessionFormat, Version: 1, Conversation: "c", Turns: []chatTurn{
		{User: "Our API gateway rate limit is 600 requests per minute per key.", Assistant: "Noted: 600 rpm per key.", Timestamp: "2025-06-01T10:00:00Z"},
		{User: "What rate limit did we set on the gateway?", Assistant: "600 requests per minute per key.", Timestamp: "2025-06-01T10:05:00Z"},
	}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(session, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.json")
	data := filepath.Join(dir, "data")
	cmd := exec.Command(binary, "replay", session, "--out", out, "--data-dir", data, "--model-dir", t.TempDir(), "--config", filepath.Join("testdata", "replay", "empty.yaml"))
	cmd.Env = append(os.Environ(), "VC_LLM_PROVIDER=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, msg)
	}
	var rep replayReport
	b, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Turns) != 2 || rep.Timings == nil {
		t.Fatalf("got %d turns, timings %v: want 2 turns with timings", len(rep.Turns), rep.Timings)
	}
	second := rep.Turns[1]
	if second.Timings == nil || second.Timings.RecallMS <= 0 || second.Timings.StoreMS <= 0 {
		t.Errorf("turn 2 timings %+v: want recall and store times", second.Timings)
	}
	if second.Tokens.Answer == 0 || second.Timestamp != "2025-06-01T10:05:00Z" {
		t.Errorf("turn 2: answer tokens %d, timestamp %s", second.Tokens.Answer, second.Timestamp)
	}
	if !strings.Contains(second.Context, "600 requests per minute") || len(second.Chosen.TurnIDs) == 0 {
		t.Errorf("turn 2 recalled %q (turns %v): want the first exchange", second.Context, second.Chosen.TurnIDs)
	}
	if got := strings.Join(rep.Turns[0].Stored.TurnIDs, ","); got != "t1,t2" {
		t.Errorf("turn 1 stored %s, want t1,t2 (question and answer)", got)
	}
	// The data directory was named, so it stays, holding the turns.
	if _, err := os.Stat(filepath.Join(data, "logs")); err != nil {
		t.Errorf("data dir: %v", err)
	}
}

// firstDiff shows where two texts first differ, line by line.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, w, g)
		}
	}
	return "(same lines)"
}

func TestBudgetBar(t *testing.T) {
	tests := []struct {
		name  string
		width int
		total int
		parts []int
		want  string
	}{
		{name: "empty", width: 10, total: 100, want: "░░░░░░░░░░"},
		{name: "split", width: 10, total: 100, parts: []int{50, 20, 10}, want: "█████▓▓▒░░"},
		{name: "small part shows", width: 10, total: 2000, parts: []int{38, 0, 47}, want: "█▒░░░░░░░░"},
		{name: "over budget clipped", width: 4, total: 10, parts: []int{10, 10}, want: "████"},
		{name: "no budget", width: 3, total: 0, want: "░░░"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bar(tt.width, tt.total, tt.parts...); got != tt.want {
				t.Errorf("bar(%d, %d, %v) = %q, want %q", tt.width, tt.total, tt.parts, got, tt.want)
			}
		})
	}
}

// FuzzParseReplayInput: any input gives turns with a query and a stored
// user message each, or an error; never a panic.
func FuzzParseReplayInput(f *testing.F) {
	for _, s := range []string{"a\nb\n", `[{"role":"user","content":"x"}]`, `{"format":"vc-mcp-chat-session","version":1,"turns":[{"user":"q"}]}`,
		`[{"role":"assistant","content":[{"type":"text","text":"t"}]},{"role":"user","content":"u","timestamp":"2024-01-01T00:00:00Z"}]`, "\xef\xbb\xbf# c\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		turns, err := parseReplayInput(b)
		if err != nil {
			return
		}
		for i, turn := range turns {
			if strings.TrimSpace(turn.Query) == "" || len(turn.Messages) == 0 || turn.Time.IsZero() {
				t.Fatalf("turn %d: query %q, %d messages, time %v", i, turn.Query, len(turn.Messages), turn.Time)
			}
			if i > 0 && turn.Time.Before(turns[i-1].Time) {
				t.Fatalf("turn %d goes back in time", i)
			}
		}
	})
}
