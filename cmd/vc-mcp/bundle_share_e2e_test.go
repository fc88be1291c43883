package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestBundleCommandsBackToBack: export, import and export again right
// after one another while a host is connected. Each command stops the
// shared server; the host's bridge starts another at once, which must not
// keep the next command out ("data directory is locked").
func TestBundleCommandsBackToBack(t *testing.T) {
	src := t.TempDir()
	s := startStdio(t, src)
	mustOK(t, s.c, "compact_context", map[string]any{"conversation_id": "n", "messages": []any{msg("user", "the heron nests by the weir")}})
	out := t.TempDir()
	for i := range 3 {
		file := filepath.Join(out, fmt.Sprintf("b%d.jsonl", i))
		runCLI(t, "export", "--out", file, "--data-dir", src)
		if o, _ := runCLI(t, "import", "--merge", file, "--data-dir", src); !strings.Contains(o, "1 already there") {
			t.Errorf("round %d: re-import into the source: %q", i, o)
		}
	}
	if got := text(mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "n", "query": "heron weir"})); !strings.Contains(got, "heron") {
		t.Errorf("the host after the commands: %s", got)
	}
}
