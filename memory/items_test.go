package memory

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestChunkText(t *testing.T) {
	long := strings.Repeat("Sentence number one is here. ", 30) // 870 chars, 30 sentences
	tests := []struct {
		name   string
		text   string
		max    int
		want   []string // nil: check only the invariants and count
		chunks int
	}{
		{"empty", "  \n\n ", 500, nil, 0},
		{"one paragraph", "Hello world.", 500, []string{"Hello world."}, 1},
		{"paragraphs", "First para.\n\nSecond para\nstill second.\n\n\nThird.", 500,
			[]string{"First para.", "Second para\nstill second.", "Third."}, 3},
		{"crlf paragraphs", "A.\r\n\r\nB.", 500, []string{"A.", "B."}, 2},
		{"sentences joined up to max", "One two. Three four! Five six? Seven.", 20,
			[]string{"One two. Three four!", "Five six? Seven."}, 2},
		{"long paragraph split by sentences", long, 500, nil, 2},
		{"sentence over max cut at spaces", strings.Repeat("word ", 30), 40, nil, 4},
		{"word over max cut hard", strings.Repeat("x", 95), 40, []string{strings.Repeat("x", 40), strings.Repeat("x", 40), strings.Repeat("x", 15)}, 3},
		{"full-width stops", strings.Repeat("日本語の文です。", 10), 30, nil, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chunkText(tt.text, tt.max)
			if len(got) != tt.chunks {
				t.Fatalf("got %d chunks %q, want %d", len(got), got, tt.chunks)
			}
			if tt.want != nil {
				for i := range tt.want {
					if got[i] != tt.want[i] {
						t.Errorf("chunk %d: got %q, want %q", i, got[i], tt.want[i])
					}
				}
			}
			for i, c := range got {
				if n := utf8.RuneCountInString(c); n == 0 || n > tt.max {
					t.Errorf("chunk %d has %d characters, want 1-%d: %q", i, n, tt.max, c)
				}
				if strings.TrimSpace(c) != c {
					t.Errorf("chunk %d is not trimmed: %q", i, c)
				}
			}
		})
	}
}

func TestValidateContextItems(t *testing.T) {
	ok := ContextItem{Type: ItemRule, Name: "Auth rules", Text: "Use OAuth.", Include: IncludeAlways}
	with := func(f func(*ContextItem)) []ContextItem {
		it := ok
		f(&it)
		return []ContextItem{it}
	}
	tests := []struct {
		name  string
		items []ContextItem
		want  string // "" = valid
	}{
		{"valid", []ContextItem{ok}, ""},
		{"no name", with(func(c *ContextItem) { c.Name = "" }), "name is required"},
		{"bad name", with(func(c *ContextItem) { c.Name = "a/b" }), "name must be"},
		{"bad type", with(func(c *ContextItem) { c.Type = "tool" }), `type must be "rule" or "reference", got "tool"`},
		{"bad include", with(func(c *ContextItem) { c.Include = "sometimes" }), `include must be "always", "manual" or "agent"`},
		{"empty text", with(func(c *ContextItem) { c.Text = " \n" }), "text is empty"},
		{"bad priority", with(func(c *ContextItem) { c.Priority = 1000 }), "priority must be between 1 and 999"},
		{"duplicate", []ContextItem{ok, with(func(c *ContextItem) { c.Name = "AUTH RULES" })[0]}, "name already used by context item 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateContextItems(tt.items)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid)):
				t.Fatalf("got %v, want ErrInvalid containing %q", err, tt.want)
			}
		})
	}
}

// testItems is a small catalogue: one of each mode, and a big reference.
func testItems() []ContextItem {
	return []ContextItem{
		{Type: ItemRule, Name: "style", Description: "House style", Text: "Answer in British English.", Priority: 1, Include: IncludeAlways},
		{Type: ItemRule, Name: "review", Text: "Ask for a second reviewer on every migration.", Priority: 5, Include: IncludeManual},
		{Type: ItemReference, Name: "auth", Description: "How login works",
			Text:     "Authentication uses OAuth tokens issued by the identity service. Tokens expire after an hour and are refreshed with the refresh token.",
			Priority: 10, Include: IncludeAgent},
		{Type: ItemReference, Name: "errors", Description: "Error handling",
			Text: "Every handler wraps errors with context and returns them; nothing panics on request data.", Priority: 10, Include: IncludeAgent},
	}
}

