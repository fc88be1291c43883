package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOwners: a conversation first written for an owner is refused to
// another owner on every read and write, scope "all" covers the caller's
// conversations and unowned ones, a caller with no owner sees everything,
// and the owner survives a rebuild from the logs.
func TestOwners(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir}
	s := openTest(t, opts)
	bg := context.Background()
	ana, bo := WithOwner(bg, "ana"), WithOwner(bg, "bo")
	put := func(ctx context.Context, conv, content string) error {
		_, err := s.Ingest(ctx, IngestRequest{ConversationID: conv, Messages: []Message{msg("user", "", content, t0)}})
		return err
	}
	for _, c := range []struct {
		ctx        context.Context
		conv, text string
	}{{ana, "ana-notes", "The heron migration survey starts in April."}, {bo, "bo-notes", "The heron feeder needs new seed."}, {bg, "open", "The heron photo contest closes Friday."}} {
		if err := put(c.ctx, c.conv, c.text); err != nil {
			t.Fatalf("ingest %s: %v", c.conv, err)
		}
	}
	forbidden := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrForbidden) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "another owner") {
			t.Errorf("%s: %v, want a refusal naming another owner", what, err)
		}
	}
	check := func(label string) {
		t.Helper()
		_, err := s.Recall(bo, RecallRequest{ConversationID: "ana-notes", Message: "heron survey"})
		forbidden(label+": recall of ana's conversation as bo", err)
		_, err = s.FindQuote(bo, FindQuoteRequest{ConversationID: "ana-notes", Query: "heron"})
		forbidden(label+": find_quote", err)
		_, err = s.Status(bo, "ana-notes")
		forbidden(label+": domain_status", err)
		_, err = s.Requests(bo, "ana-notes")
		forbidden(label+": request history", err)
		forbidden(label+": ingest into ana's conversation as bo", put(bo, "ana-notes", "bo writes here"))
		_, err = s.Forget(bo, ForgetRequest{ConversationID: "ana-notes", Query: "heron"})
		forbidden(label+": forget", err)
		// Scope all: bo's and the unowned conversation, never ana's.
		q, err := s.FindQuote(bo, FindQuoteRequest{Query: "heron", Scope: ScopeAll})
		if err != nil {
			t.Fatal(err)
		}
		var convs []string
		for _, x := range q.Quotes {
			convs = append(convs, x.ConversationID)
		}
		slices.Sort(convs)
		if !slices.Equal(convs, []string{"bo-notes", "open"}) {
			t.Errorf("%s: scope all as bo quotes %v, want bo-notes and open", label, convs)
		}
		list, err := s.Conversations(bo)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range list {
			ids = append(ids, c.ID)
		}
		if !slices.Equal(ids, []string{"bo-notes", "open"}) {
			t.Errorf("%s: bo lists %v", label, ids)
		}
		// The owner and callers without an owner read it.
		for name, ctx := range map[string]context.Context{"ana": ana, "no owner": bg} {
			q, err := s.FindQuote(ctx, FindQuoteRequest{ConversationID: "ana-notes", Query: "heron migration"})
			if err != nil || len(q.Quotes) != 1 {
				t.Errorf("%s: %s reads ana's conversation: %+v %v", label, name, q, err)
			}
		}
		q, err = s.FindQuote(bg, FindQuoteRequest{Query: "heron", Scope: ScopeAll})
		if err != nil || len(q.Quotes) != 3 {
			t.Errorf("%s: scope all with no owner: %d quotes, %v; want all 3", label, len(q.Quotes), err)
		}
	}
	check("live")
	// ana writes on; an unowned conversation stays open to anyone's writes.
	if err := put(ana, "ana-notes", "Second survey day is in May."); err != nil {
		t.Fatalf("the owner's second write: %v", err)
	}
	if err := put(bo, "open", "bo adds to the open conversation."); err != nil {
		t.Fatalf("a write to an unowned conversation: %v", err)
	}
	if st, _ := s.Status(ana, "open"); st.Totals.Turns != 2 {
		t.Errorf("open has %d turns, want 2 (still unowned after bo's write)", st.Totals.Turns)
	}
	// Rebuilt from the logs alone, the owners are the same.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "vc.db")); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, opts)
	check("after a rebuild")
}
