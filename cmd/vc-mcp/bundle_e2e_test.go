package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

var embeddingsLine = regexp.MustCompile(`Embeddings: [^\n]*`)

// bundleAnswers are what a client sees of a data directory over MCP.
func bundleAnswers(t *testing.T, s *stdioServer) []string {
	t.Helper()
	var out []string
	// The features line names the model path, which is under each test
	// process's own HOME.
	status := text(mustOK(t, s.c, "domain_status", map[string]any{"conversation_id": "proj:garden"}))
	out = append(out, embeddingsLine.ReplaceAllString(status, "Embeddings: ..."))
	for _, q := range []string{"sourdough rye flour", "ingress controller certificates", "drip irrigation detail 12", "cold proof"} {
		out = append(out, text(mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "proj:garden", "query": q})))
	}
	for _, q := range []string{"what did we say about the sourdough proof?", "kubernetes upgrade certificates"} {
		out = append(out, text(mustOK(t, s.c, "recall_context", map[string]any{"conversation_id": "proj:garden", "message": q, "max_tokens": 600})))
	}
	out = append(out, text(mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "notes", "query": "staging port"})))
	return out
}

// bundleBody drops a bundle's header (its export time) and trailer (a
// checksum that covers the header), keeping every conversation, message
// and decision line.
func bundleBody(b []byte) []byte {
	_, rest, _ := bytes.Cut(b, []byte{'\n'})
	rest = bytes.TrimSuffix(rest, []byte{'\n'})
	if i := bytes.LastIndexByte(rest, '\n'); i >= 0 {
		return rest[:i+1]
	}
	return nil
}

// TestBundleCLI: the binary exports a compacted memory over a running
// host, imports it into an empty data directory, and a host there gives
// the same answers; the re-export and the master logs are identical; bad
// bundles and existing conversations are refused and write nothing.
func TestBundleCLI(t *testing.T) {
	src := t.TempDir()
	settings := []string{"--context-window", "4000", "--protected-turns", "4"}
	s := startStdio(t, src, settings...)
	batch := topicalBatch()
	for i := 0; i < len(batch); i += 50 {
		mustOK(t, s.c, "compact_context", map[string]any{"conversation_id": "proj:garden", "messages": batch[i:min(len(batch), i+50)]})
	}
	mustOK(t, s.c, "compact_context", map[string]any{"conversation_id": "notes", "messages": []any{msg("user", "The staging port is 8443 & the <admin> page is /ops.")}})
	var st struct {
		Totals struct {
			Segments int `json:"segments"`
		} `json:"totals"`
	}
	structured(t, mustOK(t, s.c, "domain_status", map[string]any{"conversation_id": "proj:garden"}), &st)
	if st.Totals.Segments == 0 {
		t.Fatal("setup: nothing was compacted")
	}
	want := bundleAnswers(t, s)

	// Exported while the host runs: the shared server pauses for it.
	file := filepath.Join(t.TempDir(), "memory.jsonl")
	out, _ := runCLI(t, "export", "--out", file, "--data-dir", src)
	if !strings.Contains(out, "exported 2 conversation(s)") || !strings.Contains(out, "301 message(s)") {
		t.Errorf("export: got %q", out)
	}
	bundle, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(bundle, []byte(`{"format":"vc-mcp-bundle","version":1,`)) {
		t.Fatalf("bundle header: %.120s", bundle)
	}
	// The host reconnects once the export is done.
	if got := text(mustOK(t, s.c, "find_quote", map[string]any{"conversation_id": "notes", "query": "staging port"})); got != want[len(want)-1] {
		t.Errorf("the host after the export: %s", got)
	}
	s.c.Close()
	stopShared(t, src)
	// --out - writes the same bundle to stdout.
	stdout, stderr := runCLI(t, "export", "--format", "jsonl", "--out", "-", "--conversation", "notes", "--conversation", "proj:garden", "--data-dir", src)
	if !bytes.Equal(bundleBody([]byte(stdout)), bundleBody(bundle)) || !strings.Contains(stderr, "exported 2 conversation(s)") {
		t.Errorf("export to stdout differs from the file (stderr %q): %s", stderr, lineDiff(bundleBody(bundle), bundleBody([]byte(stdout))))
	}

	dst := t.TempDir()
	out, stderr = runCLI(t, "import", file, "--data-dir", dst)
	if !strings.Contains(out, "2 restored") || !strings.Contains(out, "301 message(s)") {
		t.Errorf("import: got %q", out)
	}
	if !strings.Contains(stderr, "importing bundle") {
		t.Errorf("no progress bar on stderr: %q", stderr)
	}
	for _, name := range []string{"logs/notes.jsonl", "logs/proj%3Agarden.jsonl", "decisions/proj%3Agarden.log"} {
		a, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: imported bytes differ from the source's (%v)", name, err)
		}
	}
	d := startStdio(t, dst, settings...)
	got := bundleAnswers(t, d)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("answer %d differs after the import:\nsource   %s\nimported %s", i, want[i], got[i])
		}
	}
	d.c.Close()
	stopShared(t, dst)
	again := filepath.Join(t.TempDir(), "again.jsonl")
	runCLI(t, "export", "--format=jsonl", "--out="+again, "--data-dir", dst)
	if b, err := os.ReadFile(again); err != nil || !bytes.Equal(bundleBody(b), bundleBody(bundle)) {
		t.Errorf("re-export of the imported memory differs from the bundle (%v): %s", err, lineDiff(bundleBody(bundle), bundleBody(b)))
	}

	// Into a directory that holds them already: refused, then merged.
	if msg := cliFails(t, "import", file, "--data-dir", dst); !strings.Contains(msg, "already in the data directory") || !strings.Contains(msg, "--merge") {
		t.Errorf("import over existing conversations: %q", msg)
	}
	out, _ = runCLI(t, "import", "--format", "bundle", "--merge", again, "--data-dir", dst)
	if !strings.Contains(out, "2 already there; 0 message(s) and 0 decision(s) written") {
		t.Errorf("merge of the same bundle: got %q", out)
	}

	// Damaged, truncated and future bundles: refused, nothing written.
	bad := map[string][]byte{
		"truncated": bundle[:len(bundle)*2/3],
		"edited":    bytes.Replace(bundle, []byte("8443"), []byte("8444"), 1),
		"future":    bytes.Replace(bundle, []byte(`"version":1`), []byte(`"version":7`), 1),
	}
	wantErr := map[string]string{"truncated": "truncated", "edited": "does not verify", "future": "upgrade vc-mcp"}
	for name, data := range bad {
		path := filepath.Join(t.TempDir(), name+".jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		empty := t.TempDir()
		msg := cliFails(t, "import", path, "--data-dir", empty)
		if !strings.Contains(msg, wantErr[name]) || !strings.Contains(msg, "nothing was imported") {
			t.Errorf("%s bundle: %q, want an error about %q", name, msg, wantErr[name])
		}
		if entries, _ := os.ReadDir(empty); len(entries) != 0 {
			t.Errorf("%s bundle: the data directory got %d entries, want none", name, len(entries))
		}
	}
}

