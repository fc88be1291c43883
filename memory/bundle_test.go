package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/decisionlog"
	"github.com/vc-mcp/vc-mcp/memory/scrub"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

var bundleTime = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// exportAll writes every conversation of s as a bundle with a fixed header.
func exportAll(t *testing.T, s *Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := s.ExportBundle(context.Background(), &buf, BundleExportOptions{VCMCPVersion: "test", ExportedAt: bundleTime}); err != nil {
		t.Fatalf("ExportBundle: %v", err)
	}
	return buf.Bytes()
}

func readBundle(t *testing.T, data []byte) *Bundle {
	t.Helper()
	b, err := ReadBundle(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("ReadBundle: %v", err)
	}
	return b
}

// dirFiles maps every file under dir's logs/ and decisions/ to its bytes.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, sub := range []string{logsDir, decisionsDir} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[sub+"/"+e.Name()] = string(data)
		}
	}
	return out
}

// modelFree are store options whose tagger, summariser and splitter fail
// the test's check if an import calls them.
func modelFree(dir string) (Options, func() int64) {
	sum, tag, split := &countingSummarizer{fail: true}, &countingTagger{fail: true}, &refusingSplitter{}
	return Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Summarizer: sum, Tagger: tag, Splitter: split},
		func() int64 { return sum.calls.Load() + tag.calls.Load() + split.calls.Load() }
}

// TestBundleRoundTrip: compactions, a split and working-set changes
// exported, imported into an empty directory without any model call, give
// the same answers, byte-identical logs, and the same bundle again.
func TestBundleRoundTrip(t *testing.T) {
	src := t.TempDir()
	before := buildDerivedState(t, src)
	opts, _ := modelFree(src)
	a := openTest(t, opts)
	ingest(t, a, "other", chat(6, t0.Add(48*time.Hour)))
	// Scores depend on the whole index: observe c again beside "other".
	before = observe(t, a, "c")
	otherBefore := observe(t, a, "other")
	data := exportAll(t, a)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := readBundle(t, data)
	if st := b.Stats(); st.Conversations != 2 || st.Messages != 186 || st.Decisions < 10 {
		t.Fatalf("bundle holds %+v, want 2 conversations, 186 messages and the decisions", st)
	}

	dst := t.TempDir()
	opts, calls := modelFree(dst)
	s := openTest(t, opts)
	res, err := s.ImportBundle(context.Background(), b, BundleImportOptions{}, nil)
	if err != nil {
		t.Fatalf("ImportBundle: %v", err)
	}
	if want := (BundleImportResult{Conversations: 2, Restored: 2, Messages: 186, Decisions: b.Stats().Decisions}); res != want {
		t.Errorf("import result %+v, want %+v", res, want)
	}
	if err := s.WaitIndexed(context.Background()); err != nil {
		t.Fatal(err)
	}
	compareSnapshots(t, before, observe(t, s, "c"))
	compareSnapshots(t, otherBefore, observe(t, s, "other"))
	if n := calls(); n != 0 {
		t.Errorf("import called a model %d times, want 0", n)
	}
	if again := exportAll(t, s); !bytes.Equal(again, data) {
		t.Errorf("re-export differs from the imported bundle:\n%s", firstDiff(data, again))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want, got := dirFiles(t, src), dirFiles(t, dst)
	if len(got) != 4 {
		t.Errorf("imported files %v, want two master logs and two decisions logs", keys(got))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: imported bytes differ from the source (%d vs %d bytes)", name, len(got[name]), len(w))
		}
	}
}

func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\nwant %s\ngot  %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines vs %d", len(al), len(bl))
}

