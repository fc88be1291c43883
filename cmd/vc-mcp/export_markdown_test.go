package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

func TestExportMarkdownCLI(t *testing.T) {
	data := t.TempDir()
	s, err := memory.Open(context.Background(), memory.Options{Dir: data, ProtectedTurns: 2})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []memory.Message
	for i, line := range strings.Split(strings.TrimSpace(readMarkdownFile(t, "../../testdata/conversation.jsonl")), "\n")[:10] {
		var m memory.Message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		msgs = append(msgs, m)
	}
	if _, err := s.Ingest(context.Background(), memory.IngestRequest{ConversationID: "proj:demo", Messages: msgs, Force: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "md")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no format", []string{"--out", out, "--data-dir", data}, "--format is required"},
		{"bad format", []string{"--format=html", "--out", out, "--data-dir", data}, `unknown --format "html"`},
		{"no out", []string{"--format", "markdown", "--data-dir", data}, "--out DIR is required"},
		{"missing value", []string{"--format", "markdown", "--data-dir", data, "--out"}, "needs a value"},
		{"bad conversation", []string{"--format", "markdown", "--out", out, "--data-dir", data, "--conversation", "../x"}, "--conversation"},
		{"unknown conversation", []string{"--format", "markdown", "--out", out, "--data-dir", data, "--conversation", "nope"}, "no stored messages"},
		{"all", []string{"--format", "markdown", "--out", out, "--data-dir", data}, ""},
		{"one", []string{"--format=markdown", "--out=" + out, "--data-dir=" + data, "--conversation=proj:demo"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"export"}, tt.args...), strings.NewReader(""), &stdout, &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v (stderr %q)", err, stderr.String())
			}
			if !strings.Contains(stdout.String(), "exported 1 conversations") {
				t.Fatalf("stdout %q", stdout.String())
			}
		})
	}
	// The conversation id has a ':' (not valid in Windows file names): its
	// directory is a safe name, and the top-level index links to it.
	idx := readMarkdownFile(t, filepath.Join(out, "index.md"))
	dirs, _ := filepath.Glob(filepath.Join(out, "proj_demo-*"))
	if len(dirs) != 1 || !strings.Contains(idx, filepath.Base(dirs[0])+"/index.md") {
		t.Fatalf("conversation dirs %v, index:\n%s", dirs, idx)
	}
	segs, _ := filepath.Glob(filepath.Join(dirs[0], "*", "s1.md"))
	if len(segs) != 1 || !strings.Contains(readMarkdownFile(t, segs[0]), "summary_method: extractive") {
		t.Fatalf("segment s1 files %v", segs)
	}
	if !strings.Contains(readMarkdownFile(t, filepath.Join(dirs[0], "active.md")), "t10") {
		t.Error("active.md lacks the protected tail t10")
	}
}

func readMarkdownFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
