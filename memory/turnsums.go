package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sync/errgroup"
)

// Per-message summaries (seed 003): each long turn summarised with the
// previous and the next message in view, so that reading the previous
// message, the summary and the next message still flows. They are made by
// the configured summariser (a model, MCP sampling, or the extractive
// fallback), pass through the secret scrubber like messages do, and are
// recorded in the derived-decisions log (turn_summaries records), so a
// rebuild brings them back without a model. They are made lazily, when a
// hierarchical assembly wants one that is missing (a few per request), or
// in bulk by SummarizeTurns (`vc-mcp summaries regenerate --from`).

const (
	// minTurnSummaryTokens: shorter turns stand for themselves; a summary
	// would save nothing.
	minTurnSummaryTokens = 60
	// neighbourTokens bounds how much of each neighbour the summariser sees.
	neighbourTokens = 400
	// maxTurnSummaryTokens bounds one summary.
	maxTurnSummaryTokens = 160
	// lazyTurnSummaries bounds the summaries one recall may make.
	lazyTurnSummaries = 6
)

// turnSummaryRec is one message's stored summary. Hash ties it to the
// master log record it was made from.
type turnSummaryRec struct {
	Seq     int       `json:"seq"`
	Hash    string    `json:"hash"`
	Summary string    `json:"summary"`
	Tokens  int       `json:"tokens"`
	Model   string    `json:"summary_model"`
	At      time.Time `json:"summary_at"`
	Version string    `json:"version"`
}

// summarisable reports whether a turn gets a per-message summary.
func summarisable(t *turnMeta) bool {
	return t != nil && !t.Empty && !t.Damaged && t.Tokens >= minTurnSummaryTokens
}

// TurnSummaryRequest asks for per-message summaries to be (re)made.
type TurnSummaryRequest struct {
	ConversationID string // "" = every conversation
	// From is the first turn ("t12" or "12"); "" = the first turn.
	From string
	// Missing only makes summaries that do not exist yet.
	Missing  bool
	Progress Progress
}

// TurnSummaryResult counts what SummarizeTurns did.
type TurnSummaryResult struct {
	Conversations int `json:"conversations"`
	Summarised    int `json:"summarised"`
	// Short counts turns too short to need a summary.
	Short int `json:"short"`
}

// parseFrom reads a turn reference "t12" or "12"; "" is turn 1.
func parseFrom(from string) (int, error) {
	from = strings.TrimSpace(from)
	if from == "" {
		return 1, nil
	}
	if !strings.HasPrefix(from, "t") {
		from = "t" + from
	}
	return parseTurnID(from)
}

// SummarizeTurns makes the per-message summaries of every turn from
// req.From on, replacing older ones, and records them in the decisions log.
func (s *Store) SummarizeTurns(ctx context.Context, req TurnSummaryRequest) (TurnSummaryResult, error) {
	var res TurnSummaryResult
	from, err := parseFrom(req.From)
	if err != nil {
		return res, err
	}
	// opAppend: the summaries are lines of the decisions log; with shared
	// logs each conversation's are sent before the next one is locked.
	ctx, end, err := s.begin(ctx, opAppend)
	if err != nil {
		return res, err
	}
	defer end()
	ids, err := s.targetIDs(req.ConversationID)
	if err != nil {
		return res, err
	}
	for _, id := range ids {
		c, err := s.conversation(ctx, id, false)
		if err != nil {
			return res, err
		}
		c.mu.RLock()
		var seqs []int
		for seq := from; seq <= len(c.turns); seq++ {
			t := c.turn(seq)
			if !summarisable(t) {
				if t != nil && !t.Empty && !t.Damaged {
					res.Short++
				}
				continue
			}
			if req.Missing && c.turnSums[seq] != nil {
				continue
			}
			seqs = append(seqs, seq)
		}
		c.mu.RUnlock()
		n, err := s.summariseTurns(ctx, c, seqs, req.Progress)
		if err == nil {
			err = s.commitShared(ctx)
		}
		if err != nil {
			return res, fmt.Errorf("summarise turns of %s: %w", id, err)
		}
		if n > 0 {
			res.Conversations++
		}
		res.Summarised += n
	}
	return res, nil
}

// targetIDs is one resolved conversation, or every one for "".
func (s *Store) targetIDs(id string) ([]string, error) {
	if id == "" {
		return s.conversationIDs()
	}
	id, err := s.resolve(id)
	if err != nil {
		return nil, err
	}
	return []string{id}, nil
}

// turnPlan is one turn to summarise and its neighbours' text.
type turnPlan struct {
	seq  int
	hash string
	in   summarize.Input
	rec  turnSummaryRec
	skip bool
}

// summariseTurns makes and records the summaries of seqs. No lock is held
// on entry; compactMu serialises it with compaction and regeneration, and
// the summariser runs without c.mu held.
func (s *Store) summariseTurns(ctx context.Context, c *conv, seqs []int, progress Progress) (int, error) {
	if len(seqs) == 0 {
		return 0, nil
	}
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	return s.summariseTurnsLocked(ctx, c, seqs, progress)
}

