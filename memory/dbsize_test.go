package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory/decisionlog"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tokens"
	bolt "go.etcd.io/bbolt"
)

// turnSegments returns each turn's segment name as Turn reports it.
func turnSegments(t *testing.T, s *Store, conv string) []string {
	t.Helper()
	st, err := s.Status(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, st.Totals.Turns)
	for i := range out {
		tr, err := s.Turn(context.Background(), conv, turnID(i+1))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = tr.Segment
	}
	return out
}

// TestTurnSegmentsFromRanges: a compaction does not rewrite its turns'
// records in vc.db; loading gives each turn its segment from the
// segments' ranges, the same after a reopen and after a rebuild.
func TestTurnSegmentsFromRanges(t *testing.T) {
	dir := t.TempDir()
	buildDerivedState(t, dir) // closes the store at cleanup: reopen below
	opts := Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := turnSegments(t, s, "c")
	inSegment := 0
	for _, sg := range want {
		if sg != "" {
			inSegment++
		}
	}
	if inSegment == 0 {
		t.Fatal("setup: no turn is in a segment")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The stored records of compacted turns carry no segment, but for the
	// few a tag split rewrote afterwards (with the segment they are in).
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	err = db.View(func(tx *bolt.Tx) error {
		return forEachRecord(tx.Bucket(convBucketName("c")).Bucket(bucketTurns), func(_ int, v []byte) error {
			tm, err := decodeTurn(v)
			if tm.Segment != 0 {
				stored++
			}
			return err
		})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if stored >= inSegment/2 {
		t.Errorf("%d turn records of %d compacted turns in vc.db hold a segment; want only those a split rewrote", stored, inSegment)
	}

	for _, how := range []string{"reopen", "rebuild"} {
		if how == "rebuild" {
			for _, p := range []string{dbFile, indexDir} {
				if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
					t.Fatal(err)
				}
			}
		}
		s := openTest(t, opts)
		got := turnSegments(t, s, "c")
		if len(got) != len(want) {
			t.Fatalf("%s: %d turns, want %d", how, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: turn %d is in segment %q, want %q", how, i+1, got[i], want[i])
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// withObjectTags rewrites conversation conv's decisions log with every
// turn of a tags decision as a JSON object, as logs held them before
// turnTags.MarshalJSON.
func withObjectTags(t *testing.T, dir, conv string) {
	t.Helper()
	type object turnTags
	rewriteDecisions(t, dir, conv, "tags decision", func(d decision, line []byte) ([]byte, int) {
		if d.Kind != decTags {
			return line, 0
		}
		if !bytes.Contains(line, []byte(`"turns":[[`)) {
			t.Fatalf("tags decision not in the array form: %.100s", line)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(decisionBodyT(t, line), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "vocab")
		objs := make([]object, len(d.Turns))
		for i, tt := range d.Turns {
			objs[i] = object(tt)
		}
		var err error
		if m["turns"], err = json.Marshal(objs); err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return decisionlog.Frame(body), len(objs)
	})
}

// withStringTags rewrites conversation conv's decisions log with every
// tags decision naming each tag as a string, without a vocab, as logs did
// before tagvocab.go.
func withStringTags(t *testing.T, dir, conv string) {
	t.Helper()
	rewriteDecisions(t, dir, conv, "tags decision with a vocab", func(d decision, line []byte) ([]byte, int) {
		if d.Kind != decTags || !bytes.Contains(line, []byte(`"vocab":[`)) {
			return line, 0
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(decisionBodyT(t, line), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "vocab")
		var err error
		if m["turns"], err = json.Marshal(d.Turns); err != nil { // d's tags are strings again
			t.Fatal(err)
		}
		if bytes.Contains(m["turns"], []byte(`,[0`)) {
			t.Fatalf("tags still named by index: %.200s", m["turns"])
		}
		body, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return decisionlog.Frame(body), 1
	})
}

// TestTagVocab: a tags record lists the tags its turns share once and
// names them by index, reads back to the same turns, and refuses an index
// its vocab does not hold.
func TestTagVocab(t *testing.T) {
	d := decision{Kind: decTags, At: t0, Turns: []turnTags{
		{Seq: 1, Hash: "aa", Tags: []string{"garden", "mulch", "project"}},
		{Seq: 2, Hash: "bb", Tags: []string{"garden", "mulch"}, Related: []string{"plan", "project"}, Rule: true},
		{Seq: 3, Hash: "cc", Tags: []string{"once"}},
	}}
	keep := fmt.Sprint(d.Turns)
	line := encodeDecisionT(t, d)
	if fmt.Sprint(d.Turns) != keep {
		t.Fatalf("encoding changed the caller's turns: %v", d.Turns)
	}
	want := `"vocab":["garden","mulch","project"],"turns":[[1,"aa",[0,1,2]],[2,"bb",[0,1],["plan",2],true],[3,"cc",["once"]]]`
	if !bytes.Contains(line, []byte(want)) {
		t.Fatalf("encoded %s, want it to hold %s", line, want)
	}
	back, ok := decodeDecision(bytes.TrimSuffix(line, []byte("\n")))
	if !ok {
		t.Fatalf("%s does not decode", line)
	}
	if back.Vocab != nil || !reflect.DeepEqual(back.Turns, d.Turns) {
		t.Errorf("decoded vocab %v, turns %+v; want no vocab and %+v", back.Vocab, back.Turns, d.Turns)
	}
	for _, bad := range []string{
		`{"kind":"tags","at":"2026-01-01T00:00:00Z","vocab":["a"],"turns":[[1,"aa",[1]]]}`,
		`{"kind":"tags","at":"2026-01-01T00:00:00Z","turns":[[1,"aa",[0]]]}`,
		`{"kind":"tags","at":"2026-01-01T00:00:00Z","vocab":["a"],"turns":[[1,"aa",[-1]]]}`,
		`{"kind":"tags","at":"2026-01-01T00:00:00Z","vocab":["a"],"turns":[[1,"aa",[0.5]]]}`,
	} {
		framed := bytes.TrimSuffix(decisionlog.Frame([]byte(bad)), []byte("\n"))
		if _, ok := decodeDecision(framed); ok {
			t.Errorf("%s decoded; want it refused", bad)
		}
	}
}

// TestTurnTagsForms: a turn's tags round-trip through the array form, and
// the object form of older logs reads the same.
func TestTurnTagsForms(t *testing.T) {
	cases := []struct {
		name string
		in   turnTags
		want string
	}{
		{"tags", turnTags{Seq: 1, Hash: "749f88800b572e3b", Tags: []string{"climbing", "gym"}}, `[1,"749f88800b572e3b",["climbing","gym"]]`},
		{"related", turnTags{Seq: 22, Hash: "ab", Tags: []string{"a"}, Related: []string{"b", "c"}}, `[22,"ab",["a"],["b","c"]]`},
		{"rule only", turnTags{Seq: 3, Hash: "cd", Tags: []string{"a"}, Rule: true}, `[3,"cd",["a"],[],true]`},
		{"all", turnTags{Seq: 4, Hash: "ef", Tags: []string{"a"}, Related: []string{"b"}, Rule: true}, `[4,"ef",["a"],["b"],true]`},
		{"quotes", turnTags{Seq: 5, Hash: "01", Tags: []string{`say "hi"`}}, `[5,"01",["say \"hi\""]]`},
	}
	type object turnTags
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			old, err := json.Marshal(object(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			for _, form := range [][]byte{got, old} {
				var back turnTags
				if err := json.Unmarshal(form, &back); err != nil {
					t.Fatalf("decode %s: %v", form, err)
				}
				if !reflect.DeepEqual(back, tc.in) {
					t.Errorf("decode %s: got %+v, want %+v", form, back, tc.in)
				}
			}
		})
	}
	for _, bad := range []string{`[]`, `[1,"h"]`, `[1,"h",["a"],[],true,1]`, `["1","h",["a"]]`, `[1,"h","a"]`, `[1,"h",["a"],[],"yes"]`, `7`} {
		var tt turnTags
		if err := json.Unmarshal([]byte(bad), &tt); err == nil {
			t.Errorf("decode %s: no error, want one", bad)
		}
	}
}

// TestOldFormatBundleImportsTheSame: a bundle written before master log
// format 4 and array-form tags (testdata/bundle/small-v3.jsonl, the
// golden bundle as it was) imports into a directory that answers exactly
// like one importing the same memory in today's formats, with no model.
func TestOldFormatBundleImportsTheSame(t *testing.T) {
	ctx := context.Background()
	snaps := map[string]map[string]snapshot{}
	for _, name := range []string{"small-v3.jsonl", "small.jsonl"} {
		data, err := os.ReadFile(filepath.Join("testdata", "bundle", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "small-v3.jsonl" && (!bytes.Contains(data, []byte(`"record":{"v":3,`)) || !bytes.Contains(data, []byte(`"turns":[{"seq":`))) {
			t.Fatalf("%s is not in the old formats", name)
		}
		if name == "small.jsonl" && (!bytes.Contains(data, []byte(`"record":[4,`)) || !bytes.Contains(data, []byte(`"turns":[[`))) {
			t.Fatalf("%s is not in today's formats", name)
		}
		sum := &countingSummarizer{fail: true}
		tag := &countingTagger{fail: true}
		s := openTest(t, Options{Summarizer: sum, Tagger: tag, Splitter: &refusingSplitter{}})
		b := readBundle(t, data)
		if _, err := s.ImportBundle(ctx, b, BundleImportOptions{}, nil); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		waitIndexed(t, s)
		snaps[name] = map[string]snapshot{}
		for _, c := range b.Conversations {
			snaps[name][c.ID] = observe(t, s, c.ID)
		}
		if n := sum.calls.Load() + tag.calls.Load(); n != 0 {
			t.Fatalf("%s: importing called a model %d times", name, n)
		}
	}
	if len(snaps["small.jsonl"]) != 2 {
		t.Fatalf("%d conversations imported, want 2", len(snaps["small.jsonl"]))
	}
	// The logs hold the same records in fewer bytes: byte ranges into
	// them differ, nothing else may.
	for id, want := range snaps["small.jsonl"] {
		compareSnapshots(t, withoutLogRanges(snaps["small-v3.jsonl"][id]), withoutLogRanges(want))
	}
}

var logRange = regexp.MustCompile(`"start":\d+,"end":\d+|bytes \d+-\d+|"log_bytes": ?\d+`)

// withoutLogRanges blanks the master-log byte ranges in s's answers.
func withoutLogRanges(s snapshot) snapshot {
	blank := func(v string) string { return logRange.ReplaceAllString(v, "RANGE") }
	out := snapshot{Status: blank(s.Status), Domains: map[string]string{}}
	for k, v := range s.Domains {
		out.Domains[k] = blank(v)
	}
	for _, v := range s.Recalls {
		out.Recalls = append(out.Recalls, blank(v))
	}
	for _, v := range s.Quotes {
		out.Quotes = append(out.Quotes, blank(v))
	}
	return out
}

// TestDocumentedRecordsVerify: the version 4 records docs/bundle.md shows
// are ones vc-mcp reads (checksums included).
func TestDocumentedRecordsVerify(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "bundle.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		if i := bytes.Index(line, []byte(`"record":[4,`)); i >= 0 {
			line = bytes.TrimSuffix(line[i+len(`"record":`):], []byte("}"))
		}
		if !bytes.HasPrefix(line, []byte("[4,")) {
			continue
		}
		r, err := masterlog.Decode(line)
		if err != nil {
			t.Errorf("documented record %s: %v", line, err)
			continue
		}
		if r.V != 4 || r.Seq < 1 || r.Content == "" {
			t.Errorf("documented record %s decodes to %+v", line, r)
		}
		n++
	}
	if n < 3 {
		t.Fatalf("found %d version 4 records in docs/bundle.md, want 3", n)
	}
}

// countSegments counts the segments compaction decisions hold in full and
// by reference.
func countSegments(t *testing.T, dir, conv string) (full, refs int) {
	t.Helper()
	for _, d := range compactDecisions(t, dir, conv) {
		full += len(d.Segments)
		refs += len(d.SegRefs)
	}
	return full, refs
}

// modelLike summarises extractively but says a model made it, as an LLM
// summariser's results do.
type modelLike struct{ inner Summarizer }

func (m modelLike) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	out, err := m.inner.Summarize(ctx, in)
	out.Method, out.Version = "llm", "test/model-1"
	return out, err
}

// TestModelSegmentsStayInFull: segments a model summarised are never
// recorded by reference (replay could not make them without the model),
// and a rebuild gives the same answers with no model call.
func TestModelSegmentsStayInFull(t *testing.T) {
	dir := t.TempDir()
	before := buildDerivedStateWith(t, dir, modelLike{summarize.NewExtractive(&summarize.ExtractiveOptions{Count: tokens.Count})})
	full, refs := countSegments(t, dir, "c")
	if full == 0 || refs != 0 {
		t.Fatalf("compaction decisions hold %d model-made segments in full and %d by reference; want all in full", full, refs)
	}
	sum := &countingSummarizer{fail: true}
	opts := Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Summarizer: sum, Tagger: &countingTagger{fail: true}, Splitter: &refusingSplitter{}}
	if err := Rebuild(context.Background(), opts, nil); err != nil {
		t.Fatal(err)
	}
	s := openTest(t, opts)
	waitIndexed(t, s)
	if n := sum.calls.Load(); n != 0 {
		t.Fatalf("rebuild called the summariser %d times", n)
	}
	compareSnapshots(t, before, observe(t, s, "c"))
}

// TestForgetThenRebuildWithSegmentRefs: forgetting turns inside segments
// recorded by reference (one turn, then a whole topic) and rebuilding gives
// the same answers as the live store, with no model call and no warning
// that a reference came out differently.
func TestForgetThenRebuildWithSegmentRefs(t *testing.T) {
	dir := t.TempDir()
	buildDerivedStateWith(t, dir, nil)
	if _, refs := countSegments(t, dir, "c"); refs == 0 {
		t.Fatal("setup: no segment recorded by reference")
	}
	var logs bytes.Buffer
	opts := Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Logger: slogTo(&logs)}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []ForgetRequest{{ConversationID: "c", TurnIDs: []string{"t3"}}, {ConversationID: "c", Query: "Kyoto"}} {
		res, err := s.Forget(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Forgotten == 0 {
			t.Fatalf("forget %+v forgot nothing", req)
		}
	}
	waitIndexed(t, s)
	before := observe(t, s, "c")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, decisionsDir, "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	cleared := 0
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if d, ok := decodeDecision(line); ok {
			for _, r := range d.SegRefs {
				if r.Cleared {
					cleared++
				}
			}
		}
	}
	if cleared == 0 {
		t.Fatal("no segment reference was cleared by the forgets")
	}
	sum := &countingSummarizer{fail: true}
	opts.Summarizer, opts.Tagger, opts.Splitter = sum, &countingTagger{fail: true}, &refusingSplitter{}
	if err := Rebuild(context.Background(), opts, nil); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, opts)
	waitIndexed(t, s)
	compareSnapshots(t, before, observe(t, s, "c"))
	if n := sum.calls.Load(); n != 0 {
		t.Errorf("rebuild called the summariser %d times", n)
	}
	if strings.Contains(logs.String(), "came out differently") {
		t.Errorf("a segment reference replayed differently:\n%s", logs.String())
	}
}

// withExplicitAdds rewrites conversation conv's decisions log with every
// rollup reference naming the segments it adds, as references did before
// they left them out.
func withExplicitAdds(t *testing.T, dir, conv string) {
	t.Helper()
	rewriteDecisions(t, dir, conv, "rollup reference", func(d decision, line []byte) ([]byte, int) {
		if len(d.TagRefs) == 0 {
			return line, 0
		}
		segs := append([]segmentRec(nil), d.Segments...)
		for _, r := range d.SegRefs {
			segs = append(segs, segmentRec{ID: r.ID, Tags: r.Tags})
		}
		sort.Slice(segs, func(i, j int) bool { return segs[i].ID < segs[j].ID })
		for i := range d.TagRefs {
			if d.TagRefs[i].Add != nil {
				t.Fatalf("rollup reference of %s names its segments %v: want them left out", d.TagRefs[i].Tag, d.TagRefs[i].Add)
			}
			d.TagRefs[i].Add = derivedAdd(d.TagRefs[i].Tag, segs)
		}
		enc := encodeDecisionT(t, d)
		if !bytes.Contains(enc, []byte(`"add":[`)) {
			t.Fatalf("rewritten decision names no segments: %.200s", enc)
		}
		return enc, len(d.TagRefs)
	})
}