// lineDiff shows the first line where two bundles differ.
func lineDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range min(len(wl), len(gl)) {
		if wl[i] != gl[i] {
			return fmt.Sprintf("line %d:\nwant %.600s\ngot  %.600s", i+1, wl[i], gl[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(gl), len(wl))
}

// cliFails runs the binary, which must fail, and returns its stderr.
func cliFails(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = childEnv(t)
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("vc-mcp %s: %v, want a failure\n%s", strings.Join(args, " "), err, errb.String())
	}
	return errb.String()
}

func TestExportDispatch(t *testing.T) {
	data := t.TempDir()
	s, err := memory.Open(context.Background(), memory.Options{Dir: data})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(context.Background(), memory.IngestRequest{ConversationID: "c", Messages: []memory.Message{{Role: "user", Content: []byte(`"hello bundle"`)}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
		wantOut string // a file under dir that must exist afterwards
	}{
		{"jsonl by extension", []string{"--out", filepath.Join(dir, "a.JSONL")}, "", "a.JSONL"},
		{"jsonl named", []string{"--format", "jsonl", "--out", filepath.Join(dir, "b.bundle")}, "", "b.bundle"},
		{"markdown still", []string{"--format", "markdown", "--out", filepath.Join(dir, "md")}, "", "md/c/index.md"},
		{"unknown format", []string{"--format", "xml", "--out", filepath.Join(dir, "x")}, `unknown --format "xml" (want markdown or jsonl)`, ""},
		{"no out", []string{"--format", "jsonl"}, "--out FILE is required", ""},
		{"no format", []string{"--out", filepath.Join(dir, "somewhere")}, "--format is required (markdown, or jsonl", ""},
		{"unknown conversation", []string{"--out", filepath.Join(dir, "n.jsonl"), "--conversation", "nope"}, "no stored messages", ""},
		{"bad conversation", []string{"--out", filepath.Join(dir, "n.jsonl"), "--conversation", "../x"}, "--conversation", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append(append([]string{"export"}, tt.args...), "--data-dir", data), strings.NewReader(""), &stdout, &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if _, serr := os.Stat(filepath.Join(dir, "n.jsonl")); serr == nil {
					t.Error("a failed export left a file")
				}
				return
			}
			if err != nil {
				t.Fatalf("export: %v\n%s", err, stderr.String())
			}
			if _, err := os.Stat(filepath.Join(dir, tt.wantOut)); err != nil {
				t.Errorf("no %s after the export: %v", tt.wantOut, err)
			}
		})
	}
}
