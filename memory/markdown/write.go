package markdown

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory"
)

// WriteConversation renders a conversation and writes its directory under
// out, replacing the previous one as a whole: the new tree is written and
// fsynced in a temporary directory beside it, then renamed into place. An
// unchanged tree is left alone (changed is false).
func WriteConversation(out string, v memory.ConversationView) (changed bool, err error) {
	name := SafeName(v.ConversationID)
	files := Render(v)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return false, fmt.Errorf("markdown: create %s: %w", out, err)
	}
	cleanLeftovers(out, name)
	dst := filepath.Join(out, name)
	if _, err := os.Stat(dst); err == nil && !ours(dst) {
		return false, fmt.Errorf("markdown: refusing to replace %s: it exists and was not written by vc-mcp (choose an empty or dedicated output directory)", dst)
	}
	if same, err := sameTree(dst, files); err != nil {
		return false, err
	} else if same {
		return false, nil
	}
	tmp, err := os.MkdirTemp(out, "."+name+".tmp-")
	if err != nil {
		return false, fmt.Errorf("markdown: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := writeTree(tmp, files); err != nil {
		return false, err
	}
	if err := swapDir(out, name, tmp); err != nil {
		return false, err
	}
	return true, nil
}

// RemoveConversation removes a conversation's directory, if this package
// wrote it (its index carries the generator mark).
func RemoveConversation(out, conversationID string) error {
	dir := filepath.Join(out, SafeName(conversationID))
	if !ours(dir) {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("markdown: remove %s: %w", dir, err)
	}
	return syncDir(out)
}

// ours reports whether dir is a conversation directory this package wrote.
func ours(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	return err == nil && bytes.HasPrefix(b, []byte("---\ngenerator: "+Generator+"\n"))
}

// writeTree writes files under dir, fsyncing every file and directory.
func writeTree(dir string, files map[string][]byte) error {
	dirs := map[string]bool{dir: true}
	for _, p := range sortedPaths(files) {
		path := filepath.Join(dir, filepath.FromSlash(p))
		parent := filepath.Dir(path)
		if !dirs[parent] {
			if err := os.MkdirAll(parent, 0o755); err != nil {
				return fmt.Errorf("markdown: %w", err)
			}
			dirs[parent] = true
		}
		if err := writeFileSync(path, files[p]); err != nil {
			return err
		}
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("markdown: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("markdown: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("markdown: fsync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("markdown: close %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic replaces path by data through a fsynced temporary file.
func writeFileAtomic(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("markdown: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("markdown: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("markdown: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("markdown: close %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("markdown: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("markdown: replace %s: %w", path, err)
	}
	return syncDir(dir)
}

// swapDir puts the finished tree tmp in place of out/name. The old tree is
// first renamed aside, so a reader sees either tree whole, never a mix.
func swapDir(out, name, tmp string) error {
	dst := filepath.Join(out, name)
	var old string
	if _, err := os.Stat(dst); err == nil {
		o, err := os.MkdirTemp(out, "."+name+".old-")
		if err != nil {
			return fmt.Errorf("markdown: %w", err)
		}
		if err := os.Remove(o); err != nil {
			return fmt.Errorf("markdown: %w", err)
		}
		if err := os.Rename(dst, o); err != nil {
			return fmt.Errorf("markdown: move %s aside: %w", dst, err)
		}
		old = o
	}
	if err := os.Rename(tmp, dst); err != nil {
		if old != "" {
			_ = os.Rename(old, dst)
		}
		return fmt.Errorf("markdown: put %s in place: %w", dst, err)
	}
	if err := syncDir(out); err != nil {
		return err
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("markdown: remove old tree %s: %w", old, err)
		}
	}
	return nil
}

// cleanLeftovers removes temporary trees a crash left behind.
func cleanLeftovers(out, name string) {
	for _, kind := range []string{".tmp-", ".old-"} {
		matches, _ := filepath.Glob(filepath.Join(out, "."+name+kind+"*"))
		for _, m := range matches {
			_ = os.RemoveAll(m)
		}
	}
}

// sameTree reports whether dir holds exactly files.
func sameTree(dir string, files map[string][]byte) (bool, error) {
	seen := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		want, ok := files[filepath.ToSlash(rel)]
		if !ok {
			return errDiffers
		}
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return errDiffers
		}
		seen++
		return nil
	})
	switch {
	case errors.Is(err, errDiffers), errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("markdown: read %s: %w", dir, err)
	}
	return seen == len(files), nil
}

var errDiffers = errors.New("tree differs")

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be fsynced there; renames are durable
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("markdown: open %s for fsync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("markdown: fsync %s: %w", dir, err)
	}
	return nil
}

// Source is what an export reads: memory.Store satisfies it.
type Source interface {
	Conversations(ctx context.Context) ([]memory.ConversationInfo, error)
	View(ctx context.Context, conversationID string) (memory.ConversationView, error)
}

// Export writes the Markdown view of the named conversations (all of them
// when ids is empty) under out, and the top-level index of every
// conversation when exporting all. It returns the conversations written.
func Export(ctx context.Context, src Source, out string, ids []string) ([]string, error) {
	all := len(ids) == 0
	infos, err := src.Conversations(ctx)
	if err != nil {
		return nil, fmt.Errorf("markdown: list conversations: %w", err)
	}
	if all {
		for _, in := range infos {
			ids = append(ids, in.ID)
		}
	}
	var done []string
	for _, id := range ids {
		v, err := src.View(ctx, id)
		if err != nil {
			return done, fmt.Errorf("markdown: conversation %s: %w", id, err)
		}
		if _, err := WriteConversation(out, v); err != nil {
			return done, err
		}
		done = append(done, v.ConversationID)
	}
	if all {
		if err := WriteRootIndex(out, infos); err != nil {
			return done, err
		}
	}
	return done, nil
}

// WriteRootIndex writes out/index.md, listing every conversation.
func WriteRootIndex(out string, infos []memory.ConversationInfo) error {
	var b strings.Builder
	fmt.Fprintf(&b, "---\ngenerator: %s\nconversations: %d\n---\n\n# Memory\n\n", Generator, len(infos))
	b.WriteString("A readable view of vc-mcp's memory, one directory per conversation. It is generated from the master logs and never read back: edits here change nothing.\n\n")
	if len(infos) == 0 {
		b.WriteString("_(no conversation yet)_\n")
	}
	for _, in := range infos {
		fmt.Fprintf(&b, "- %s: %s", link(in.ID, SafeName(in.ID)+"/"+IndexFile), count(in.Turns, "turn"))
		if !in.FirstSeen.IsZero() {
			fmt.Fprintf(&b, ", %s to %s", stamp(in.FirstSeen), stamp(in.LastSeen))
		}
		b.WriteString("\n")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("markdown: create %s: %w", out, err)
	}
	return writeFileAtomic(filepath.Join(out, IndexFile), []byte(b.String()))
}
