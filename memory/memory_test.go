package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func text(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func msg(role, name, content string, ts time.Time) Message {
	m := Message{Role: role, Name: name, Content: text(content)}
	if !ts.IsZero() {
		m.Timestamp = ts.Format(time.RFC3339)
	}
	return m
}

var t0 = time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)

// chat returns n alternating messages about a few topics, one minute apart.
func chat(n int, start time.Time) []Message {
	topics := []string{
		"We should migrate the Postgres database to version 16 before the release on %d May.",
		"My dog Rex needs his vaccination at the vet clinic, appointment number %d.",
		"The Go bug in the scheduler shows up when GOMAXPROCS is %d.",
		"For the trip to Japan we booked the Kyoto ryokan for %d nights.",
	}
	out := make([]Message, n)
	for i := range out {
		role, name := "user", "Ana"
		if i%2 == 1 {
			role, name = "assistant", "Bot"
		}
		out[i] = msg(role, name, fmt.Sprintf(topics[(i/4)%len(topics)], i+1), start.Add(time.Duration(i)*time.Minute))
	}
	return out
}

func ingest(t testing.TB, s *Store, conv string, msgs []Message) IngestResult {
	t.Helper()
	res, err := s.Ingest(context.Background(), IngestRequest{ConversationID: conv, Messages: msgs})
	if err != nil {
		t.Fatalf("Ingest: %v", err)
	}
	return res
}

func TestValidateConversationID(t *testing.T) {
	tests := []struct {
		id      string
		wantErr bool
	}{
		{"default", false},
		{"proj:vc-mcp_1.2", false},
		{strings.Repeat("a", 128), false},
		{"", true},
		{strings.Repeat("a", 129), true},
		{".", true},
		{"..", true},
		{"../etc", true},
		{"a/b", true},
		{`a\b`, true},
		{"with space", true},
		{"é", true},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := ValidateConversationID(tt.id)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ValidateConversationID(%q) = %v, want error %v", tt.id, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestIngestDedupAndIdempotence(t *testing.T) {
	s := openTest(t, Options{})
	msgs := chat(10, t0)
	res := ingest(t, s, "c1", msgs)
	if res.Stored != 10 || res.Duplicates != 0 {
		t.Fatalf("first ingest: stored %d dup %d, want 10 0", res.Stored, res.Duplicates)
	}
	// Resending the whole history plus one new message stores only the new one.
	more := append(append([]Message(nil), msgs...), msg("user", "Ana", "And what about the ryokan breakfast?", t0.Add(time.Hour)))
	res = ingest(t, s, "c1", more)
	if res.Stored != 1 || res.Duplicates != 10 {
		t.Fatalf("resend: stored %d dup %d, want 1 10", res.Stored, res.Duplicates)
	}
	if got, want := res.TurnIDs, []string{"t11"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("turn ids %v, want %v", got, want)
	}
	// Duplicates within one batch count once.
	dup := msg("user", "Ana", "same words", t0.Add(2*time.Hour))
	res = ingest(t, s, "c1", []Message{dup, dup})
	if res.Stored != 1 || res.Duplicates != 1 {
		t.Fatalf("in-batch dup: stored %d dup %d, want 1 1", res.Stored, res.Duplicates)
	}
}

func TestIngestAllOrNothing(t *testing.T) {
	s := openTest(t, Options{MaxMessageBytes: 1000})
	ingest(t, s, "c", chat(2, t0))
	tests := []struct {
		name     string
		bad      Message
		sentinel error
		wantIn   string
	}{
		{"bad role", Message{Role: "robot", Content: text("hi")}, ErrInvalid, `messages[1].role: must be one of user, assistant, system, tool, got "robot"`},
		{"bad timestamp", Message{Role: "user", Content: text("hi"), Timestamp: "yesterday"}, ErrInvalid, "timestamp"},
		{"content object", Message{Role: "user", Content: json.RawMessage(`{"a":1}`)}, ErrInvalid, "content"},
		{"content number", Message{Role: "user", Content: json.RawMessage(`42`)}, ErrInvalid, "content"},
		{"invalid utf8", Message{Role: "user", Content: json.RawMessage("\"\xff\xfe\"")}, ErrInvalid, "UTF-8"},
		{"too large", Message{Role: "user", Content: text(strings.Repeat("x", 2000))}, ErrTooLarge, "1000 bytes"},
		{"block without type", Message{Role: "user", Content: json.RawMessage(`[{"text":"x"}]`)}, ErrInvalid, "type"},
		{"missing role", Message{Content: text("x")}, ErrInvalid, "messages[1].role: required"},
		{"tool_calls object", Message{Role: "assistant", ToolCalls: json.RawMessage(`{"id":"x"}`)}, ErrInvalid, "messages[1].tool_calls: must be an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := msg("user", "Ana", "a good message "+tt.name, t0.Add(time.Hour))
			_, err := s.Ingest(context.Background(), IngestRequest{ConversationID: "c", Messages: []Message{good, tt.bad}})
			if !errors.Is(err, tt.sentinel) {
				t.Fatalf("err = %v, want %v", err, tt.sentinel)
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("err %q does not mention %q", err, tt.wantIn)
			}
			st, err := s.Status(context.Background(), "c")
			if err != nil {
				t.Fatal(err)
			}
			if st.Totals.Turns != 2 {
				t.Fatalf("turns after a rejected batch = %d, want 2", st.Totals.Turns)
			}
		})
	}
}

