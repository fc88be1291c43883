package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

// recordingSummarizer writes a deterministic summary that names what it
// was given, and records every input.
type recordingSummarizer struct {
	mu  sync.Mutex
	ins []summarize.Input
}

func (r *recordingSummarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	r.mu.Lock()
	r.ins = append(r.ins, in)
	r.mu.Unlock()
	if in.Kind != summarize.Conversation {
		return summarize.NewExtractive(nil).Summarize(ctx, in)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[fake %s prompt=%q previous=%q]", map[bool]string{true: "simple", false: "detailed"}[in.Simple], in.Prompt, in.Previous)
	for _, t := range in.Turns {
		fmt.Fprintf(&b, "\n- %s: %s", t.Role, t.Text)
	}
	return summarize.Result{Summary: b.String(), Method: "fake", Version: "fake/v1"}, nil
}

func (r *recordingSummarizer) last() summarize.Input {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ins[len(r.ins)-1]
}

func replaceFixture() []Message {
	return []Message{
		msg("system", "", "You are a helpful travel assistant.", t0),
		msg("user", "Ana", "We are planning a trip to Kyoto in May for 4 nights.", t0),
		msg("assistant", "", "Great. Do you prefer a ryokan or a hotel?", t0),
		msg("user", "Ana", "A ryokan, budget 30,000 yen a night.", t0),
		msg("assistant", "", "Noted: a ryokan under 30,000 yen a night.", t0),
		msg("user", "Ana", "Which day should we visit Nara?", t0),
		msg("assistant", "", "Day 3 works best: fewer crowds midweek.", t0),
	}
}

func bptr(b bool) *bool { return &b }
func iptr(i int) *int   { return &i }

// TestCompactMessagesGolden pins the compacted list for the detailed and
// the simple prompt, with a custom prompt and with the notice off.
func TestCompactMessagesGolden(t *testing.T) {
	cases := []struct {
		name string
		opts ReplacementOptions
		req  func(*ReplaceRequest)
	}{
		{"detailed", ReplacementOptions{}, func(*ReplaceRequest) {}},
		{"simple-keep3", ReplacementOptions{UseSimplePrompt: true, SimplePrompt: "Bullet points only."}, func(r *ReplaceRequest) { r.KeepLast = iptr(3) }},
		{"no-notice", ReplacementOptions{NoNotice: true, SummaryPrompt: "Keep the budget."}, func(*ReplaceRequest) {}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sum := &recordingSummarizer{}
			s := openTest(t, Options{Summarizer: sum, Replacement: tc.opts, Now: func() time.Time { return t0 }})
			req := ReplaceRequest{ConversationID: "trip", Messages: replaceFixture()}
			tc.req(&req)
			res, err := s.CompactMessages(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "replace-"+tc.name+".golden.json"), got)
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test ./memory -run %s -update): %v", t.Name(), err)
	}
	if string(got) != string(want) {
		t.Errorf("differs from %s (run with -update and review the diff)\ngot:\n%s", path, got)
	}
}