func itemDecision(t *testing.T, ds []ItemDecision, name string) ItemDecision {
	t.Helper()
	for _, d := range ds {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no decision for %q in %+v", name, ds)
	return ItemDecision{}
}

func TestContextItemsInRecall(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := Options{Dir: dir, ContextItems: testItems()}
	s := openTest(t, opts)
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "c1", Messages: []Message{msg("user", "", "We deployed the billing service on Friday.", t0)}}); err != nil {
		t.Fatal(err)
	}

	res, err := s.Recall(ctx, RecallRequest{ConversationID: "c1", Message: "How do tokens get refreshed for authentication?"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Text, "# Context items\n## Rule: style\nAnswer in British English.") {
		t.Errorf("text does not start with the always item:\n%s", res.Text)
	}
	if !strings.Contains(res.Text, "## Reference: auth") || strings.Contains(res.Text, "## Reference: errors") || strings.Contains(res.Text, "## Rule: review") {
		t.Errorf("want auth (agent, relevant) and neither errors nor review:\n%s", res.Text)
	}
	if !strings.Contains(res.Text, "# Recalled memory") {
		t.Errorf("memory part missing:\n%s", res.Text)
	}
	if res.ItemSearch.Method != "lexical" {
		t.Errorf("search method: got %q, want lexical", res.ItemSearch.Method)
	}
	if d := itemDecision(t, res.ContextItems, "auth"); !d.Included || d.Mode != IncludeAgent || d.Score == nil || *d.Score < 0.3 {
		t.Errorf("auth: got %+v, want included by agent with a score", d)
	}
	if d := itemDecision(t, res.ContextItems, "errors"); d.Included || d.Reason != ReasonBelowMin {
		t.Errorf("errors: got %+v, want excluded below_min_score", d)
	}
	if res.Tokens > 2000 || res.Breakdown.ContextItems == 0 {
		t.Errorf("tokens %d, items %d", res.Tokens, res.Breakdown.ContextItems)
	}

	// An unrelated message takes no agent item.
	res, err = s.Recall(ctx, RecallRequest{ConversationID: "c1", Message: "When did we deploy billing?"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Text, "## Reference:") {
		t.Errorf("unrelated message got a reference:\n%s", res.Text)
	}

	// Manual: add, then remove the always item; both survive restart and rebuild.
	if _, err := s.AddContextItem(ctx, "c1", "Review"); err != nil {
		t.Fatal(err)
	}
	lr, err := s.RemoveContextItem(ctx, "c1", "style")
	if err != nil || !lr.Changed {
		t.Fatalf("remove: %+v %v", lr, err)
	}
	if _, err := s.AddContextItem(ctx, "c1", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown item: got %v, want ErrNotFound", err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		res, err := s.Recall(ctx, RecallRequest{ConversationID: "c1", Message: "billing"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Text, "## Rule: review") || strings.Contains(res.Text, "## Rule: style") {
			t.Errorf("%s: want review and not style:\n%s", when, res.Text)
		}
		if d := itemDecision(t, res.ContextItems, "style"); d.Included || d.Reason != ReasonRemoved {
			t.Errorf("%s: style: got %+v, want removed", when, d)
		}
		// Another conversation still has the always item.
		res, err = s.Recall(ctx, RecallRequest{ConversationID: "c2", Message: "billing"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Text, "## Rule: style") || !strings.Contains(res.Text, "No memory is stored") {
			t.Errorf("%s: c2 lacks the always item:\n%s", when, res.Text)
		}
	}
	check(s, "live")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t, opts)
	check(s2, "after restart")
	reqs, err := s2.Requests(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 4 || reqs[0].ID != "r4" || reqs[3].ID != "r1" {
		t.Fatalf("requests: got %d, first %+v", len(reqs), reqs[0])
	}
	if d := itemDecision(t, reqs[3].Items, "errors"); d.Reason != ReasonBelowMin {
		t.Errorf("first request's record: errors %+v", d)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Rebuild(ctx, opts, nil); err != nil {
		t.Fatal(err)
	}
	check(openTest(t, opts), "after rebuild")
}

func TestContextItemsOverBudget(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("The deployment checklist covers backups, migrations and rollbacks in order. ", 80)
	items := []ContextItem{
		{Type: ItemReference, Name: "checklist", Text: big, Priority: 1, Include: IncludeAlways},
		{Type: ItemRule, Name: "tone", Text: "Be brief.", Priority: 2, Include: IncludeAlways},
	}
	s := openTest(t, Options{ContextItems: items})
	res, err := s.Recall(ctx, RecallRequest{Message: "deploy", MaxTokens: 400})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens > 400 {
		t.Fatalf("tokens %d over the budget", res.Tokens)
	}
	if !strings.Contains(res.Text, "[trimmed to fit the budget:") || !strings.Contains(res.Text, "virtualcontext://context-items/checklist") {
		t.Errorf("no trimmed marker:\n%s", res.Text)
	}
	if d := itemDecision(t, res.ContextItems, "checklist"); !d.Included || !d.Trimmed {
		t.Errorf("checklist: got %+v, want included and trimmed", d)
	}
	if d := itemDecision(t, res.ContextItems, "tone"); d.Included || d.Reason != ReasonOverBudget {
		t.Errorf("tone: got %+v, want over_budget", d)
	}
}

func TestOpenRejectsBadCatalogue(t *testing.T) {
	_, err := Open(context.Background(), Options{Dir: t.TempDir(), ContextItems: []ContextItem{{Type: "rule", Name: "x", Include: "always"}}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "text is empty") {
		t.Fatalf("got %v, want ErrInvalid naming the empty text", err)
	}
}

func TestRequestHistoryRetention(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	n := RequestRetention + RequestRetention/2 + 10
	for i := 0; i < n; i++ {
		if err := s.appendRequest(&RequestRecord{ConversationID: "c"}, s.logRewrites.Load()); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.Requests(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != RequestRetention || recs[0].Seq != n || recs[len(recs)-1].Seq != n-RequestRetention+1 {
		t.Fatalf("got %d records, newest %d, oldest %d; want %d, %d, %d", len(recs), recs[0].Seq, recs[len(recs)-1].Seq, RequestRetention, n, n-RequestRetention+1)
	}
	if err := s.flushRequests(); err != nil { // the writer may be writing the last ones
		t.Fatal(err)
	}
	members, records := historyMembers(t, s.requestsPath("c"))
	if records > RequestRetention+RequestRetention/2 || members != records {
		t.Errorf("file holds %d records in %d members, want at most %d", records, members, RequestRetention+RequestRetention/2)
	}
}

// TestContextItemsConcurrent runs recalls, selection changes and history
// reads at once (run with -race): every recall gets its own request id.
func TestContextItemsConcurrent(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{ContextItems: testItems(), Embedder: &conceptEmbedder{}})
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "c", Messages: []Message{msg("user", "", "The feed uses materialized views.", t0)}}); err != nil {
		t.Fatal(err)
	}
	const workers, each = 4, 10
	ids := make(chan string, workers*each)
	errs := make(chan error, workers*3)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(3)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r, err := s.Recall(ctx, RecallRequest{ConversationID: "c", Message: "how are tokens refreshed for authentication?"})
				if err != nil {
					errs <- err
					return
				}
				ids <- r.RequestID
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				var err error
				if i%2 == 0 {
					_, err = s.AddContextItem(ctx, "c", "review")
				} else {
					_, err = s.RemoveContextItem(ctx, "c", "review")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := s.Requests(ctx, "c"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for id := range ids {
		if id == "" || seen[id] {
			t.Fatalf("request id %q missing or repeated", id)
		}
		seen[id] = true
	}
	recs, err := s.Requests(ctx, "c")
	if err != nil || len(recs) != workers*each {
		t.Fatalf("history: %d records (%v), want %d", len(recs), err, workers*each)
	}
}