func TestContentBlocksAndEmptyTurns(t *testing.T) {
	s := openTest(t, Options{})
	msgs := []Message{
		{Role: "user", Content: json.RawMessage(`[{"type":"text","text":"Please list the files in /srv/app"}]`)},
		{Role: "assistant", Content: json.RawMessage(`[{"type":"tool_use","id":"tu1","name":"ls","input":{"path":"/srv/app"}}]`)},
		{Role: "user", Content: json.RawMessage(`[{"type":"tool_result","tool_use_id":"tu1","content":[{"type":"text","text":"main.go\nconfig.yaml"}]}]`)},
		{Role: "assistant", Content: json.RawMessage(`null`), ToolCalls: json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]`)},
		{Role: "tool", ToolCallID: "c1", Content: text("")},
	}
	res := ingest(t, s, "", msgs)
	if res.Stored != 5 || res.Skipped != 3 {
		t.Fatalf("stored %d skipped %d, want 5 3", res.Stored, res.Skipped)
	}
	fq, err := s.FindQuote(context.Background(), FindQuoteRequest{Query: "config.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fq.Quotes) != 1 || fq.Quotes[0].TurnID != "t3" {
		t.Fatalf("quotes %+v, want the tool result t3", fq.Quotes)
	}
	// The master log keeps the blocks verbatim. Ref.File is relative to
	// the data directory.
	if filepath.IsAbs(fq.Quotes[0].Ref.File) {
		t.Errorf("ref file %q is absolute; want it relative to the data dir", fq.Quotes[0].Ref.File)
	}
	// So is a turn's (its resource), which named the absolute path of the
	// data directory (found by a hostile review).
	if turn, err := s.Turn(context.Background(), "", "t3"); err != nil || turn.Ref != fq.Quotes[0].Ref {
		t.Errorf("turn t3's ref %+v (%v), want find_quote's %+v", turn.Ref, err, fq.Quotes[0].Ref)
	}
	data, err := os.ReadFile(filepath.Join(s.opts.Dir, filepath.FromSlash(fq.Quotes[0].Ref.File)))
	if err != nil {
		t.Fatal(err)
	}
	line := data[fq.Quotes[0].Ref.Start:fq.Quotes[0].Ref.End]
	if !bytes.Contains(line, []byte(`"tool_use_id":"tu1"`)) {
		t.Fatalf("byte range %d-%d holds %s, want the raw tool_result", fq.Quotes[0].Ref.Start, fq.Quotes[0].Ref.End, line)
	}
}

func TestRecallFitsBudgetAndFindsOldTurns(t *testing.T) {
	s := openTest(t, Options{ContextWindow: 2000, ProtectedTurns: 4})
	needle := msg("user", "Ana", "Remember: the staging server password hint is 'blue heron 42'.", t0)
	ingest(t, s, "c", []Message{needle})
	msgs := chat(400, t0.Add(time.Hour))
	for i := 0; i < len(msgs); i += 20 {
		ingest(t, s, "c", msgs[i:i+20])
	}
	st, err := s.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Segments == 0 || st.Totals.TagSummaries == 0 {
		t.Fatalf("no compaction happened: %+v", st.Totals)
	}
	for _, budget := range []int{100, 300, 2000, 8000} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			r, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "what was the staging server password hint?", MaxTokens: budget})
			if err != nil {
				t.Fatal(err)
			}
			if n := tokens.Count(r.Text); n > budget || r.Tokens != n {
				t.Fatalf("text has %d tokens (reported %d), budget %d", n, r.Tokens, budget)
			}
			if budget >= 300 && !strings.Contains(r.Text, "blue heron 42") {
				t.Fatalf("needle not recalled at budget %d:\n%s", budget, r.Text)
			}
		})
	}
}

func TestRecallIsReadOnly(t *testing.T) {
	s := openTest(t, Options{})
	ingest(t, s, "c", chat(30, t0))
	req := RecallRequest{ConversationID: "c", Message: "Rex vaccination", MaxTokens: 500}
	a, err := s.Recall(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Recall(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != b.Text {
		t.Fatalf("second recall differs:\n%s\n---\n%s", a.Text, b.Text)
	}
	st, _ := s.Status(context.Background(), "c")
	if st.Totals.Turns != 30 {
		t.Fatalf("recall stored something: %d turns", st.Totals.Turns)
	}
}

func TestScopeIsolation(t *testing.T) {
	s := openTest(t, Options{})
	ingest(t, s, "alpha", []Message{msg("user", "Ana", "The launch code word is PAPAYA.", t0)})
	ingest(t, s, "beta", []Message{msg("user", "Ben", "Lunch was pasta with pesto.", t0)})
	r, err := s.Recall(context.Background(), RecallRequest{ConversationID: "beta", Message: "what is the launch code word?"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Text, "PAPAYA") {
		t.Fatalf("conversation beta saw alpha's turn:\n%s", r.Text)
	}
	fq, err := s.FindQuote(context.Background(), FindQuoteRequest{ConversationID: "beta", Query: "PAPAYA"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fq.Quotes) != 0 {
		t.Fatalf("find_quote in beta returned %+v", fq.Quotes)
	}
	r, err = s.Recall(context.Background(), RecallRequest{ConversationID: "beta", Message: "what is the launch code word?", Scope: ScopeAll})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "PAPAYA") {
		t.Fatalf("scope all did not see alpha:\n%s", r.Text)
	}
}

func TestExpandCollapse(t *testing.T) {
	s := openTest(t, Options{ContextWindow: 1500, ProtectedTurns: 2})
	ingest(t, s, "c", chat(120, t0))
	st, err := s.Status(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tags) == 0 {
		t.Fatal("no tags")
	}
	tag := st.Tags[0].Tag
	for _, depth := range []Depth{DepthSegments, DepthFull} {
		ex, err := s.Expand(context.Background(), ExpandRequest{ConversationID: "c", Tag: tag, Depth: depth, MaxTokens: 600})
		if err != nil {
			t.Fatalf("expand %s: %v", depth, err)
		}
		if ex.Tokens == 0 || tokens.Count(ex.Text) > 600 || !strings.Contains(ex.Text, tag) {
			t.Fatalf("expand %s: %d tokens, text:\n%s", depth, ex.Tokens, ex.Text)
		}
		if depth == DepthFull && len(ex.TurnIDs) == 0 {
			t.Fatalf("full expand returned no turns")
		}
	}
	col, err := s.Collapse(context.Background(), CollapseRequest{ConversationID: "c", Tag: tag, Depth: DepthNone})
	if err != nil {
		t.Fatal(err)
	}
	if col.TokensFreed == 0 {
		t.Fatalf("collapse freed nothing")
	}
	_, err = s.Expand(context.Background(), ExpandRequest{ConversationID: "c", Tag: "no-such-topic"})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tag: %v, want ErrNotFound", err)
	}
}

func TestRecoverFromCrashTail(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", chat(8, t0))
	// Simulate a crash: the store never learns of two appended lines, and a
	// third was torn mid-write.
	c, _ := s.conversation(context.Background(), "c", false)
	extra := []masterlog.Record{
		recordFrom(9, mustNorm(t, msg("user", "Ana", "crash-survivor alpha", t0.Add(time.Hour))), t0),
		recordFrom(10, mustNorm(t, msg("user", "Ana", "crash-survivor beta", t0.Add(time.Hour+time.Minute))), t0),
	}
	if _, err := c.log.Append(c.meta.LogSize, extra); err != nil {
		t.Fatal(err)
	}
	path := c.log.Path()
	s.db.Close() // drop without committing anything else (simulated kill)
	s.closed.Store(true)
	_ = s.ix.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"v":1,"seq":11,"role":"user","content":"torn`)
	f.Close()

	s2 := openTest(t, Options{Dir: dir})
	fq, err := s2.FindQuote(context.Background(), FindQuoteRequest{ConversationID: "c", Query: "crash-survivor beta"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fq.Quotes) == 0 || fq.Quotes[0].TurnID != "t10" {
		t.Fatalf("replayed turn not found: %+v", fq.Quotes)
	}
	res := ingest(t, s2, "c", []Message{msg("user", "Ana", "after recovery", t0.Add(2*time.Hour))})
	if res.TurnIDs[0] != "t11" {
		t.Fatalf("next turn id %v, want t11 (torn tail overwritten)", res.TurnIDs)
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte("torn")) {
		t.Fatalf("torn tail still in the log")
	}
}

func mustNorm(t *testing.T, m Message) turnInput {
	t.Helper()
	in, err := normalizeMessage(m, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestSecondOpenFailsFast(t *testing.T) {
	dir := t.TempDir()
	openTest(t, Options{Dir: dir})
	start := time.Now()
	_, err := Open(context.Background(), Options{Dir: dir, LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("error does not name the holder: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("second Open took %v", time.Since(start))
	}
}

func TestLogFileNamesStayInside(t *testing.T) {
	s := openTest(t, Options{})
	ingest(t, s, "proj:x", chat(2, t0))
	matches, _ := filepath.Glob(filepath.Join(s.opts.Dir, logsDir, "*"))
	if len(matches) != 1 || !strings.HasSuffix(matches[0], "proj%3Ax.jsonl") {
		t.Fatalf("log files %v", matches)
	}
}

func FuzzNormalizeMessage(f *testing.F) {
	f.Add("user", `"hello"`, "", "2024-01-01T00:00:00Z", "")
	f.Add("assistant", `[{"type":"text","text":"x"},{"type":"tool_use","name":"a"}]`, "n", "", `[{"id":"1"}]`)
	f.Add("tool", `[{"type":"tool_result","content":"r"}]`, "", "bad", "")
	f.Fuzz(func(t *testing.T, role, content, name, ts, calls string) {
		m := Message{Role: role, Content: json.RawMessage(content), Name: name, Timestamp: ts, ToolCalls: json.RawMessage(calls)}
		in, err := normalizeMessage(m, 1<<16)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if !validRoles[in.Role] {
			t.Fatalf("accepted role %q", in.Role)
		}
	})
}

// versionedSummarizer wraps the extractive summariser and stamps a version,
// so a test can see which summaries were regenerated.
type versionedSummarizer struct {
	Summarizer
	version string
}

func (v versionedSummarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	r, err := v.Summarizer.Summarize(ctx, in)
	r.Version = v.version
	return r, err
}

func TestRegenerateSummaries(t *testing.T) {
	dir := t.TempDir()
	base := summarize.NewExtractive(nil)
	s := openTest(t, Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Summarizer: versionedSummarizer{base, "v1"}})
	ingest(t, s, "c", chat(120, t0))
	tagsBefore := map[int][]string{}
	for _, sg := range s.convs["c"].c.segs {
		tagsBefore[sg.ID] = append([]string(nil), sg.Tags...)
	}
	if len(tagsBefore) == 0 {
		t.Fatal("no segments to regenerate")
	}
	s.Close()

	s2 := openTest(t, Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Summarizer: versionedSummarizer{base, "v2"}})
	res, err := s2.RegenerateSummaries(context.Background(), RegenerateRequest{ConversationID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != len(tagsBefore) || res.Tags == 0 {
		t.Fatalf("regenerated %+v, want %d segments and some tags", res, len(tagsBefore))
	}
	s2.Close()
	s3 := openTest(t, Options{Dir: dir})
	c3, err := s3.conversation(context.Background(), "c", false)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s3.Domain(context.Background(), "c", c3.segs[0].Primary)
	if err != nil {
		t.Fatal(err)
	}
	for _, sg := range d.Segments {
		if sg.Version != "v2" {
			t.Fatalf("segment %s still has version %q after regeneration", sg.ID, sg.Version)
		}
	}
	for _, sg := range c3.segs {
		for _, tag := range tagsBefore[sg.ID] {
			if !contains(sg.Tags, tag) {
				t.Fatalf("segment %d lost tag %q: %v", sg.ID, tag, sg.Tags)
			}
		}
	}
	if _, err := s3.RegenerateSummaries(context.Background(), RegenerateRequest{ConversationID: "c", Tag: "no-such-tag"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tag: %v, want ErrNotFound", err)
	}
}

func TestStandingRulesArePinned(t *testing.T) {
	s := openTest(t, Options{})
	msgs := append([]Message{msg("user", "Ana", "From now on, always answer in British English.", t0)}, chat(60, t0.Add(time.Hour))...)
	ingest(t, s, "c", msgs)
	r, err := s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "what is the GOMAXPROCS bug?", MaxTokens: 400})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "## Standing rules (always included)\n[t1] Ana: From now on, always answer in British English.") {
		t.Fatalf("standing rule not pinned:\n%s", r.Text)
	}
	modes := map[string]int{}
	for _, in := range r.Included {
		modes[in.Kind+"/"+in.Mode]++
	}
	if modes["rule/always"] != 1 || modes["turn/agent"] == 0 {
		t.Fatalf("inclusions %v, want one pinned rule and relevance-chosen turns", modes)
	}
	// A topic the model paged in marks its turns "manual": page in the
	// topic of a turn this recall chose.
	var tag string
	for _, in := range r.Included {
		if in.Kind == "turn" && in.Tag != "" {
			tag = in.Tag
			break
		}
	}
	if tag == "" {
		t.Fatalf("no recalled turn carries a topic: %+v", r.Included)
	}
	if _, err := s.Expand(context.Background(), ExpandRequest{ConversationID: "c", Tag: tag, Depth: DepthFull}); err != nil {
		t.Fatal(err)
	}
	r, err = s.Recall(context.Background(), RecallRequest{ConversationID: "c", Message: "what is the GOMAXPROCS bug?", MaxTokens: 400})
	if err != nil {
		t.Fatal(err)
	}
	manual := false
	for _, in := range r.Included {
		manual = manual || in.Mode == IncludeManual
	}
	if !manual {
		t.Fatalf("after expand_topic %s, no inclusion is manual: %+v", tag, r.Included)
	}
}

// find_quote's since/until select turns by when they were said (the index
// holds no times: the store names the turns in range), inclusively.
func TestFindQuoteTimeRange(t *testing.T) {
	s := openTest(t, Options{})
	var msgs []Message
	for d := 0; d < 6; d++ {
		msgs = append(msgs, msg("user", "Ana", fmt.Sprintf("The kayak trip on day %d went along the river.", d), t0.Add(time.Duration(d)*24*time.Hour)))
	}
	ingest(t, s, "c", msgs)
	for _, tt := range []struct {
		name         string
		since, until time.Time
		want         []string
	}{
		{"open", time.Time{}, time.Time{}, []string{"t1", "t2", "t3", "t4", "t5", "t6"}},
		{"since", t0.Add(4 * 24 * time.Hour), time.Time{}, []string{"t5", "t6"}},
		{"until, inclusive", time.Time{}, t0.Add(24 * time.Hour), []string{"t1", "t2"}},
		{"both", t0.Add(2 * 24 * time.Hour), t0.Add(3 * 24 * time.Hour), []string{"t3", "t4"}},
		{"none in range", t0.Add(100 * 24 * time.Hour), time.Time{}, nil},
		{"all in range", t0.Add(-time.Hour), t0.Add(10 * 24 * time.Hour), []string{"t1", "t2", "t3", "t4", "t5", "t6"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.FindQuote(context.Background(), FindQuoteRequest{ConversationID: "c", Query: "kayak river", MaxResults: 10, Since: tt.since, Until: tt.until})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range res.Quotes {
				got = append(got, q.TurnID)
			}
			sort.Strings(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
