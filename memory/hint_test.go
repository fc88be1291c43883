package memory

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestHintStyleFor(t *testing.T) {
	cases := []struct {
		style  HintStyle
		client string
		want   HintStyle
	}{
		{HintAuto, "", HintShort},
		{HintAuto, "llama3.2:3b", HintShort},
		{HintAuto, "qwen2.5-72b-instruct", HintDashboard},
		{HintAuto, "mixtral-8x7b", HintShort},
		{HintAuto, "gpt-4o-mini", HintShort},
		{HintAuto, "claude-3-5-haiku-latest", HintShort},
		{HintAuto, "gemini-2.0-flash-lite", HintShort},
		{HintAuto, "gpt-4o", HintDashboard},
		{HintAuto, "claude-sonnet-4-5", HintDashboard},
		{HintAuto, "claude-ai", HintDashboard},
		{HintAuto, "Claude Code", HintDashboard},
		{HintAuto, "o3", HintDashboard},
		{HintAuto, "cursor-vscode", HintDashboard},
		{HintAuto, "my-bot", HintShort},
		{HintShort, "claude-opus-4", HintShort},
		{HintDashboard, "phi-3", HintDashboard},
	}
	for _, tc := range cases {
		t.Run(string(tc.style)+"/"+tc.client, func(t *testing.T) {
			if got := HintStyleFor(tc.style, tc.client); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestTopicHintGolden pins both tiers of the topics hint on the shared
// conversation, compacted so that topics have summaries and descriptions.
func TestTopicHintGolden(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{ProtectedTurns: 4})
	msgs := loadConversation(t)
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "golden", Messages: msgs, Force: true}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		client string
		want   HintStyle
		head   string
	}{
		{"llama3.2:3b", HintShort, "## Topics on record"},
		{"claude-code", HintDashboard, "## Memory dashboard"},
	}
	for _, tc := range cases {
		t.Run(string(tc.want), func(t *testing.T) {
			r, err := s.Recall(ctx, RecallRequest{ConversationID: "golden", Message: "zebra crossing", MaxTokens: 4000, Client: tc.client})
			if err != nil {
				t.Fatal(err)
			}
			if r.HintStyle != tc.want {
				t.Errorf("got hint style %s, want %s", r.HintStyle, tc.want)
			}
			i := strings.Index(r.Text, tc.head)
			if i < 0 {
				t.Fatalf("no %q in the recall:\n%s", tc.head, r.Text)
			}
			if r.Breakdown.TopicHint == 0 || r.Tokens > 4000 {
				t.Errorf("got hint %d tokens, total %d: want a hint within the budget", r.Breakdown.TopicHint, r.Tokens)
			}
			checkGolden(t, filepath.Join("testdata", "hint-"+string(tc.want)+".golden"), []byte(r.Text[i:]+"\n"))
		})
	}
	// The setting overrides the client's name.
	if _, err := s.UpdateSettings(SettingsPatch{HintStyle: hptr(HintShort)}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recall(ctx, RecallRequest{ConversationID: "golden", Message: "zebra crossing", MaxTokens: 4000, Client: "claude-code"})
	if err != nil || r.HintStyle != HintShort || !strings.Contains(r.Text, "## Topics on record") {
		t.Errorf("context_hint_style short: got %s, %v", r.HintStyle, err)
	}
}
