package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMarkdownMirrorOverStdio: serve --markdown-mirror writes the Markdown
// view of what a client stores and compacts over the real protocol.
func TestMarkdownMirrorOverStdio(t *testing.T) {
	mirror := filepath.Join(t.TempDir(), "md")
	s := startStdio(t, t.TempDir(), "--markdown-mirror", mirror)
	msgs := []any{
		msg("user", "We should migrate the Postgres database to version 16 before the May release."),
		msg("assistant", "Agreed: pg_upgrade in link mode, Marco owns the staging rehearsal."),
	}
	for i := range 8 {
		msgs = append(msgs, msg([]string{"user", "assistant"}[i%2], fmt.Sprintf("My dog Rex has vet appointment number %d on Thursday.", i)))
	}
	mustOK(t, s.c, "compact_context", map[string]any{"messages": msgs, "force": true})
	deadline := time.Now().Add(30 * time.Second)
	for {
		idx, _ := os.ReadFile(filepath.Join(mirror, "default", "index.md"))
		segs, _ := filepath.Glob(filepath.Join(mirror, "default", "*", "s1.md"))
		if strings.Contains(string(idx), "turns: 10") && len(segs) == 1 {
			seg, err := os.ReadFile(segs[0])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(seg), "log: logs/default.jsonl") {
				t.Fatalf("segment file:\n%s", seg)
			}
			break
		}
		if time.Now().After(deadline) {
			var files []string
			_ = filepath.WalkDir(mirror, func(p string, _ fs.DirEntry, _ error) error { files = append(files, p); return nil })
			t.Fatalf("mirror not written; files %v; index:\n%s\nserver stderr:\n%s", files, idx, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Forgets: the forgotten turn leaves the mirror files.
	mustOK(t, s.c, "forget", map[string]any{"conversation_id": "default", "query": "appointment number 3 on"})
	deadline = time.Now().Add(30 * time.Second)
	for {
		var hits, files []string
		_ = filepath.WalkDir(mirror, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			files = append(files, p)
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "appointment number 3 on") {
				hits = append(hits, p)
			}
			return nil
		})
		if len(hits) == 0 && len(files) > 0 {
			idx, _ := os.ReadFile(filepath.Join(mirror, "default", "index.md"))
			if !strings.Contains(string(idx), "Postgres") && !strings.Contains(string(idx), "postgres") {
				t.Fatalf("forget emptied the mirror:\n%s", idx)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the forgotten turn is still in %v; server stderr:\n%s", hits, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mirrorFilesWith lists the files under dir that hold text.
func mirrorFilesWith(dir, text string) (hits, files []string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, p)
		if b, _ := os.ReadFile(p); strings.Contains(string(b), text) {
			hits = append(hits, p)
		}
		return nil
	})
	return hits, files
}

// TestMarkdownMirrorAfterCLIForget: `vc-mcp forget` from the command line
// runs with no server to keep the mirror (it pauses the shared one, and
// here none runs): the forgotten text must leave the mirror's pages when
// the command ends, not when a server next starts (found by a hostile
// review of scan --redact, which goes the same way).
func TestMarkdownMirrorAfterCLIForget(t *testing.T) {
	dir, mirror := t.TempDir(), filepath.Join(t.TempDir(), "md")
	s := startStdio(t, dir, "--markdown-mirror", mirror)
	mustOK(t, s.c, "compact_context", map[string]any{"conversation_id": "home", "messages": []any{
		msg("user", "The boathouse key hides under the blue heron statue."),
		msg("assistant", "Noted where the boathouse key is."),
		msg("user", "Next week we repaint the kayak rack green."),
	}})
	waitFor(t, "the mirror to show the turns", func() bool {
		hits, _ := mirrorFilesWith(mirror, "blue heron statue")
		return len(hits) > 0
	})
	s.c.Close()
	quiesceNow(t, dir)
	if out, errs, err := runCLIIn(t, "", "forget", "--data-dir", dir, "--markdown-mirror", mirror, "--conversation", "home", "--query", "blue heron", "--yes"); err != nil {
		t.Fatalf("forget: %v\n%s%s", err, out, errs)
	}
	if hits, files := mirrorFilesWith(mirror, "blue heron statue"); len(hits) > 0 || len(files) == 0 {
		t.Errorf("after a CLI forget the mirror still shows the forgotten turn in %v (files %v)", hits, files)
	}
	if hits, _ := mirrorFilesWith(mirror, "kayak rack green"); len(hits) == 0 {
		t.Error("the mirror lost the turn that was kept")
	}
}