// TestBundleImportExisting: without merging, a conversation already there
// fails the whole import and nothing is written; merging adds what is
// missing, is idempotent, and refuses a conversation that went its own way.
func TestBundleImportExisting(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Options{})
	ingest(t, src, "a", chat(8, t0))
	ingest(t, src, "b", chat(4, t0))
	first := readBundle(t, exportAll(t, src))
	ingest(t, src, "a", chat(12, t0)[8:])
	second := readBundle(t, exportAll(t, src))
	wantA, err := src.Status(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	if _, err := s.ImportBundle(ctx, first, BundleImportOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	ingest(t, s, "c", chat(2, t0))
	snap := dirFiles(t, dir)

	_, err = s.ImportBundle(ctx, second, BundleImportOptions{}, nil)
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "a, b") {
		t.Fatalf("import over existing conversations: %v, want ErrExists naming a and b", err)
	}
	if after := dirFiles(t, dir); fmt.Sprint(after) != fmt.Sprint(snap) {
		t.Fatal("a refused import changed files")
	}

	res, err := s.ImportBundle(ctx, second, BundleImportOptions{Merge: true}, nil)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	if res.Extended != 1 || res.Unchanged != 1 || res.Messages != 4 || res.Restored != 0 {
		t.Errorf("merge result %+v, want a extended by 4 messages, b unchanged", res)
	}
	got, err := s.Status(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Totals.Turns != wantA.Totals.Turns || got.Totals.Turns != 12 {
		t.Errorf("merged a has %d turns, want %d", got.Totals.Turns, wantA.Totals.Turns)
	}
	fq, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "a", Query: "GOMAXPROCS is 12"})
	if err != nil || len(fq.Quotes) == 0 {
		t.Errorf("find_quote after merge: %v, %d quotes; want the merged turn", err, len(fq.Quotes))
	}
	snap = dirFiles(t, dir)
	srcFiles := dirFiles(t, src.opts.Dir)
	for _, name := range []string{"logs/a.jsonl", "decisions/a.log"} {
		if snap[name] != srcFiles[name] {
			t.Errorf("%s after merge differs from the source's", name)
		}
	}

	// Idempotent: the same bundle again stores nothing.
	res, err = s.ImportBundle(ctx, second, BundleImportOptions{Merge: true}, nil)
	if err != nil || res.Unchanged != 2 || res.Messages+res.Decisions != 0 {
		t.Errorf("second merge: %+v, %v; want everything unchanged", res, err)
	}
	if after := dirFiles(t, dir); fmt.Sprint(after) != fmt.Sprint(snap) {
		t.Error("a repeated merge changed files")
	}

	// b went its own way here: a merge cannot join them.
	ingest(t, s, "b", []Message{msg("user", "Ana", "something only this directory heard", t0.Add(time.Hour))})
	ingest(t, src, "b", []Message{msg("user", "Ana", "something only the source heard", t0.Add(time.Hour))})
	third := readBundle(t, exportAll(t, src))
	snap = dirFiles(t, dir)
	_, err = s.ImportBundle(ctx, third, BundleImportOptions{Merge: true}, nil)
	if !errors.Is(err, ErrMergeConflict) || !strings.Contains(err.Error(), "b:") {
		t.Fatalf("merging a diverged conversation: %v, want ErrMergeConflict naming b", err)
	}
	if after := dirFiles(t, dir); fmt.Sprint(after) != fmt.Sprint(snap) {
		t.Error("a refused merge changed files")
	}
}

// smallBundleStore is a deterministic store: a fixed clock, the keyword
// tagger and the extractive summariser, two conversations, one compaction.
func smallBundleStore(t *testing.T) *Store {
	t.Helper()
	s := openTest(t, Options{Now: func() time.Time { return bundleTime }, ContextWindow: 300, ProtectedTurns: 2,
		Tagger: tagging.NewKeyword(nil), Summarizer: summarize.NewExtractive(nil)})
	msgs := chat(16, t0)
	for i := 0; i < len(msgs); i += 4 {
		ingest(t, s, "proj:Chat", msgs[i:i+4])
	}
	ingest(t, s, "notes", []Message{
		msg("user", "", "Remember: the <staging> server is staging-3 & the port is 8443.", t0),
		{Role: "assistant", Content: []byte(`[{"type":"text","text":"Noted: staging-3, port 8443."}]`), ID: "m-2"},
	})
	return s
}

