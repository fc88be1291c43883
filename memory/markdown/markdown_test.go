package markdown

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

var update = flag.Bool("update", false, "rewrite golden files")

func openStore(t testing.TB, opts memory.Options) *memory.Store {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := memory.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fixture reads the shared scripted conversation.
func fixture(t testing.TB) []memory.Message {
	t.Helper()
	f, err := os.Open("../../testdata/conversation.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []memory.Message
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m memory.Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("conversation.jsonl: %v", err)
		}
		out = append(out, m)
	}
	return out
}

func ingest(t testing.TB, s *memory.Store, conv string, msgs []memory.Message, force bool) memory.IngestResult {
	t.Helper()
	r, err := s.Ingest(context.Background(), memory.IngestRequest{ConversationID: conv, Messages: msgs, Force: force})
	if err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	return r
}

// readTree returns every file under dir by slash path.
func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out, err := tryReadTree(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	return out
}

// diffTrees reports the first differences between two trees.
func diffTrees(t testing.TB, got, want map[string]string) {
	t.Helper()
	n := 0
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			t.Errorf("missing %s", p)
		case g != w:
			t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", p, g, w)
		default:
			continue
		}
		if n++; n > 5 {
			t.Fatal("too many differences")
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected file %s", p)
		}
	}
}

// TestExportGolden pins the whole exported tree of the shared conversation,
// byte for byte: part compacted into segments, the rest in the active tail.
func TestExportGolden(t *testing.T) {
	// A fixed clock: the master log records when each turn was stored, so
	// its byte ranges depend on it.
	clock := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	s := openStore(t, memory.Options{ProtectedTurns: 4, Now: clock})
	msgs := fixture(t)
	ingest(t, s, "golden", msgs[:16], true)
	ingest(t, s, "golden", msgs[16:], false)
	out := t.TempDir()
	done, err := Export(t.Context(), s, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0] != "golden" {
		t.Fatalf("exported %v, want [golden]", done)
	}
	got := readTree(t, out)
	golden := filepath.Join("testdata", "golden")
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		for p, b := range got {
			path := filepath.Join(golden, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	diffTrees(t, got, readTree(t, golden))

	// The tree has what it promises: segments in their primary tag's
	// directory, the active tail named in the index, verbatim turns.
	idx := got["golden/index.md"]
	for _, want := range []string{"generator: vc-mcp", "log: logs/", "[active tail](active.md)", "## Topics"} {
		if !strings.Contains(idx, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	v, err := s.View(t.Context(), "golden")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Segments) == 0 || len(v.Active) == 0 {
		t.Fatalf("fixture gives %d segments and %d active turns; the test needs both", len(v.Segments), len(v.Active))
	}
	for _, sg := range v.Segments {
		f := got["golden/"+SafeName(sg.Primary)+"/"+sg.ID+".md"]
		if f == "" {
			t.Fatalf("segment %s has no file", sg.ID)
		}
		for _, tr := range sg.Turns {
			turn, err := s.Turn(t.Context(), "golden", tr.TurnID)
			if err != nil {
				t.Fatal(err)
			}
			if first := strings.SplitN(turn.Text, "\n", 2)[0]; first != "" && !strings.Contains(f, "> "+first+"\n") {
				t.Errorf("segment %s lacks turn %s verbatim (%q)", sg.ID, tr.TurnID, first)
			}
		}
	}

	// A re-export of unchanged memory changes nothing.
	if _, err := Export(t.Context(), s, out, nil); err != nil {
		t.Fatal(err)
	}
	diffTrees(t, readTree(t, out), got)
}

func TestSafeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"default", "default"},
		{"kyoto-trip", "kyoto-trip"},
		{"", "_untagged"},
		{"proj:vc-mcp_1.2", "proj_vc-mcp_1_2-"},
		{"_untagged", "_untagged-"},
		{"index.md", "index_md-"},
		// Names a case-folding file system or Windows would not hold
		// apart or at all.
		{"Chat", "Chat-"},
		{"chat", "chat"},
		{"con", "con-"},
		{"COM1", "COM1-"},
		{"console", "console"},
		// A name that looks like another's changed name is changed too.
		{"con-1143da2b", "con-1143da2b-"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := SafeName(tt.in)
		if !strings.HasPrefix(got, tt.want) || (strings.HasSuffix(tt.want, "-") != (got != tt.want)) {
			t.Errorf("SafeName(%q) = %q, want %q...", tt.in, got, tt.want)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("SafeName(%q) and SafeName(%q) collide on %q", tt.in, other, got)
		}
		seen[got] = tt.in
	}
	if SafeName("con") != "con-1143da2b" {
		t.Errorf("SafeName(con) = %q; the case above assumes con-1143da2b", SafeName("con"))
	}
	if strings.EqualFold(SafeName("Chat"), SafeName("chat")) {
		t.Error("Chat and chat share a directory on a case-insensitive file system")
	}
	if SafeName("a:b") == SafeName("a.b") {
		t.Error("a:b and a.b collide")
	}
}

// TestQuoteKeepsMessagesContained: a message's headings, fences and
// frontmatter-like lines stay inside its block quote, line for line.
func TestQuoteKeepsMessagesContained(t *testing.T) {
	in := "# Heading\r\n---\n```go\nunclosed\n\n> quoted"
	want := "> # Heading\n> ---\n> ```go\n> unclosed\n>\n> > quoted\n"
	if got := quote(in); got != want {
		t.Fatalf("quote =\n%s\nwant\n%s", got, want)
	}
}

func TestExportUnknownConversation(t *testing.T) {
	s := openStore(t, memory.Options{})
	ingest(t, s, "a", fixture(t)[:2], false)
	out := t.TempDir()
	_, err := Export(t.Context(), s, out, []string{"nope"})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("export of an unknown conversation: %v, want an error naming it", err)
	}
	if _, err := Export(t.Context(), s, out, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	tree := readTree(t, out)
	if _, ok := tree["a/index.md"]; !ok {
		t.Fatalf("no a/index.md in %v", tree)
	}
	if _, ok := tree["index.md"]; ok {
		t.Error("a one-conversation export wrote the top-level index")
	}
}