// TestCompactMessagesBehaviour covers what the golden files do not: the
// messages are all stored, a second replacement folds the first summary in,
// tool pairs stay together, disabled and threshold-only modes.
func TestCompactMessagesBehaviour(t *testing.T) {
	ctx := context.Background()
	sum := &recordingSummarizer{}
	s := openTest(t, Options{Summarizer: sum})

	first, err := s.CompactMessages(ctx, ReplaceRequest{ConversationID: "c", Messages: replaceFixture()})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Compacted || first.Replaced != 4 || first.Kept != 3 || first.Stored != 7 {
		t.Fatalf("got %+v, want 4 replaced, 3 kept (system + 2), 7 stored", first.Replacement)
	}
	// Nothing lost: the replaced messages are found in memory.
	q, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "c", Query: "30,000 yen"})
	if err != nil || len(q.Quotes) == 0 {
		t.Fatalf("replaced message not found in memory: %v %+v", err, q)
	}

	// The client sends the compacted list back with new messages.
	next := append(append([]Message(nil), first.Messages...),
		msg("user", "Ana", "Book the ryokan in Gion please.", t0),
		msg("assistant", "", "Booked the Gion ryokan for 4 nights.", t0))
	second, err := s.CompactMessages(ctx, ReplaceRequest{ConversationID: "c", Messages: next})
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.last().Previous; !strings.Contains(got, "30,000 yen") {
		t.Errorf("second summary was not given the first one as Previous: %q", got)
	}
	summaries := 0
	for _, m := range second.Messages {
		if isSummary(m) {
			summaries++
		}
	}
	if summaries != 1 || second.Stored != 2 {
		t.Errorf("got %d summary messages and %d stored, want 1 and 2 (the old summary is folded in, not stored)", summaries, second.Stored)
	}

	// A tool result is never kept without its call.
	call := Message{Role: "assistant", Content: json.RawMessage(`[{"type":"tool_use","id":"tu1","name":"search","input":{"q":"ryokan"}}]`)}
	result := Message{Role: "user", Content: json.RawMessage(`[{"type":"tool_result","tool_use_id":"tu1","content":"3 ryokans found"}]`)}
	tools := append(replaceFixture(), call, result, msg("assistant", "", "I found 3 ryokans.", t0))
	r, err := s.CompactMessages(ctx, ReplaceRequest{ConversationID: "tools", Messages: tools, KeepLast: iptr(2)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Messages); n != 5 || string(r.Messages[2].Content) != string(call.Content) {
		t.Errorf("got %d messages starting the kept part with %s, want the tool call kept with its result", n, r.Messages[2].Content)
	}

	// Threshold-only: small conversations come back unchanged.
	r, err = s.CompactMessages(ctx, ReplaceRequest{ConversationID: "c2", Messages: replaceFixture(), OverThresholdOnly: true})
	if err != nil || r.Compacted || len(r.Messages) != 7 || !strings.Contains(r.Reason, "below the soft threshold") {
		t.Errorf("threshold-only: got %+v, %v; want unchanged with a reason", r.Replacement, err)
	}

	// Disabled at run time: unchanged, still stored.
	if _, err := s.UpdateSettings(SettingsPatch{Enabled: bptr(false)}); err != nil {
		t.Fatal(err)
	}
	r, err = s.CompactMessages(ctx, ReplaceRequest{ConversationID: "c3", Messages: replaceFixture()})
	if err != nil || r.Compacted || r.Stored != 7 || !strings.Contains(r.Reason, "disabled") {
		t.Errorf("disabled: got %+v, %v; want unchanged, stored, with a reason", r.Replacement, err)
	}
	if last, ok := s.LastReplacement("c3"); !ok || last.Compacted {
		t.Errorf("LastReplacement: got %+v, %v", last, ok)
	}

	// Bad input is the caller's mistake.
	if _, err := s.CompactMessages(ctx, ReplaceRequest{ConversationID: "c", Messages: replaceFixture(), KeepLast: iptr(-1)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("keep_last -1: got %v, want ErrInvalid", err)
	}
	if _, err := s.CompactMessages(ctx, ReplaceRequest{ConversationID: "c"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no messages: got %v, want ErrInvalid", err)
	}
}

// TestCompactMessagesExtractiveFallback runs the built-in summariser.
func TestCompactMessagesExtractiveFallback(t *testing.T) {
	s := openTest(t, Options{})
	r, err := s.CompactMessages(context.Background(), ReplaceRequest{ConversationID: "c", Messages: replaceFixture()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != summarize.Method || !strings.Contains(r.Summary, "30,000 yen") {
		t.Errorf("got method %q summary %q, want extractive keeping the budget", r.Method, r.Summary)
	}
	long := append(replaceFixture(), chat(60, t0)...)
	r, err = s.CompactMessages(context.Background(), ReplaceRequest{ConversationID: "long", Messages: long})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Compacted || r.TokensAfter*2 > r.TokensBefore {
		t.Errorf("got %d -> %d tokens, want at least halved", r.TokensBefore, r.TokensAfter)
	}
}

func TestSettingsValidatePersistAndApply(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	def := s.Settings()
	if def.SoftThreshold != 0.70 || def.ProtectedTurns != 6 || !def.Enabled || def.KeepLast != DefaultKeepLast || def.HintStyle != HintAuto {
		t.Fatalf("defaults: got %+v", def)
	}
	bad := []struct {
		name  string
		patch SettingsPatch
		want  string
	}{
		{"soft above hard", SettingsPatch{SoftThreshold: fptr(0.9)}, "soft_threshold (0.9) must be below hard_threshold (0.85)"},
		{"hard out of range", SettingsPatch{HardThreshold: fptr(1.5)}, "hard_threshold must be a fraction between 0 and 1"},
		{"protected zero", SettingsPatch{ProtectedTurns: iptr(0)}, "protected_turns must be between 1 and"},
		{"keep_last", SettingsPatch{KeepLast: iptr(5000)}, "keep_last must be between 0 and 1000"},
		{"hint style", SettingsPatch{HintStyle: hptr("fancy")}, "context_hint_style must be auto, short or dashboard"},
		{"prompt too long", SettingsPatch{SummaryPrompt: sptr(strings.Repeat("x", MaxPromptBytes+1))}, "summary_prompt is 8193 bytes"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.UpdateSettings(tc.patch)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrInvalid containing %q", err, tc.want)
			}
			if got := s.Settings(); got != def {
				t.Errorf("a rejected change changed the settings: %+v", got)
			}
		})
	}
	got, err := s.UpdateSettings(SettingsPatch{SoftThreshold: fptr(0.5), ProtectedTurns: iptr(2), KeepLast: iptr(4), HintStyle: hptr(HintDashboard)})
	if err != nil {
		t.Fatal(err)
	}
	if got.SoftThreshold != 0.5 || got.ProtectedTurns != 2 || got.KeepLast != 4 || got.HardThreshold != 0.85 {
		t.Fatalf("got %+v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A restart keeps the change, over what Options say.
	s2 := openTest(t, Options{Dir: dir, ProtectedTurns: 9})
	if got := s2.Settings(); got.SoftThreshold != 0.5 || got.ProtectedTurns != 2 || got.HintStyle != HintDashboard {
		t.Fatalf("after reopen: got %+v", got)
	}
	if got := strings.Join(s2.SettingsOverridden(), ","); got != "context_hint_style,keep_last,protected_turns,soft_threshold" {
		t.Errorf("overridden: got %s", got)
	}
	reset, err := s2.ResetSettings()
	if err != nil || reset.ProtectedTurns != 9 || reset.SoftThreshold != 0.70 {
		t.Fatalf("reset: got %+v, %v; want the configured values back", reset, err)
	}
	if _, err := os.Stat(filepath.Join(dir, settingsFile)); !os.IsNotExist(err) {
		t.Errorf("reset left %s behind: %v", settingsFile, err)
	}
}

// TestSettingsAppliedToCompaction: lowering the soft threshold at run time
// makes the next ingest compact.
func TestSettingsAppliedToCompaction(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{ContextWindow: 100_000})
	ingest(t, s, "c", chat(40, t0))
	if st, _ := s.Status(ctx, "c"); st.Totals.Segments != 0 {
		t.Fatalf("compacted before the change: %d segments", st.Totals.Segments)
	}
	if _, err := s.UpdateSettings(SettingsPatch{SoftThreshold: fptr(0.001), HardThreshold: fptr(0.002), ProtectedTurns: iptr(4)}); err != nil {
		t.Fatal(err)
	}
	ingest(t, s, "c", chat(42, t0)[40:])
	u, err := s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(u) != 1 || u[0].Segments == 0 || u[0].LastCompaction == nil || u[0].LastCompaction.Through != "t38" {
		t.Fatalf("got usage %+v, want a compaction through t38 (42 turns, 4 protected)", u)
	}
}

// TestSettingsRace changes settings while compactions and replacements
// read them (run with -race).
func TestSettingsRace(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Summarizer: &recordingSummarizer{}})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				switch w {
				case 0:
					if _, err := s.UpdateSettings(SettingsPatch{ProtectedTurns: iptr(1 + i%5), Enabled: bptr(i%2 == 0)}); err != nil {
						t.Error(err)
					}
				case 1:
					_ = s.Settings()
					_ = s.SettingsOverridden()
				case 2:
					if _, err := s.CompactMessages(ctx, ReplaceRequest{ConversationID: "r", Messages: replaceFixture()}); err != nil {
						t.Error(err)
					}
				case 3:
					if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "i", Messages: chat(4, t0.Add(time.Minute*time.Duration(i*10))), Force: true}); err != nil {
						t.Error(err)
					}
					if _, err := s.Usage(ctx); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

func fptr(f float64) *float64     { return &f }
func sptr(s string) *string       { return &s }
func hptr(h HintStyle) *HintStyle { return &h }
