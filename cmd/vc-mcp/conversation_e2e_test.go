package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestSharedConversation drives the shared scripted conversation
// (testdata/conversation.jsonl, content blocks and a tool call included)
// through the real binary over stdio, in the chunks a client would send,
// then asks about it the way an assistant would.
func TestSharedConversation(t *testing.T) {
	f, err := os.Open("../../testdata/conversation.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var msgs []any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	s := startStdio(t, t.TempDir())
	for i := 0; i < len(msgs); i += 2 {
		mustOK(t, s.c, "compact_context", map[string]any{"conversation_id": "shared", "messages": msgs[i:min(i+2, len(msgs))]})
	}
	// Resending everything stores nothing new.
	var ing struct {
		Stored     int `json:"stored"`
		Duplicates int `json:"duplicates"`
	}
	structured(t, mustOK(t, s.c, "compact_context", map[string]any{"conversation_id": "shared", "messages": msgs}), &ing)
	if ing.Stored != 0 || ing.Duplicates != len(msgs) {
		t.Fatalf("resend: stored %d, duplicates %d; want 0, %d", ing.Stored, ing.Duplicates, len(msgs))
	}
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"recall_context", map[string]any{"conversation_id": "shared", "message": "who owns the staging rehearsal?", "max_tokens": 200}, "Marco owns the rehearsal"},
		{"recall_context", map[string]any{"conversation_id": "shared", "message": "what did the replication slot check return?", "max_tokens": 300}, "orders_cdc"},
		{"find_quote", map[string]any{"conversation_id": "shared", "query": "Hiiragiya"}, "Hiiragiya"},
		{"find_quote", map[string]any{"conversation_id": "shared", "query": "vaccination", "speaker": "Ana"}, "rabies"},
	}
	for _, tt := range tests {
		got := text(mustOK(t, s.c, tt.tool, tt.args))
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s %v: result lacks %q:\n%s", tt.tool, tt.args, tt.want, got)
		}
	}
}
