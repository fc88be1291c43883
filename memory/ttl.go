package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

// Per-tag TTL. Tag rules may give topics a time to live (ttl_days): a turn
// expires when every one of its tags has a TTL and the turn is older than
// each. Expired turns are forgotten through Forget's path (reason "ttl",
// with its tombstone and cascade), when the store opens and every
// Options.TTLInterval after. A turn with a tag that has no TTL is kept.

// startTTL runs expiry in the background when tags can expire.
func (s *Store) startTTL() {
	if s.opts.TagTTL == nil || s.opts.ttlManual {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopTTL, s.ttlDone = cancel, make(chan struct{})
	go func() {
		defer close(s.ttlDone)
		t := time.NewTicker(s.opts.TTLInterval)
		defer t.Stop()
		for {
			if _, err := s.ExpireTTL(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
				s.log.Warn("forgetting expired turns failed; retried at the next interval", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// ExpireTTL forgets, in every conversation, the turns whose tags have all
// outlived their TTL (Options.TagTTL). It returns how many it forgot.
func (s *Store) ExpireTTL(ctx context.Context) (int, error) {
	if s.opts.TagTTL == nil {
		return 0, nil
	}
	kind := opWrite
	if s.shared != nil {
		kind = opAppend // a forget holds the conversation's shared lock
	}
	ctx, end, err := s.begin(ctx, kind)
	if err != nil {
		return 0, err
	}
	defer end()
	ids, err := s.conversationIDs()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		c, err := s.conversation(ctx, id, false)
		if err != nil {
			return total, err
		}
		n, err := s.expireConv(ctx, c)
		total += n
		if cerr := s.commitShared(ctx); err == nil && cerr != nil { // one lock at a time
			err = cerr
		}
		if err != nil {
			return total, fmt.Errorf("expire turns of %s: %w", id, err)
		}
	}
	return total, nil
}

func (s *Store) expireConv(ctx context.Context, c *conv) (int, error) {
	now := s.now()
	ttls := map[string]time.Duration{} // tag -> TTL, -1 = none
	ttl := func(tag string) time.Duration {
		d, ok := ttls[tag]
		if !ok {
			d = -1
			if v, has := s.opts.TagTTL(tag); has && v > 0 {
				d = v
			}
			ttls[tag] = d
		}
		return d
	}
	expired := func(c *conv) []int {
		var out []int
		for i := range c.turns {
			t := &c.turns[i]
			if t.Empty || t.Damaged || t.Forgotten || len(t.Tags) == 0 {
				continue
			}
			all := true
			for _, tag := range t.Tags {
				if d := ttl(tag); d < 0 || now.Sub(t.When) <= d {
					all = false
					break
				}
			}
			if all {
				out = append(out, t.Seq)
			}
		}
		return out
	}
	c.mu.RLock()
	seqs := expired(c)
	c.mu.RUnlock()
	if len(seqs) == 0 {
		return 0, nil
	}
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	c.mu.RLock()
	seqs = expired(c) // again, now that nothing else rewrites it
	c.mu.RUnlock()
	if len(seqs) == 0 {
		return 0, nil
	}
	edits := make(map[int]*masterlog.Record, len(seqs))
	for _, seq := range seqs {
		edits[seq] = nil
	}
	if _, err := s.rewriteTurns(ctx, c, edits, "ttl", nil); err != nil {
		return 0, err
	}
	s.log.Info("forgot expired turns (tag TTL)", "conversation", c.id, "turns", len(seqs))
	return len(seqs), nil
}