// TestBundleGolden pins the format: a small bundle, byte for byte.
func TestBundleGolden(t *testing.T) {
	s := smallBundleStore(t)
	got := exportAll(t, s)
	path := filepath.Join("testdata", "bundle", "small.jsonl")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./memory -run TestBundleGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("bundle drifted from %s (go test ./memory -run TestBundleGolden -update if intended):\n%s", path, firstDiff(want, got))
	}
	b := readBundle(t, want)
	if b.Header.Version != BundleVersion || b.Header.VCMCPVersion != "test" || !b.Header.ExportedAt.Equal(bundleTime) {
		t.Errorf("header %+v", b.Header)
	}
	kinds := map[string]bool{}
	for _, c := range b.Conversations {
		for _, d := range c.Decisions {
			k, _ := decisionKind(d)
			kinds[k] = true
		}
	}
	if !kinds[decTags] || !kinds[decCompact] {
		t.Errorf("golden bundle's decision kinds %v, want tags and compact", kinds)
	}
}

// TestReadBundleRefuses: every damaged, truncated, foreign or future file
// is refused with an error that says what is wrong.
func TestReadBundleRefuses(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "bundle", "small.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(good), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	join := func(ls []string) []byte { return []byte(strings.Join(ls, "")) }
	replaceLine := func(i int, old, new string) []byte {
		ls := append([]string(nil), lines...)
		if !strings.Contains(ls[i], old) {
			t.Fatalf("line %d has no %q", i+1, old)
		}
		ls[i] = strings.Replace(ls[i], old, new, 1)
		return join(ls)
	}
	msgLine := -1
	for i, l := range lines {
		if strings.Contains(l, `"type":"message"`) && strings.Contains(l, "8443") {
			msgLine = i
			break
		}
	}
	if msgLine < 0 {
		t.Fatal("golden bundle has no message about port 8443")
	}
	withoutLine := func(i int) []byte {
		return join(append(append([]string(nil), lines[:i]...), lines[i+1:]...))
	}
	cases := []struct {
		name    string
		data    []byte
		wantErr error
		want    string
	}{
		{"empty", nil, ErrBadBundle, "empty"},
		{"not a bundle", []byte(`[{"mapping":{}}]` + "\n"), ErrBadBundle, "not a vc-mcp-bundle header"},
		{"future version", replaceLine(0, `"version":1`, `"version":2`), ErrBundleVersion, "version 2"},
		{"version not a number", replaceLine(0, `"version":1`, `"version":"1"`), ErrBadBundle, "not a positive whole number"},
		{"cut before the trailer", join(lines[:len(lines)-1]), ErrBadBundle, "truncated"},
		{"cut inside a line", good[:len(good)-len(lines[len(lines)-1])-20], ErrBadBundle, "truncated"},
		{"a message line lost", withoutLine(msgLine), ErrBadBundle, "declares"},
		{"message text edited", replaceLine(msgLine, "8443", "8444"), ErrBadBundle, "does not verify"},
		{"header edited", replaceLine(0, `"vc_mcp_version":"test"`, `"vc_mcp_version":"tset"`), ErrBadBundle, "checksum mismatch"},
		{"trailer count edited", replaceLine(len(lines)-1, `"conversations":2`, `"conversations":3`), ErrBadBundle, "trailer counts"},
		{"data after the trailer", append(append([]byte(nil), good...), lines[1]...), ErrBadBundle, "after the trailer"},
		{"unknown line type", replaceLine(1, `"type":"conversation"`, `"type":"chapter"`), ErrBadBundle, "unknown line type"},
		{"decision kind mislabelled", replaceLine(len(lines)-2, `"kind":"`, `"kind":"x`), ErrBadBundle, "kind"},
		{"message of another conversation", replaceLine(msgLine, `"conversation":"notes"`, `"conversation":"nodes"`), ErrBadBundle, "outside that conversation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadBundle(bytes.NewReader(tc.data))
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadBundle = %v, %v; want %v mentioning %q", b, err, tc.wantErr, tc.want)
			}
		})
	}
}

