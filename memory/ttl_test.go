package memory

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// TestTagTTLForgetsExpired: turns whose tags all have a TTL are forgotten
// once older than it (on open and by ExpireTTL), through Forget's path;
// turns with any tag without a TTL, or younger, are kept.
func TestTagTTLForgetsExpired(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	clock := &testClock{now: t0.Add(24 * time.Hour)}
	msgs := chat(32, t0)
	// First learn the tags without expiry.
	s := openTest(t, Options{Dir: dir, ContextWindow: 1200, ProtectedTurns: 2, Now: clock.Now})
	ingest(t, s, "c", msgs[:16])
	ingest(t, s, "c", msgs[16:])
	// The dog topic (messages 5-8, 21-24): its tags that no other topic has.
	tagsOf := map[int][]string{}
	carriers := map[string]map[bool]bool{} // tag -> {dog turn?}
	for seq := 1; seq <= len(msgs); seq++ {
		tr, err := s.Turn(ctx, "c", turnID(seq))
		if err != nil {
			t.Fatal(err)
		}
		tagsOf[seq] = tr.Tags
		dog := strings.Contains(tr.Text, "Rex")
		for _, tag := range tr.Tags {
			if carriers[tag] == nil {
				carriers[tag] = map[bool]bool{}
			}
			carriers[tag][dog] = true
		}
	}
	expiring := map[string]bool{}
	for tag, by := range carriers {
		if by[true] && !by[false] {
			expiring[tag] = true
		}
	}
	var want []string
	for seq := 1; seq <= len(msgs); seq++ {
		all := len(tagsOf[seq]) > 0
		for _, tag := range tagsOf[seq] {
			all = all && expiring[tag]
		}
		if all {
			want = append(want, turnID(seq))
		}
	}
	if len(want) == 0 || len(expiring) == 0 {
		t.Fatalf("setup: no turn carries only dog tags (%v)", tagsOf)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	ttl := func(tag string) (time.Duration, bool) {
		if expiring[tag] {
			return 30 * 24 * time.Hour, true
		}
		return 0, false
	}
	opts := Options{Dir: dir, ContextWindow: 1200, ProtectedTurns: 2, Now: clock.Now, TagTTL: ttl, TTLInterval: time.Hour}
	manual := opts
	manual.ttlManual = true // no background pass racing the clock below
	s = openTest(t, manual)
	if n, err := s.ExpireTTL(ctx); err != nil || n != 0 {
		t.Fatalf("before the TTL: forgot %d (%v), want 0", n, err)
	}
	clock.Set(t0.Add(31 * 24 * time.Hour))
	n, err := s.ExpireTTL(ctx)
	if err != nil || n != len(want) {
		t.Fatalf("after the TTL: forgot %d (%v), want %d (%v)", n, err, len(want), want)
	}
	forgotten := map[string]bool{}
	for _, id := range want {
		forgotten[id] = true
	}
	for seq := 1; seq <= len(msgs); seq++ {
		_, err := s.Turn(ctx, "c", turnID(seq))
		if forgotten[turnID(seq)] != (err != nil) {
			t.Fatalf("turn %s: err %v, forgotten %v", turnID(seq), err, forgotten[turnID(seq)])
		}
	}
	if n, _ := s.ExpireTTL(ctx); n != 0 {
		t.Fatalf("second pass forgot %d more", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// On open: a newer expired turn is forgotten by the pass Open starts.
	s = openTest(t, Options{Dir: dir, ContextWindow: 1200, ProtectedTurns: 2, Now: clock.Now})
	extra := ingest(t, s, "c", []Message{msg("user", "Ana", "My dog Rex needs his vaccination at the vet clinic, appointment number 99.", t0.Add(2*24*time.Hour))})
	if extra.Stored != 1 {
		t.Fatal("setup: extra turn not stored")
	}
	extraID := extra.TurnIDs[0]
	tr, _ := s.Turn(ctx, "c", extraID)
	all := len(tr.Tags) > 0
	for _, tag := range tr.Tags {
		all = all && expiring[tag]
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !all {
		t.Fatalf("setup: extra turn tags %v are not all expiring", tr.Tags)
	}
	clock.Set(t0.Add(40 * 24 * time.Hour))
	s = openTest(t, opts)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := s.Turn(ctx, "c", extraID); err != nil {
			break // forgotten by the pass Open started
		}
		if time.Now().After(deadline) {
			t.Fatalf("open pass: expired turn %s not forgotten", extraID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