// summariseTurnsLocked is summariseTurns with c.compactMu held.
func (s *Store) summariseTurnsLocked(ctx context.Context, c *conv, seqs []int, progress Progress) (int, error) {

	c.mu.RLock()
	plans := make([]turnPlan, 0, len(seqs))
	for _, seq := range seqs {
		t := c.turn(seq)
		if !summarisable(t) {
			continue
		}
		rec, err := c.log.Read(t.Start, t.End)
		if err != nil {
			s.log.Warn("unreadable turn not summarised", "conversation", c.id, "turn", seq, "err", err)
			continue
		}
		p := turnPlan{seq: seq, hash: t.Hash}
		p.in = summarize.Input{ConversationID: c.id, Kind: summarize.Single, Tag: t.primary(), Tags: t.Tags,
			Turns:     []summarize.Turn{{ID: turnID(seq), Role: t.Role, Speaker: t.Name, Time: t.When, Text: rec.Content}},
			MaxTokens: min(maxTurnSummaryTokens, max(40, t.Tokens/4)),
		}
		p.in.Previous = s.neighbour(c, seq, -1)
		p.in.Next = s.neighbour(c, seq, +1)
		plans = append(plans, p)
	}
	c.mu.RUnlock()
	if len(plans) == 0 {
		return 0, nil
	}

	var done atomic.Int64
	var progressMu sync.Mutex // Progress is called from one goroutine at a time
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.SummaryConcurrency)
	sc := s.scrubber()
	for i := range plans {
		p := &plans[i]
		g.Go(func() error {
			out, err := s.sum.Summarize(gctx, p.in)
			if err != nil {
				return fmt.Errorf("summarise %s: %w", turnID(p.seq), err)
			}
			// A model may repeat (or invent) a secret: summaries are
			// scrubbed like messages before anything keeps them.
			text, _ := sc.Scrub(strings.TrimSpace(out.Summary))
			text = s.tok.Truncate(text, maxTurnSummaryTokens)
			if text == "" {
				p.skip = true
				return nil
			}
			method := out.Method
			if method == "" {
				method = "extractive"
			}
			p.rec = turnSummaryRec{Seq: p.seq, Hash: p.hash, Summary: text, Tokens: s.tok.Count(text),
				Model: method, Version: out.Version, At: s.now().UTC()}
			if progress != nil {
				progressMu.Lock()
				progress(int(done.Add(1)), len(plans), "summarised "+turnID(p.seq))
				progressMu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	var recs []turnSummaryRec
	for _, p := range plans {
		if !p.skip {
			recs = append(recs, p.rec)
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	// Committed under the writer lock alone (recalls go on); put in place
	// under mu too.
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// Keep only summaries whose turn is still the one summarised.
	kept := recs[:0]
	for _, r := range recs {
		if t := c.turn(r.Seq); t != nil && t.Hash == r.Hash {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return 0, nil
	}
	meta := c.meta
	var err error
	if meta.DecisionsSize, err = s.recordDecision(c, decision{Kind: decTurnSums, TurnSums: kept}); err != nil {
		return 0, err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := convBucket(tx, c.id)
		if err != nil {
			return err
		}
		tb := b.Bucket(bucketTurnSums)
		for _, r := range kept {
			if err := putJSON(tb, seqKey(r.Seq), r); err != nil {
				return err
			}
		}
		return putMeta(tx, meta)
	})
	if err != nil {
		return 0, fmt.Errorf("commit turn summaries of %s: %w", c.id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.meta = meta
	for i := range kept {
		r := kept[i]
		c.turnSums[r.Seq] = &r
	}
	return len(kept), nil
}

// neighbour is the text of the nearest non-empty turn before (dir -1) or
// after (dir +1) seq, cut to neighbourTokens. c.mu is held.
func (s *Store) neighbour(c *conv, seq, dir int) string {
	for n := seq + dir; n >= 1 && n <= len(c.turns); n += dir {
		t := c.turn(n)
		if t.Empty || t.Damaged {
			continue
		}
		rec, err := c.log.Read(t.Start, t.End)
		if err != nil {
			return ""
		}
		if dir < 0 {
			return s.tail(rec.Content, neighbourTokens)
		}
		return s.tok.Truncate(rec.Content, neighbourTokens)
	}
	return ""
}

// tail keeps about the last n tokens of text (the part next to the turn).
func (s *Store) tail(text string, n int) string {
	if s.tok.Count(text) <= n {
		return text
	}
	words := strings.Fields(text)
	lo, hi := 0, len(words)
	for lo < hi { // the fewest leading words to drop
		mid := (lo + hi) / 2
		if s.tok.Count(strings.Join(words[mid:], " ")) <= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return "… " + strings.Join(words[lo:], " ")
}

// ClearTurnSummaries deletes the per-message summaries of one conversation
// (or every one for ""), recording the clear so a rebuild does not bring
// them back. It returns how many were removed.
func (s *Store) ClearTurnSummaries(ctx context.Context, conversationID string) (int, error) {
	ctx, end, err := s.begin(ctx, opAppend) // as SummarizeTurns
	if err != nil {
		return 0, err
	}
	defer end()
	ids, err := s.targetIDs(conversationID)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, id := range ids {
		c, err := s.conversation(ctx, id, false)
		if err != nil {
			return total, err
		}
		n, err := s.clearTurnSums(c)
		if err == nil {
			err = s.commitShared(ctx)
		}
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// clearTurnSums records and commits the clear under c's writer lock, and
// takes the readers' lock only to drop the summaries from the state.
func (s *Store) clearTurnSums(c *conv) (int, error) {
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n := len(c.turnSums)
	if n == 0 {
		return 0, nil
	}
	meta := c.meta
	var err error
	if meta.DecisionsSize, err = s.recordDecision(c, decision{Kind: decTurnSumsClear}); err != nil {
		return 0, err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := convBucket(tx, c.id)
		if err != nil {
			return err
		}
		if err := resetBucket(b, bucketTurnSums); err != nil {
			return err
		}
		return putMeta(tx, meta)
	})
	if err != nil {
		return 0, fmt.Errorf("commit cleared turn summaries of %s: %w", c.id, err)
	}
	c.mu.Lock()
	c.meta = meta
	c.turnSums = map[int]*turnSummaryRec{}
	c.mu.Unlock()
	return n, nil
}

// resetBucket empties a conversation's sub-bucket.
func resetBucket(b *bolt.Bucket, name []byte) error {
	if b.Bucket(name) != nil {
		if err := b.DeleteBucket(name); err != nil {
			return fmt.Errorf("clear %s: %w", name, err)
		}
	}
	if _, err := b.CreateBucket(name); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	return nil
}

// SummaryModelStats counts the per-message summaries one model and
// prompt version made.
type SummaryModelStats struct {
	Model   string `json:"model"`
	Version string `json:"version"`
	Count   int    `json:"count"`
}

// ContextStats describes a conversation's context: its turns and tokens,
// and how much of it per-message summaries and segment summaries cover.
type ContextStats struct {
	ConversationID string `json:"conversation_id,omitempty"`
	Conversations  int    `json:"conversations"`
	Turns          int    `json:"turns"`
	Tokens         int    `json:"tokens"`
	// Summarisable counts turns long enough to get a per-message summary;
	// Summarised those that have one; Coverage is their ratio (0..1).
	Summarisable int     `json:"summarisable"`
	Summarised   int     `json:"summarised"`
	Coverage     float64 `json:"coverage"`
	// SummarisedTokens is the full size of the summarised turns;
	// SummaryTokens the size of their summaries; TokensSaved the difference.
	SummarisedTokens int `json:"summarised_tokens"`
	SummaryTokens    int `json:"summary_tokens"`
	TokensSaved      int `json:"tokens_saved"`
	// Segments and CompactedTurns describe the aggregated (segment) layer.
	Segments       int                 `json:"segments"`
	CompactedTurns int                 `json:"compacted_turns"`
	ByModel        []SummaryModelStats `json:"by_model"`
}

// ContextStats reports the summary coverage of one conversation, or of
// every one for "".
func (s *Store) ContextStats(ctx context.Context, conversationID string) (ContextStats, error) {
	out := ContextStats{ByModel: []SummaryModelStats{}}
	ctx, end, err := s.begin(ctx, opRead)
	if err != nil {
		return out, err
	}
	defer end()
	ids, err := s.targetIDs(conversationID)
	if err != nil {
		return out, err
	}
	if conversationID != "" {
		out.ConversationID = ids[0]
	}
	by := map[[2]string]int{}
	for _, id := range ids {
		c, err := s.conversation(ctx, id, false)
		if err != nil {
			return out, err
		}
		c.mu.RLock()
		out.Conversations++
		for i := range c.turns {
			t := &c.turns[i]
			if t.Empty || t.Damaged {
				continue
			}
			out.Turns++
			out.Tokens += t.Tokens
			if !summarisable(t) {
				continue
			}
			out.Summarisable++
			if r := c.turnSums[t.Seq]; r != nil {
				out.Summarised++
				out.SummarisedTokens += t.Tokens
				out.SummaryTokens += r.Tokens
				by[[2]string{r.Model, r.Version}]++
			}
		}
		out.Segments += len(c.segs)
		out.CompactedTurns += c.meta.CompactedThrough
		c.mu.RUnlock()
	}
	if out.Summarisable > 0 {
		out.Coverage = float64(out.Summarised) / float64(out.Summarisable)
	}
	out.TokensSaved = max(0, out.SummarisedTokens-out.SummaryTokens)
	for k, n := range by {
		out.ByModel = append(out.ByModel, SummaryModelStats{Model: k[0], Version: k[1], Count: n})
	}
	sort.Slice(out.ByModel, func(i, j int) bool {
		a, b := out.ByModel[i], out.ByModel[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Model+a.Version < b.Model+b.Version
	})
	return out, nil
}