// TestBundleCarriesUnknownDecisionKinds: a decision kind this version does
// not know (one added later, such as a forget tombstone) travels verbatim.
func TestBundleCarriesUnknownDecisionKinds(t *testing.T) {
	s := smallBundleStore(t)
	dir := s.opts.Dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	future := []byte(`{"kind":"tombstone","at":"2026-11-23T12:00:00Z","turn_ids":["t2"],"removed":{"t2":{"bytes":73}}}`)
	f, err := os.OpenFile(filepath.Join(dir, decisionsDir, "notes.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(decisionlog.Frame(future)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	b := readBundle(t, exportAll(t, s))
	notes := b.Conversations[0]
	if notes.ID != "notes" || !bytes.Equal(notes.Decisions[len(notes.Decisions)-1], future) {
		t.Fatalf("last decision of %s: %s, want the tombstone verbatim", notes.ID, notes.Decisions[len(notes.Decisions)-1])
	}
	dst := t.TempDir()
	d := openTest(t, Options{Dir: dst})
	if _, err := d.ImportBundle(context.Background(), b, BundleImportOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dirFiles(t, dst)["decisions/notes.log"]; !strings.HasSuffix(got, string(decisionlog.Frame(future))) {
		t.Errorf("imported decisions log does not end in the tombstone:\n%s", got)
	}
}

// FuzzReadBundle: no input panics, and whatever is accepted writes back to
// a bundle that reads as the same content.
func FuzzReadBundle(f *testing.F) {
	good, err := os.ReadFile(filepath.Join("testdata", "bundle", "small.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"format":"vc-mcp-bundle","version":1}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadBundle(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrBadBundle) && !errors.Is(err, ErrBundleVersion) {
				t.Fatalf("error %v wraps neither ErrBadBundle nor ErrBundleVersion", err)
			}
			return
		}
		var buf bytes.Buffer
		if _, err := WriteBundle(&buf, b); err != nil {
			t.Fatal(err)
		}
		again, err := ReadBundle(&buf)
		if err != nil {
			t.Fatalf("a bundle written from an accepted one does not read: %v", err)
		}
		if fmt.Sprint(again.Conversations) != fmt.Sprint(b.Conversations) {
			t.Fatal("content changed through a write and a read")
		}
	})
}

// TestBundleRefusesSecrets: a bundle whose messages hold a secret (made
// with scrubbing off) is refused by a store that scrubs, with nothing
// written, and accepted by one that does not; placeholders of a scrubbed
// store travel as they are.
func TestBundleRefusesSecrets(t *testing.T) {
	ctx := context.Background()
	const key = "sk-proj-Q9x8mZ2vL4nR7tK1pW6sY3bH5dF0gJ8cA2eU4iO6"
	plain := openTest(t, Options{Scrubber: scrub.Off()})
	ingest(t, plain, "keys", []Message{msg("user", "", "my key is "+key+" for the billing job", t0)})
	b := readBundle(t, exportAll(t, plain))

	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	_, err := s.ImportBundle(ctx, b, BundleImportOptions{}, nil)
	if !errors.Is(err, ErrSecretInBundle) || !strings.Contains(err.Error(), "t1 of keys") || strings.Contains(err.Error(), key) {
		t.Fatalf("import of a bundle holding a key: %v, want ErrSecretInBundle naming t1 and not the key", err)
	}
	if files := dirFiles(t, dir); len(files) != 0 {
		t.Errorf("a refused import wrote %v", keys(files))
	}
	off := openTest(t, Options{Scrubber: scrub.Off()})
	if _, err := off.ImportBundle(ctx, b, BundleImportOptions{}, nil); err != nil {
		t.Errorf("import with scrubbing off: %v", err)
	}

	scrubbed := openTest(t, Options{})
	ingest(t, scrubbed, "keys", []Message{msg("user", "", "my key is "+key+" for the billing job", t0)})
	data := exportAll(t, scrubbed)
	if bytes.Contains(data, []byte(key)) || !bytes.Contains(data, []byte("[secret:")) {
		t.Fatalf("a scrubbed store's bundle: %s", data)
	}
	if _, err := s.ImportBundle(ctx, readBundle(t, data), BundleImportOptions{}, nil); err != nil {
		t.Errorf("import of placeholders: %v", err)
	}
}

// TestBundleFromAnotherWriter: a bundle another tool wrote, with version 1
// master log records (no checksum, no hash) and no decisions, imports and
// is searchable; the tagger tags what no decision covers.
func TestBundleFromAnotherWriter(t *testing.T) {
	ctx := context.Background()
	b := &Bundle{Header: BundleHeader{ExportedAt: bundleTime, VCMCPVersion: "other-tool 0.1"}, Conversations: []BundleConversation{{
		ID: "elsewhere:trip",
		Messages: [][]byte{
			[]byte(`{"v":1,"seq":1,"role":"user","content":"We land in Lisbon on the 4th and take the tram to Alfama.","ts":"2025-06-01T10:00:00Z","at":"2025-06-01T10:00:00Z"}`),
			[]byte(`{"v":1,"seq":2,"role":"assistant","content":"Tram 28 goes to Alfama; buy a Viva Viagem card first.","at":"2025-06-01T10:00:05Z"}`),
		},
	}}}
	var buf bytes.Buffer
	if _, err := WriteBundle(&buf, b); err != nil {
		t.Fatal(err)
	}
	read := readBundle(t, buf.Bytes())
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	if _, err := s.ImportBundle(ctx, read, BundleImportOptions{}, nil); err != nil {
		t.Fatalf("import: %v", err)
	}
	if err := s.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	fq, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "elsewhere:trip", Query: "Viva Viagem card"})
	if err != nil || len(fq.Quotes) == 0 || fq.Quotes[0].TurnID != "t2" {
		t.Fatalf("find_quote on the imported bundle: %+v, %v; want t2", fq, err)
	}
	st, err := s.Status(ctx, "elsewhere:trip")
	if err != nil || st.Totals.Turns != 2 || len(st.Tags) == 0 {
		t.Fatalf("status: %+v, %v; want 2 tagged turns", st, err)
	}
	log, err := os.ReadFile(filepath.Join(dir, logsDir, fileName("elsewhere:trip")+logExt))
	if err != nil || string(log) != string(b.Conversations[0].Messages[0])+"\n"+string(b.Conversations[0].Messages[1])+"\n" {
		t.Errorf("master log %q (%v), want the records byte for byte", log, err)
	}
}

