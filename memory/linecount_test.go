package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLineCountCache: every turn's remembered line count is the
// tokenizer's count of its rendered line; a record rewritten elsewhere in
// the log is not taken for it; and recalls answer the same, to the token,
// with the counts remembered, forgotten, or filled by recalls running at
// once.
func TestLineCountCache(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	var ms []Message
	for i := range 300 {
		content := fmt.Sprintf("Turn %d: the deploy of service %d failed because the token expired.", i, i%17)
		switch i % 5 {
		case 1:
			content += "\nA second line with details."
		case 2:
			content += "  \n\n  indented after a blank line"
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		ms = append(ms, msg(role, "", content, t0.Add(time.Duration(i)*time.Minute)))
	}
	if _, err := s.Ingest(ctx, IngestRequest{ConversationID: "lc", Messages: ms}); err != nil {
		t.Fatal(err)
	}
	c, err := s.conversation(ctx, "lc", false)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	for i := range c.turns {
		tm := &c.turns[i]
		n, ok := c.cachedLine(tm)
		if !ok {
			t.Fatalf("turn %d: no line count after ingest", tm.Seq)
		}
		content, err := c.log.ReadContent(tm.Start, tm.End)
		if err != nil {
			t.Fatal(err)
		}
		if want := s.tok.Count(turnLine(tm, content)); n != want {
			t.Fatalf("turn %d: remembered %d tokens, the line has %d", tm.Seq, n, want)
		}
		moved := *tm
		moved.Start++
		if _, ok := c.cachedLine(&moved); ok {
			t.Fatalf("turn %d: a count made from another record was taken", tm.Seq)
		}
	}
	c.mu.RUnlock()

	queries := []string{"Why did the deploy of service 3 fail?", "token expired", "details", "indented blank line", "service 16"}
	recall := func(q string) RecallResult {
		t.Helper()
		res, err := s.Recall(ctx, RecallRequest{ConversationID: "lc", Message: q, MaxTokens: 400})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	want := map[string]RecallResult{}
	for _, q := range queries {
		want[q] = recall(q)
	}
	forget := func() {
		c.lock()
		clear(c.lineToks)
		c.unlock()
	}
	check := func(how string, got RecallResult, q string) {
		t.Helper()
		if w := want[q]; got.Text != w.Text || got.Tokens != w.Tokens {
			t.Errorf("%s, %q: %d tokens, want %d\n got %q\nwant %q", how, q, got.Tokens, w.Tokens, got.Text, w.Text)
		}
		if n := s.tok.Count(got.Text); n != got.Tokens {
			t.Errorf("%s, %q: says %d tokens, has %d", how, q, got.Tokens, n)
		}
	}
	forget()
	for _, q := range queries {
		check("counts forgotten", recall(q), q)
	}
	for _, q := range queries {
		check("counts learnt by recalls", recall(q), q)
	}
	forget()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, q := range queries {
				check("recalls at once", recall(q), q)
			}
		})
	}
	wg.Wait()
	if strings.TrimSpace(want[queries[0]].Text) == "" {
		t.Fatal("the first recall found nothing")
	}
}

// TestLineWarmerCountsLoadedTurns: a store opened on turns an earlier
// process wrote counts every turn's line in the background (more than one
// chunk of them), each count exact, before any recall asks.
func TestLineWarmerCountsLoadedTurns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	ingest(t, s, "c", chat(warmChunk+100, t0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	c, err := s.conversation(ctx, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		missing := 0
		c.mu.RLock()
		for i := range c.turns {
			tm := &c.turns[i]
			if tm.Empty {
				continue
			}
			n, ok := c.cachedLine(tm)
			if !ok {
				missing++
				continue
			}
			content, err := c.log.ReadContent(tm.Start, tm.End)
			if err != nil {
				c.mu.RUnlock()
				t.Fatal(err)
			}
			if want := s.tok.Count(turnLine(tm, content)); n != want {
				c.mu.RUnlock()
				t.Fatalf("turn %d: warmed count %d, the tokenizer says %d", tm.Seq, n, want)
			}
		}
		c.mu.RUnlock()
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d turns still have no line count", missing, len(c.turns))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
