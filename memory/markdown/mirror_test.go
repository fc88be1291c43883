package markdown

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

// citySplitter splits any tag it is offered by the city a sample names.
type citySplitter struct{}

func (citySplitter) SplitTag(ctx context.Context, in memory.SplitRequest) (memory.SplitDecision, error) {
	d := memory.SplitDecision{Subtags: []string{in.Tag + "-kyoto", in.Tag + "-osaka", in.Tag}, Assignments: map[int]string{}}
	for i, s := range in.Samples {
		switch {
		case strings.Contains(s, "Kyoto"):
			d.Assignments[i] = in.Tag + "-kyoto"
		case strings.Contains(s, "Osaka"):
			d.Assignments[i] = in.Tag + "-osaka"
		}
	}
	return d, nil
}

// waitMirrored waits until the mirror's tree of a conversation is exactly
// what the store renders now, and returns it.
func waitMirrored(t *testing.T, s *memory.Store, out, conv string) map[string]string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := s.View(t.Context(), conv)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for p, b := range Render(v) {
			want[p] = string(b)
		}
		dir := filepath.Join(out, SafeName(conv))
		// The mirror may be swapping the directory right now: a tree that
		// cannot be read whole is read again.
		got, err := tryReadTree(dir)
		if err == nil && equalTrees(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			diffTrees(t, got, want)
			t.Fatalf("the mirror of %s did not catch up", conv)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFile waits up to 20 s for the file at path to hold want.
func waitFile(path, want string) (string, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), want) {
			return string(b), nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("no %q after 20 s", want)
			}
			return string(b), err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tryReadTree(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return out, err
}

func equalTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for p, x := range a {
		if y, ok := b[p]; !ok || x != y {
			return false
		}
	}
	return true
}

// treeText joins every file of a tree.
func treeText(tree map[string]string) string {
	var b strings.Builder
	for _, text := range tree {
		b.WriteString(text)
	}
	return b.String()
}

func segmentFiles(tree map[string]string) []string {
	var out []string
	for p := range tree {
		if base := filepath.Base(p); strings.HasPrefix(base, "s") && strings.HasSuffix(base, ".md") {
			out = append(out, p)
		}
	}
	return out
}