// TestBundleImportUnderLoad: imports (new conversations and a merge) run
// while other goroutines write and read the same store, under -race.
func TestBundleImportUnderLoad(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Options{})
	ingest(t, src, "c0", chat(20, t0)[:10])
	first := readBundle(t, exportAll(t, src))
	ingest(t, src, "c0", chat(20, t0)[10:])
	for i := 1; i < 4; i++ {
		ingest(t, src, fmt.Sprintf("c%d", i), chat(20, t0))
	}
	b := readBundle(t, exportAll(t, src))
	s := openTest(t, Options{MaxOpenConversations: 2})
	if _, err := s.ImportBundle(ctx, first, BundleImportOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	ingest(t, s, "local", chat(4, t0))
	done := make(chan struct{})
	errs := make(chan error, 3)
	go func() {
		defer close(done)
		_, err := s.ImportBundle(ctx, b, BundleImportOptions{Merge: true}, nil)
		errs <- err
	}()
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "local", Messages: []Message{msg("user", "", fmt.Sprintf("note %d about the garden", i), t0.Add(time.Duration(i)*time.Second))}}); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			for _, id := range []string{"c0", "c1", "c3", "local"} {
				if _, err := s.Recall(ctx, RecallRequest{ConversationID: id, Message: "Rex vaccination", MaxTokens: 300}); err != nil && !errors.Is(err, ErrNotFound) {
					errs <- err
					return
				}
			}
		}
	}()
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		st, err := s.Status(ctx, fmt.Sprintf("c%d", i))
		if err != nil || st.Totals.Turns != 20 {
			t.Errorf("c%d after the import: %+v, %v; want 20 turns", i, st.Totals, err)
		}
	}
}

