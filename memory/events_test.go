package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// next reads one change or fails after a few seconds.
func next(t *testing.T, ch <-chan Change) Change {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no change published")
	}
	return Change{}
}

func TestWatchStoredAndCompacted(t *testing.T) {
	s := openTest(t, Options{ProtectedTurns: 2})
	ch := s.Watch(t.Context())

	res := ingest(t, s, "w", chat(8, t0))
	c := next(t, ch)
	if c.Kind != ChangeStored || c.ConversationID != "w" || !c.NewConversation {
		t.Fatalf("first ingest: got %+v, want a stored change of a new conversation w", c)
	}
	if !slices.Equal(c.TurnIDs, res.TurnIDs) {
		t.Errorf("turn ids: got %v, want %v", c.TurnIDs, res.TurnIDs)
	}
	if len(c.NewTags) == 0 || !slices.Equal(c.NewTags, res.Tags) {
		t.Errorf("new tags: got %v, want every tag of the first batch %v", c.NewTags, res.Tags)
	}

	// A resend stores nothing and publishes nothing; a new turn on a known
	// topic changes that tag without making it new.
	ingest(t, s, "w", chat(8, t0))
	res = ingest(t, s, "w", []Message{msg("user", "Ana", "We should migrate the Postgres database to version 17 after all.", t0.Add(time.Hour))})
	c = next(t, ch)
	if c.Kind != ChangeStored || c.NewConversation || len(c.TurnIDs) != 1 || c.TurnIDs[0] != res.TurnIDs[0] {
		t.Fatalf("second ingest: got %+v, want one stored turn %v", c, res.TurnIDs)
	}
	for _, tag := range c.Tags {
		if slices.Contains(c.NewTags, tag) && tag != "general" && strings.Contains(tag, "postgres") {
			t.Errorf("tag %s reported new, but earlier turns carry it (%+v)", tag, c)
		}
	}

	r, err := s.Ingest(context.Background(), IngestRequest{ConversationID: "w", Messages: chat(12, t0.Add(2*time.Hour)), Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Compacted {
		t.Fatalf("forced ingest did not compact: %+v", r)
	}
	if c = next(t, ch); c.Kind != ChangeStored {
		t.Fatalf("got %+v, want the stored change first", c)
	}
	c = next(t, ch)
	if c.Kind != ChangeCompacted || len(c.Tags) == 0 || len(c.TurnIDs) == 0 {
		t.Fatalf("got %+v, want a compacted change naming tags and turns", c)
	}
}

func TestWatchSplit(t *testing.T) {
	s := openTest(t, Options{Splitter: &citySplitter{}})
	ch := s.Watch(t.Context())
	var msgs []Message
	for i := 0; i < 60; i++ {
		city := []string{"Kyoto", "Osaka", "Nara"}[i%3]
		msgs = append(msgs, msg("user", "Ana", fmt.Sprintf("Japan itinerary: day %d in %s.", i+1, city), t0.Add(time.Duration(i)*time.Minute)))
	}
	ingest(t, s, "c", msgs)
	var split Change
	for split.Kind != ChangeSplit {
		split = next(t, ch)
	}
	if len(split.Tags) < 2 || len(split.TurnIDs) == 0 {
		t.Fatalf("split change %+v: want the parent, its subtags and the re-tagged turns", split)
	}
	parent := split.Tags[0]
	for _, sub := range []string{parent + "-kyoto", parent + "-osaka"} {
		if !slices.Contains(split.NewTags, sub) {
			t.Errorf("split change new tags %v lack %s", split.NewTags, sub)
		}
	}
	turn, err := s.Turn(t.Context(), "c", split.TurnIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(turn.Tags, parent) || len(turn.Tags) < 2 {
		t.Errorf("re-tagged turn %s has tags %v, want the parent and a subtag", turn.TurnID, turn.Tags)
	}
}

// TestWatchSlowWatcherNeverBlocksIngest: a watcher that reads nothing must
// not stall writers; its backlog is merged, and the latest turns survive.
func TestWatchSlowWatcherNeverBlocksIngest(t *testing.T) {
	defer func(n int) { maxPendingChanges = n }(maxPendingChanges)
	maxPendingChanges = 8
	s := openTest(t, Options{})
	ch := s.Watch(t.Context())
	// Three writers, one conversation each, and a second watcher that keeps up.
	const writers, each = 3, 8
	fast := s.Watch(t.Context())
	fastSeen := map[string]bool{}
	fastDone := make(chan struct{})
	go func() {
		defer close(fastDone)
		for c := range fast {
			for _, id := range c.TurnIDs {
				fastSeen[c.ConversationID+"/"+id] = true
			}
			if len(fastSeen) == writers*each {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ingest(t, s, fmt.Sprintf("c%d", w), []Message{msg("user", "", fmt.Sprintf("note %d of writer %d about the garden", i, w), t0.Add(time.Duration(i)*time.Second))})
			}
		}()
	}
	wg.Wait()
	select {
	case <-fastDone:
	case <-time.After(5 * time.Second):
		t.Fatalf("the watcher that keeps up saw %d of %d turns", len(fastSeen), writers*each)
	}
	// The slow one gets its backlog merged, with every conversation's latest turn.
	seen := map[string]bool{}
	deadline := time.After(5 * time.Second)
	for w := range writers {
		last := fmt.Sprintf("c%d/t%d", w, each)
		for !seen[last] {
			select {
			case c := <-ch:
				for _, id := range c.TurnIDs {
					seen[c.ConversationID+"/"+id] = true
				}
			case <-deadline:
				t.Fatalf("the slow watcher never got %s (%d turns seen)", last, len(seen))
			}
		}
	}
}

func TestWatchEnds(t *testing.T) {
	s := openTest(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	a, b := s.Watch(ctx), s.Watch(t.Context())
	cancel()
	if _, ok := <-a; ok {
		t.Fatal("watch channel open after its context ended")
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range b {
		}
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait() // b closes with the store
	if _, ok := <-s.Watch(t.Context()); ok {
		t.Fatal("Watch on a closed store returned an open channel")
	}
}

func TestTurnReadsVerbatim(t *testing.T) {
	s := openTest(t, Options{})
	text := "My sister Alice moved to Lisbon in May.\n  Indented line, *kept* as is."
	res := ingest(t, s, "", []Message{msg("user", "Bob", text, t0)})
	got, err := s.Turn(t.Context(), "", res.TurnIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != text || got.Role != "user" || got.Speaker != "Bob" || !got.Timestamp.Equal(t0) || got.ConversationID != "default" {
		t.Errorf("turn: got %+v", got)
	}
	if got.Ref.File == "" || got.Ref.End <= got.Ref.Start || len(got.Tags) == 0 {
		t.Errorf("turn ref/tags: got %+v %v", got.Ref, got.Tags)
	}
	for _, tt := range []struct {
		conv, id string
		want     error
	}{
		{"", "t2", ErrNotFound},
		{"", "t0", ErrInvalid},
		{"", "12", ErrInvalid},
		{"", "t01", ErrInvalid},
		{"nobody", "t1", ErrNotFound},
		{"a/b", "t1", ErrInvalid},
	} {
		if _, err := s.Turn(t.Context(), tt.conv, tt.id); !errors.Is(err, tt.want) {
			t.Errorf("Turn(%q, %q): got %v, want %v", tt.conv, tt.id, err, tt.want)
		}
	}
}

func TestMergeChanges(t *testing.T) {
	defer func(n int) { maxMergedTurnIDs = n }(maxMergedTurnIDs)
	maxMergedTurnIDs = 3
	got := mergeChanges([]Change{
		{Kind: ChangeStored, ConversationID: "a", TurnIDs: []string{"t1", "t2"}, Tags: []string{"x"}, NewTags: []string{"x"}, NewConversation: true},
		{Kind: ChangeStored, ConversationID: "b", TurnIDs: []string{"t1"}, Tags: []string{"y"}},
		{Kind: ChangeCompacted, ConversationID: "a", TurnIDs: []string{"t2", "t3", "t4"}, Tags: []string{"x", "z"}},
	})
	want := []Change{
		{Kind: ChangeCompacted, ConversationID: "a", TurnIDs: []string{"t2", "t3", "t4"}, Tags: []string{"x", "z"}, NewTags: []string{"x"}, NewConversation: true},
		{Kind: ChangeStored, ConversationID: "b", TurnIDs: []string{"t1"}, Tags: []string{"y"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("merged:\n got %+v\nwant %+v", got, want)
	}
}
