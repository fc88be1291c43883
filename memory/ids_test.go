package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

func TestFileNamesAreCaseSafe(t *testing.T) {
	tests := []struct {
		id, file string
	}{
		{"chat", "chat"},
		{"Chat", "%43hat"},
		{"proj:x", "proj%3Ax"},
		{"Proj:X.1_a-b", "%50roj%3A%58.1_a-b"},
		// Windows' device names, with or without an extension, and a
		// trailing dot (which Windows drops).
		{"con", "%63on"},
		{"nul.txt", "%6Eul.txt"},
		{"com1", "%63om1"},
		{"lpt9.a.b", "%6Cpt9.a.b"},
		{"AUX", "%41%55%58"},
		{"console", "console"},
		{"com10", "com10"},
		{"a.", "a%2E"},
		{"...", "..%2E"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if got := fileName(tt.id); got != tt.file {
				t.Fatalf("fileName(%q) = %q, want %q", tt.id, got, tt.file)
			}
			if got := idFromFileName(tt.file); got != tt.id {
				t.Fatalf("idFromFileName(%q) = %q, want %q", tt.file, got, tt.id)
			}
			if got := idFromFileName(strings.ToLower(tt.file)); got != tt.id {
				t.Fatalf("a case-folding file system would turn %q into id %q", tt.id, got)
			}
		})
	}
}

// TestLongEscapedIDs: an id whose file name would pass 255 bytes (each
// upper-case letter and colon is written as 3 characters) is refused with
// what to change, where it used to reach the file system and fail as a
// fault (found by a hostile review); the longest that fits is stored.
func TestLongEscapedIDs(t *testing.T) {
	s := openTest(t, Options{})
	fits := strings.Repeat("A", (maxFileNameLen-1)/3) + "b" // 83 capitals: 250 bytes
	over := strings.Repeat("A", 84)
	if len(fileName(fits)) > maxFileNameLen || len(fileName(over)) <= maxFileNameLen {
		t.Fatalf("setup: %d and %d bytes against %d", len(fileName(fits)), len(fileName(over)), maxFileNameLen)
	}
	ingest(t, s, fits, chat(2, t0))
	_, err := s.Ingest(context.Background(), IngestRequest{ConversationID: over, Messages: chat(2, t0)})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "too long for a file name") {
		t.Fatalf("an id of 84 capitals: %v, want ErrInvalid saying its file name is too long", err)
	}
	if _, err := s.FindQuote(context.Background(), FindQuoteRequest{ConversationID: over, Query: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("find_quote with it: %v, want ErrInvalid", err)
	}
}

func FuzzFileName(f *testing.F) {
	f.Add("Chat")
	f.Add("a:B.c_D-9")
	f.Fuzz(func(t *testing.T, id string) {
		if ValidateConversationID(id) != nil {
			return
		}
		name := fileName(id)
		if got := idFromFileName(strings.ToLower(name)); got != id {
			t.Fatalf("id %q -> file %q -> folded -> id %q", id, name, got)
		}
		if strings.ContainsAny(name, `/\:`) || strings.HasSuffix(name, ".") {
			t.Fatalf("file name %q", name)
		}
		if stem, _, _ := strings.Cut(strings.ToLower(name), "."); files.WindowsDevice(stem) {
			t.Fatalf("file name %q is a Windows device", name)
		}
	})
}

// TestDeviceNamedConversationMoves: a conversation named "con", stored
// under that name by an earlier version (a file Windows cannot make), has
// its log and its other files renamed at open, and keeps everything.
func TestDeviceNamedConversationMoves(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "con", chat(4, t0))
	if _, err := s.Recall(context.Background(), RecallRequest{ConversationID: "con", Message: "the vet"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var moved []string
	for _, sub := range []string{logsDir, decisionsDir, requestsDir} {
		names, _ := filepath.Glob(filepath.Join(dir, sub, "%63on*"))
		if len(names) != 1 {
			t.Fatalf("%s holds %v, want one file of conversation con, named %%63on", sub, names)
		}
		old := filepath.Join(dir, sub, strings.Replace(filepath.Base(names[0]), "%63on", "con", 1))
		if err := os.Rename(names[0], old); err != nil {
			t.Fatal(err)
		}
		moved = append(moved, names[0])
	}
	if text, problems := checkText(t, dir); !strings.Contains(text, "old-style name") || problems != 0 {
		t.Errorf("check on the old layout: %d problem(s):\n%s\nwant none, and a notice of the old-style name", problems, text)
	}
	s = openTest(t, Options{Dir: dir})
	for _, p := range moved {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("not renamed back at open: %v", err)
		}
	}
	if got := readable(t, s, "con"); len(got) != 4 {
		t.Fatalf("con has %d turns after the rename, want 4", len(got))
	}
	// A start cut short after the log's rename: the next one renames the
	// rest.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range moved[1:] {
		if err := os.Rename(p, filepath.Join(filepath.Dir(p), strings.Replace(filepath.Base(p), "%63on", "con", 1))); err != nil {
			t.Fatal(err)
		}
	}
	s = openTest(t, Options{Dir: dir})
	for _, p := range moved {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("not renamed at the next open: %v", err)
		}
	}
}

func TestChatAndchatKeepTheirOwnLogs(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "Chat", chat(2, t0))
	ingest(t, s, "chat", chat(4, t0))
	names, _ := filepath.Glob(filepath.Join(dir, logsDir, "*"+logExt))
	if len(names) != 2 || strings.EqualFold(names[0], names[1]) {
		t.Fatalf("log files %v: two ids that differ in case need names that differ in more than case", names)
	}
	// A log with the old name is renamed on open and keeps its turns.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, logsDir, "%43hat.jsonl"), filepath.Join(dir, logsDir, "Chat.jsonl")); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	if _, err := os.Stat(filepath.Join(dir, logsDir, "%43hat.jsonl")); err != nil {
		t.Fatalf("old-style log not renamed: %v", err)
	}
	if got := readable(t, s, "Chat"); len(got) != 2 {
		t.Fatalf("Chat has %d turns after the rename, want 2", len(got))
	}
	if got := readable(t, s, "chat"); len(got) != 4 {
		t.Fatalf("chat has %d turns, want 4", len(got))
	}
	list, err := s.Conversations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("conversations %+v, want Chat and chat", list)
	}
}

func TestParseTurnDocID(t *testing.T) {
	tests := []struct {
		id   string
		conv string
		seq  int
		ok   bool
	}{
		{turnDocID("c", 12), "c", 12, true},
		{turnDocID("team.chat:2026-11", 1), "team.chat:2026-11", 1, true},
		{segmentDocID("c", 3), "", 0, false},
		{tagDocID("c", "go"), "", 0, false},
		{"c/t0", "", 0, false},
		{"c/t012", "", 0, false},
		{"/t1", "", 0, false},
		{"c", "", 0, false},
	}
	for _, tc := range tests {
		conv, seq, ok := parseTurnDocID(tc.id)
		if conv != tc.conv || seq != tc.seq || ok != tc.ok {
			t.Errorf("parseTurnDocID(%q) = %q, %d, %v; want %q, %d, %v", tc.id, conv, seq, ok, tc.conv, tc.seq, tc.ok)
		}
	}
}