// TestMirrorFollowsMemory: the mirror writes what is stored, then the
// segments of a compaction, then the subtags of a split, and overwrites a
// hand edit (it is never read back).
func TestMirrorFollowsMemory(t *testing.T) {
	s := openStore(t, memory.Options{ProtectedTurns: 4, Splitter: citySplitter{}})
	out := filepath.Join(t.TempDir(), "mirror")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	m := &Mirror{Src: s, Dir: out, Debounce: 10 * time.Millisecond}
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	msgs := fixture(t)

	// Stored, not compacted: every turn is in the active tail.
	ingest(t, s, "c", msgs[:6], false)
	tree := waitMirrored(t, s, out, "c")
	if segs := segmentFiles(tree); len(segs) != 0 {
		t.Fatalf("segments %v before any compaction", segs)
	}
	if !strings.Contains(tree[ActiveFile], "turns: [t1, t2, t3, t4, t5, t6]") {
		t.Fatalf("active.md:\n%s", tree[ActiveFile])
	}
	// The top-level index is written just after the conversation's tree.
	root, err := waitFile(filepath.Join(out, IndexFile), "[c](c/index.md): 6 turns")
	if err != nil {
		t.Fatalf("top-level index (%v):\n%s", err, root)
	}

	// A hand edit is not truth: the next change overwrites it.
	edited := filepath.Join(out, "c", ActiveFile)
	if err := os.WriteFile(edited, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Compacted: segments appear in their primary tag's directory.
	ingest(t, s, "c", msgs[6:16], true)
	tree = waitMirrored(t, s, out, "c")
	segs := segmentFiles(tree)
	if len(segs) == 0 {
		t.Fatal("no segment file after a forced compaction")
	}
	if strings.Contains(tree[ActiveFile], "edited by hand") {
		t.Fatal("the hand edit survived a rewrite")
	}
	v, err := s.View(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range v.Segments {
		if _, ok := tree[SafeName(sg.Primary)+"/"+sg.ID+".md"]; !ok {
			t.Errorf("segment %s missing from %v", sg.ID, segs)
		}
	}

	// Split: an over-broad tag gains subtags, each with its topic file.
	var trip []memory.Message
	base := time.Date(2024, 4, 1, 9, 0, 0, 0, time.UTC)
	for i := 0; i < 60; i++ {
		city := []string{"Kyoto", "Osaka", "Nara"}[i%3]
		trip = append(trip, memory.Message{Role: "user", Name: "Ana",
			Content:   []byte(fmt.Sprintf("%q", fmt.Sprintf("Japan itinerary: day %d in %s.", i+1, city))),
			Timestamp: base.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)})
	}
	ch := s.Watch(t.Context())
	ingest(t, s, "c", trip, false)
	var split memory.Change
	for split.Kind != memory.ChangeSplit {
		select {
		case split = <-ch:
		case <-time.After(20 * time.Second):
			t.Fatal("no split")
		}
	}
	tree = waitMirrored(t, s, out, "c")
	parent := split.Tags[0]
	for _, sub := range []string{parent + "-kyoto", parent + "-osaka"} {
		topic := tree[SafeName(sub)+"/"+TopicFile]
		if !strings.Contains(topic, "tag: "+sub) {
			t.Errorf("no topic file for subtag %s", sub)
		}
		if !strings.Contains(tree[IndexFile], "["+sub+"]("+SafeName(sub)+"/"+TopicFile+")") {
			t.Errorf("index does not list subtag %s", sub)
		}
	}

	// Forget: the forgotten turn leaves the mirror, text and id, and so do
	// the summaries that drew on it (remade without it).
	if !strings.Contains(treeText(tree), "analytics team") {
		t.Fatal("setup: the turn to forget is not in the mirror")
	}
	fr, err := s.Forget(t.Context(), memory.ForgetRequest{ConversationID: "c", Query: "analytics team"})
	if err != nil || fr.Forgotten != 1 {
		t.Fatalf("forget: %+v, %v", fr, err)
	}
	gone := fr.TurnIDs[0]
	tree = waitMirrored(t, s, out, "c")
	if all := treeText(tree); strings.Contains(all, "analytics team") {
		t.Fatal("the forgotten text is still in the mirror")
	}
	for p, text := range tree {
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "turns: [") && (strings.Contains(line, " "+gone+",") || strings.Contains(line, "["+gone+",") || strings.Contains(line, " "+gone+"]")) {
				t.Fatalf("%s still lists the forgotten turn %s: %s", p, gone, line)
			}
		}
	}
	if !strings.Contains(treeText(tree), "Marco owns the rehearsal") {
		t.Fatal("forget removed other turns from the mirror")
	}

	// A second conversation gets its own tree and a line in the top-level index.
	ingest(t, s, "other", msgs[:2], false)
	waitMirrored(t, s, out, "other")
	deadline := time.Now().Add(20 * time.Second)
	for {
		root, _ := os.ReadFile(filepath.Join(out, IndexFile))
		if strings.Contains(string(root), "conversations: 2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("top-level index does not list both conversations:\n%s", root)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMirrorStartRemovesStaleTrees: at start the mirror writes every
// conversation and removes trees it wrote for conversations that are gone,
// leaving directories it did not write alone.
func TestMirrorStartRemovesStaleTrees(t *testing.T) {
	s := openStore(t, memory.Options{})
	ingest(t, s, "kept", fixture(t)[:2], false)
	out := t.TempDir()
	stale := memory.ConversationView{ConversationID: "gone", LogFile: "logs/gone.jsonl"}
	if _, err := WriteConversation(out, stale); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- (&Mirror{Src: s, Dir: out}).Run(ctx) }()
	waitMirrored(t, s, out, "kept")
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := os.Stat(filepath.Join(out, "gone"))
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stale tree of a gone conversation is still there")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "notes")); err != nil {
		t.Fatalf("a directory the mirror did not write was touched: %v", err)
	}
}

// TestWriteRefusesForeignDirectory: an export never replaces a directory
// it did not write.
func TestWriteRefusesForeignDirectory(t *testing.T) {
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "logs", "keep.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := WriteConversation(out, memory.ConversationView{ConversationID: "logs"})
	if err == nil || !strings.Contains(err.Error(), "not written by vc-mcp") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(out, "logs", "keep.jsonl")); err != nil {
		t.Fatal(err)
	}
}