// TestBundleLeavesDamagedRecordsOut: a record that fails its checksum in
// the source is not exported; the import keeps its turn id as a damaged
// placeholder, as the source does, and every other turn verbatim.
func TestBundleLeavesDamagedRecordsOut(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "d", chat(10, t0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, logsDir, "d.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte("appointment number 5"))
	data[i] = 'A'
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	b := readBundle(t, exportAll(t, s))
	if n := len(b.Conversations[0].Messages); n != 9 {
		t.Fatalf("exported %d messages, want the 9 that verify", n)
	}
	want, err := s.Status(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	d := openTest(t, Options{})
	if _, err := d.ImportBundle(ctx, b, BundleImportOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := d.Status(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if got.Totals.Turns != 10 || got.Totals.DamagedRecords != want.Totals.DamagedRecords || got.Totals.DamagedRecords != 1 {
		t.Errorf("imported totals %+v, want 10 turns with 1 damaged like the source's %+v", got.Totals, want.Totals)
	}
	fq, err := d.FindQuote(ctx, FindQuoteRequest{ConversationID: "d", Query: "appointment number 6"})
	if err != nil || len(fq.Quotes) == 0 || fq.Quotes[0].TurnID != "t6" {
		t.Errorf("find_quote after the gap: %+v, %v; want t6 under its own id", fq.Quotes, err)
	}
}

// TestReadsGoOnDuringABundleMerge: a merge that extends a loaded
// conversation replays what it appended into a fork of the state, holding
// only the writers' lock. Recall, find_quote and status answer with the
// state as it was while the replay is held, though its turns are in the
// index already; once the fork is in place they see the merged turns.
func TestReadsGoOnDuringABundleMerge(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Options{})
	ingest(t, src, "a", chat(8, t0))
	first := readBundle(t, exportAll(t, src))
	ingest(t, src, "a", chat(12, t0)[8:])
	second := readBundle(t, exportAll(t, src))

	s := openTest(t, Options{})
	if _, err := s.ImportBundle(ctx, first, BundleImportOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	replayHook = func() { once.Do(func() { close(held); <-release }) }
	t.Cleanup(func() { replayHook = nil })
	wrote := make(chan error, 1)
	go func() {
		_, err := s.ImportBundle(ctx, second, BundleImportOptions{Merge: true}, nil)
		wrote <- err
	}()
	<-held
	whileHeld(t, release, wrote, "a bundle merge held in its replay", func() error {
		return readsAnswer(s, "a", "when is the vet appointment for Rex?", "GOMAXPROCS is 12", func(r RecallResult, q FindQuoteResult) error {
			if !strings.Contains(r.Text, "vet clinic") {
				return fmt.Errorf("recall during the merge lost the stored turns:\n%s", r.Text)
			}
			if len(q.Quotes) != 0 {
				return fmt.Errorf("find_quote during the merge quoted %d turns that are not in place yet", len(q.Quotes))
			}
			return nil
		})
	})
	replayHook = nil
	st, err := s.Status(ctx, "a")
	if err != nil || st.Totals.Turns != 12 {
		t.Fatalf("after the merge: %d turns, %v; want 12", st.Totals.Turns, err)
	}
	q, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "a", Query: "GOMAXPROCS is 12"})
	if err != nil || len(q.Quotes) == 0 {
		t.Fatalf("find_quote after the merge: %v, %d quotes; want the merged turn", err, len(q.Quotes))
	}
}
