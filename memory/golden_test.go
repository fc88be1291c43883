package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

var update = flag.Bool("update", false, "rewrite golden files")

// loadConversation reads the shared scripted conversation.
func loadConversation(t *testing.T) []Message {
	t.Helper()
	f, err := os.Open("../testdata/conversation.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Message
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("conversation.jsonl: %v", err)
		}
		out = append(out, m)
	}
	return out
}

// TestRecallGolden pins the assembled context for a few questions about the
// shared conversation: what is included, in which order, and how it reads.
func TestRecallGolden(t *testing.T) {
	s := openTest(t, Options{})
	ingest(t, s, "golden", loadConversation(t))
	tests := []struct {
		name    string
		message string
		budget  int
		want    []string // must appear verbatim
	}{
		{"decision", "Who owns the Postgres upgrade rehearsal, and which method did we pick?", 250, []string{"Marco owns the rehearsal", "pg_upgrade in link mode"}},
		{"appointment", "When is Rex's vet appointment?", 150, []string{"Thursday at 4 pm"}},
		{"tool result", "what did the replication slot check show?", 300, []string{"orders_cdc"}},
		{"who joins the trip", "Who is joining us in Kyoto and when?", 200, []string{"Lena flies in from Berlin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := s.Recall(context.Background(), RecallRequest{ConversationID: "golden", Message: tt.message, MaxTokens: tt.budget})
			if err != nil {
				t.Fatal(err)
			}
			if n := tokens.Count(r.Text); n > tt.budget {
				t.Fatalf("%d tokens over the budget of %d", n, tt.budget)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Text, w) {
					t.Errorf("recall lacks %q:\n%s", w, r.Text)
				}
			}
			path := filepath.Join("testdata", "recall_"+strings.ReplaceAll(tt.name, " ", "_")+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(r.Text+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./memory -run TestRecallGolden -update)", err)
			}
			if got := r.Text + "\n"; got != string(want) {
				t.Errorf("recall drifted from %s (go test ./memory -run TestRecallGolden -update if intended)\ngot:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}
