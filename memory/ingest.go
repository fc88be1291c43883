package memory

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/index"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
	bolt "go.etcd.io/bbolt"
)

// sessionGap separates sessions: a pause this long, or a change of calendar
// date, starts a new one. Segments never span sessions.
const sessionGap = 30 * time.Minute

// Ingest appends messages to a conversation (compact_context). It is
// idempotent (a message already stored is counted as a duplicate) and all
// or nothing (one bad message fails the batch, storing none). The messages
// are fsync'd to the master log before Ingest returns; tagging, indexing and
// compaction follow.
//
// Tagging runs with no lock held (a model-backed tagger waits on the
// network for each turn): it works on a snapshot of the conversation's
// vocabulary, and the batch is checked for duplicates again before it is
// appended under the write lock.
func (s *Store) Ingest(ctx context.Context, req IngestRequest) (IngestResult, error) {
	var res IngestResult
	ctx, end, id, err := s.beginOn(ctx, opAppend, req.ConversationID)
	if err != nil {
		return res, err
	}
	defer end()
	res.ConversationID = id
	msgs, redacted := s.scrubMessages(req.Messages) // secrets never go further than this
	res.Redacted = redacted
	inputs, err := normalizeBatch(msgs, s.opts.MaxMessageBytes)
	if err != nil {
		return res, err
	}
	c, err := s.conversation(ctx, id, true)
	if err != nil {
		return res, err
	}
	if err := s.claimOwner(ctx, c); err != nil {
		return res, err
	}

	c.mu.RLock()
	idx := c.newInputs(inputs)
	fresh := selectInputs(inputs, idx)
	snap := s.tagSnapshot(c, len(fresh))
	c.mu.RUnlock()
	tagged := s.tagBatch(ctx, c.id, fresh, snap)

	// The writer lock only: the log's append and fsync and the commit run
	// while recalls go on; applyRecords takes mu to put the turns in place.
	c.wmu.Lock()
	// The log changed under us (cut short, or records a failed commit left
	// behind): repair before deciding what is new and where it goes.
	if size, err := c.log.Size(); err != nil || size != c.meta.LogSize {
		c.mu.Lock()
		err := s.reconcileLog(ctx, c)
		c.mu.Unlock()
		if err != nil {
			c.wmu.Unlock()
			return res, s.storageError(err, "nothing was stored")
		}
	}
	// Another call may have stored turns meanwhile: align again, and tag
	// again (rare) when that changed what is new.
	if again := c.newInputs(inputs); !slices.Equal(again, idx) {
		fresh = selectInputs(inputs, again)
		tagged = s.tagBatch(ctx, c.id, fresh, s.tagSnapshot(c, len(fresh)))
	}
	res.Duplicates = len(inputs) - len(fresh)
	if len(fresh) > 0 {
		now := s.now().UTC()
		recs := make([]masterlog.Record, len(fresh))
		for i, in := range fresh {
			recs[i] = recordFrom(len(c.turns)+i+1, in, now)
		}
		ranges, err := c.log.Append(c.meta.LogSize, recs)
		if err != nil {
			c.wmu.Unlock()
			return res, s.storageError(err, "nothing was stored")
		}
		end := ranges[len(ranges)-1][1] + 1
		first := len(c.turns) + 1
		if err := s.applyRecords(ctx, c, recs, ranges, end, tagged, heldWriter); err != nil {
			c.wmu.Unlock()
			return res, s.storageError(err, "the messages are saved in the master log and are indexed on the next call")
		}
		tagSeen := map[string]bool{}
		for seq := first; seq <= len(c.turns); seq++ {
			t := c.turn(seq)
			res.TurnIDs = append(res.TurnIDs, turnID(seq))
			res.Stored++
			if t.Empty {
				res.Skipped++
			}
			for _, tag := range t.Tags {
				if !tagSeen[tag] {
					tagSeen[tag] = true
					res.Tags = append(res.Tags, tag)
				}
			}
		}
		s.notifyStored(c, first)
	}
	if res.TurnIDs == nil {
		res.TurnIDs = []string{}
	}
	if res.Tags == nil {
		res.Tags = []string{}
	}
	c.wmu.Unlock()
	if res.Stored > res.Skipped {
		s.kickEmbedder()
	}

	cr, err := s.maybeCompact(ctx, c, req.Force, req.Progress)
	if err != nil {
		// The messages are stored; a failed compaction is retried next time.
		s.log.Error("compaction failed", "conversation", id, "err", err)
	}
	res.SegmentsCompacted, res.TokensFreed, res.Compacted = cr.segments, cr.freed, cr.segments > 0
	for range s.opts.MaxSplitsPerTurn {
		offered, err := s.maybeSplit(ctx, c)
		if err != nil {
			// Tags stay whole; the split is offered again later.
			s.log.Warn("tag split failed", "conversation", id, "err", err)
			break
		}
		if !offered {
			break
		}
	}
	c.mu.RLock()
	res.ActiveTokens, res.TotalTurns = c.active, len(c.turns)
	c.mu.RUnlock()
	if s.shared != nil {
		if err := s.commitShared(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}

// roleSystem is the role of a host's instructions.
const roleSystem = "system"

// newInputs returns the indexes of the inputs that are not stored yet.
// c.mu is held.
//
// A message with an id (the client's, or one the shared server's bridge
// stamped so that a call re-sent after a hand-over is exact) is stored
// once per id, and one with a timestamp once per role, name, content and
// timestamp; the resend rules below look at content, ids aside, since
// some clients give their messages new ids each time they send their
// history. Messages are matched only where a resend can be told from a new
// message: the longest run of stored turns at the end of
// the conversation that equals the start of the batch is a resend (a
// client sending its whole history, or the last exchange again after a
// retry); so is a batch of two or more that repeats the conversation from
// its first turn, or of three or more that repeats a stretch of it (an
// older window of the history sent again). Nothing else is a duplicate: the same words said
// again later ("yes" to another question), or twice in one batch, are new
// turns. One exception reads the ids: a lone message that repeats the last
// stored one, both under the client's own ids and the ids differ, is new
// (the client said "yes" again). A client that can resend a lone short
// message should give it an id or a timestamp.
//
// System messages stand apart: a host that resends its history with every
// call often leads it with a system prompt that changes each time (the
// current time in it), so the runs above are lined up on the other
// messages, on both sides, and a system message is stored once per
// content.
func (c *conv) newInputs(inputs []turnInput) []int {
	keys := make([]string, len(inputs))
	var aligned []int // the inputs lined up against the stored turns
	for i, in := range inputs {
		keys[i] = inputKey("", hex.EncodeToString(in.Hash[:]))
		if in.Role != roleSystem {
			aligned = append(aligned, i)
		}
	}
	akeys := make([]string, len(aligned))
	for j, i := range aligned {
		akeys[j] = keys[i]
	}
	var stored []*turnMeta // the newest readable turns, oldest first, system aside
	for seq := len(c.turns); seq > 0 && len(stored) < len(akeys); seq-- {
		if t := c.turn(seq); !c.apart(t) {
			stored = append(stored, t)
		}
	}
	slices.Reverse(stored)
	skip := 0
	for n := min(len(stored), len(akeys)); n > 0; n-- {
		if slices.EqualFunc(stored[len(stored)-n:], akeys[:n], func(t *turnMeta, k string) bool { return t.hasKey(k) }) {
			skip = n
			break
		}
	}
	if skip == 1 {
		if in, t := inputs[aligned[0]], stored[len(stored)-1]; clientID(in.ID) && clientID(t.ID) && in.ID != t.ID {
			skip = 0 // said again, under a new id of the client's
		}
	}
	if skip < len(akeys) && c.hasRun(akeys) {
		skip = len(akeys)
	}
	resent := make([]bool, len(inputs))
	for _, i := range aligned[:skip] {
		resent[i] = true
	}
	var out []int
	seen := map[string]bool{}
	for i := range inputs {
		in := inputs[i]
		if resent[i] {
			continue // a resend, told by content
		}
		if in.Role == roleSystem && !clientID(in.ID) {
			if _, dup := c.hashes[keys[i][2:]]; dup || seen[keys[i]] {
				continue // the same instructions again
			}
		}
		if c.forgotten[keys[i][2:]] {
			continue // forgotten: a resend or re-import never brings it back
		}
		if in.ID != "" {
			if _, dup := c.ids[in.ID]; dup || seen[inputKey(in.ID, "")] {
				continue
			}
			seen[inputKey(in.ID, "")] = true
		}
		if in.HasTime {
			if _, dup := c.hashes[keys[i][2:]]; dup || seen[keys[i]] {
				continue
			}
		}
		seen[keys[i]] = true
		out = append(out, i)
	}
	return out
}

// hasRun reports whether keys (two or more) are the conversation's first
// readable turns, or (three or more) a stretch of its readable turns.
// c.mu is held.
func (c *conv) hasRun(keys []string) bool {
	if len(keys) < 2 {
		return false
	}
	// match reports whether keys run from turn index i on, stepping over
	// placeholders.
	aside := func(i int) bool { return c.apart(&c.turns[i]) }
	match := func(i int) bool {
		for _, k := range keys {
			for i < len(c.turns) && aside(i) {
				i++
			}
			if i == len(c.turns) || !c.turns[i].hasKey(k) {
				return false
			}
			i++
		}
		return true
	}
	first := 0
	for first < len(c.turns) && aside(first) {
		first++
	}
	if match(first) {
		return true
	}
	if len(keys) < 3 {
		return false
	}
	for i := first + 1; i+len(keys) <= len(c.turns); i++ {
		if !aside(i) && c.turns[i].hasKey(keys[0]) && match(i) {
			return true
		}
	}
	return false
}

// apart reports whether runs of resent turns step over t (see newInputs):
// a placeholder or a system message.
func (c *conv) apart(t *turnMeta) bool {
	return t.Damaged || t.Role == roleSystem
}

// clientID reports whether id is a client's own message id (not empty, not
// stamped by the shared server's bridge).
func clientID(id string) bool { return id != "" && !strings.HasPrefix(id, StampedIDPrefix) }

// hasKey reports whether inputKey("", t.Hash) == k, without building it.
func (t *turnMeta) hasKey(k string) bool {
	return len(k) == 2+len(t.Hash) && k[:2] == "h:" && k[2:] == t.Hash
}

func inputKey(id, hash string) string {
	if id != "" {
		return "id:" + id
	}
	return "h:" + hash
}

func selectInputs(inputs []turnInput, idx []int) []turnInput {
	out := make([]turnInput, len(idx))
	for i, j := range idx {
		out[i] = inputs[j]
	}
	return out
}

// tagSnapshot is what tagging a batch needs of its conversation, copied so
// that tagging can run without the conversation's lock.
type tagSnapshot struct {
	vocab    map[string]int
	aliases  map[string]string
	prevTags []string
	prevText string // for the context-bleed gate; "" when the gate is off
	gate     bool
}

// tagSnapshot copies the tagging context. c.mu (or c's writer lock) is held.
func (s *Store) tagSnapshot(c *conv, batch int) tagSnapshot {
	snap := tagSnapshot{vocab: make(map[string]int, len(c.vocab)+8), aliases: c.meta.Aliases, prevTags: c.lastTags(len(c.turns))}
	for k, v := range c.vocab {
		snap.vocab[k] = v
	}
	// The context-bleed gate costs two embeddings per short turn: worth it
	// for a live exchange, not for a bulk import.
	snap.gate = batch <= bleedBatchMax && s.embedderReady()
	if prev := c.turn(len(c.turns)); snap.gate && prev != nil && !prev.Empty {
		if r, err := c.log.Read(prev.Start, prev.End); err == nil {
			snap.prevText = r.Content
		}
	}
	return snap
}

// tagBatch tags a batch of turns in order: each sees the tags of the one
// before and the vocabulary grown by the ones before. Empty turns get no
// tags. A failing tagger falls back to the previous turn's tags.
func (s *Store) tagBatch(ctx context.Context, convID string, ins []turnInput, snap tagSnapshot) []tagging.Result {
	out := make([]tagging.Result, len(ins))
	prevTags, prevText := snap.prevTags, snap.prevText
	for i, tin := range ins {
		text := tagText(tin.Text)
		if strings.TrimSpace(text) == "" {
			continue
		}
		previous := prevTags
		if snap.gate && s.bleeds(ctx, text, prevText) {
			previous = nil
		}
		prevText = text
		tr, err := s.tagger.Tag(ctx, tagging.Input{
			ConversationID: convID, Text: text, Role: tin.Role, Speaker: tin.Name,
			Vocabulary: snap.vocab, Aliases: snap.aliases, Previous: previous,
		})
		if err != nil || len(tr.Tags) == 0 {
			if err != nil {
				s.log.Warn("tagger failed; using the previous turn's tags", "conversation", convID, "err", err)
			}
			tr = tagging.Result{Tags: []string{tagging.General}, Primary: tagging.General, Source: "fallback"}
			if len(prevTags) > 0 {
				tr.Tags, tr.Primary, tr.Source = prevTags, prevTags[0], "inherited"
			}
		}
		prevTags = tr.Tags
		for _, t := range tr.Tags {
			snap.vocab[t]++
		}
		out[i] = tr
	}
	return out
}

// held says which of a conversation's locks a writer holds (see conv).
type held int

const (
	heldWriter held = iota // c.wmu alone: c.mu is taken to change the state
	heldBoth               // c.wmu and c.mu (c.lock)
)

// recordFrom is the master log record of input t, stored as turn seq at at
// (kept to the millisecond).
func recordFrom(seq int, t turnInput, at time.Time) masterlog.Record {
	r := masterlog.Record{
		V: masterlog.Version, Seq: seq, ID: t.ID, Role: t.Role, Name: t.Name, Content: t.Text, Raw: t.Raw,
		ToolCalls: t.ToolCalls, ToolCallID: t.ToolCallID, ToolUse: t.ToolUse, ToolResult: t.ToolResult,
		At: at.UTC().Truncate(time.Millisecond), Hash: hex.EncodeToString(t.Hash[:]),
	}
	if t.HasTime {
		ts := t.Timestamp
		r.Timestamp = &ts
	}
	return r
}

// applyRecords derives and commits the store entries of records already in
// the master log (bytes up to logEnd), indexes them, and puts them in the
// in-memory state: the index holds them before a recall can rank them, so
// a recall never reports turns it cannot search yet. tagged holds the
// records' tags, or nil to tag them here (replaying a log at open). The
// caller holds c's writer lock, and mu too if locks says so; with the
// writer lock alone, mu is taken only for the in-memory part.
func (s *Store) applyRecords(ctx context.Context, c *conv, recs []masterlog.Record, ranges [][2]int64, logEnd int64, tagged []tagging.Result, locks held) error {
	var retagged []int // records whose tags are new decisions; nil = all
	if tagged == nil {
		tagged, retagged = s.tagsForReplay(ctx, c, recs)
		if retagged == nil {
			retagged = []int{}
		}
	}
	metas := make([]turnMeta, len(recs))
	prevSession, prevWhen := 0, time.Time{}
	if prev := c.turn(len(c.turns)); prev != nil {
		prevSession, prevWhen = prev.Session, prev.When
	}
	for i, rec := range recs {
		when := rec.When().UTC()
		m := turnMeta{
			Seq: rec.Seq, Role: rec.Role, Name: rec.Name, When: when,
			Start: ranges[i][0], End: ranges[i][1], Hash: rec.Hash, ID: rec.ID,
			ToolUse: rec.ToolUse, ToolResult: rec.ToolResult, TextKey: textKey(rec.Content), Forgotten: rec.Forgotten,
		}
		if ranges[i][1] == 0 {
			// A record lost before it was committed: a placeholder keeps
			// the ids of the records after it.
			m.Empty, m.Damaged, m.When, m.Session = true, true, prevWhen, prevSession
			metas[i] = m
			continue
		}
		session := prevSession
		if session == 0 || when.Sub(prevWhen) > sessionGap || prevWhen.Sub(when) > sessionGap || !sameDay(when, prevWhen) {
			session++
		}
		m.Session, prevSession, prevWhen = session, session, when
		if strings.TrimSpace(rec.Content) == "" {
			m.Empty = true
		} else {
			m.Tokens = s.tok.Count(rec.Content)
			m.Question = strings.Contains(rec.Content, "?")
			m.Tags, m.Related, m.Rule = tagged[i].Tags, tagged[i].Related, tagged[i].Rule
		}
		metas[i] = m
	}
	meta := c.meta
	if end, err := s.recordTurnTags(c, metas, retagged); err != nil {
		return err
	} else if end > 0 && c.replay == nil {
		meta.DecisionsSize = end
	}
	meta.LogSize = logEnd
	meta.Turns = len(c.turns) + len(recs)
	meta.Updated = s.now().UTC()
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := convBucket(tx, c.id)
		if err != nil {
			return err
		}
		ptrs := make([]*turnMeta, len(metas))
		for i := range metas {
			ptrs[i] = &metas[i]
		}
		if err := putTurns(b.Bucket(bucketTurns), ptrs...); err != nil {
			return err
		}
		return putMeta(tx, meta)
	}); err != nil {
		return fmt.Errorf("commit turns of %s: %w", c.id, err)
	}
	// The turns are stored: a failed index write is the reconciler's to
	// retry (they stay behind IndexedThrough), not the caller's.
	replaying := retagged != nil
	indexedThrough := c.meta.IndexedThrough
	if indexedThrough == metas[0].Seq-1 && (!replaying || len(metas) <= syncIndexTurns) {
		for lo := 0; lo < len(metas); lo += indexBatch {
			hi := min(len(metas), lo+indexBatch)
			if docs := turnDocs(c.id, metas[lo:hi], recs[lo:hi]); len(docs) > 0 {
				if err := s.ix.Add(ctx, docs); err != nil {
					s.log.Warn("indexing stored turns failed; the reconciler retries", "conversation", c.id,
						"err", fmt.Errorf("index turns %d-%d: %w", metas[lo].Seq, metas[hi-1].Seq, err))
					s.kickReconciler()
					break
				}
			}
			indexedThrough = metas[hi-1].Seq
		}
	} else {
		s.kickReconciler()
	}
	lines := make([]int, len(metas))
	for i := range metas {
		if !metas[i].Empty {
			lines[i] = s.tok.Count(turnLine(&metas[i], recs[i].Content))
		}
	}
	if locks == heldWriter {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	c.meta = meta
	c.meta.IndexedThrough = max(c.meta.IndexedThrough, indexedThrough)
	for i := range metas {
		c.addTurn(metas[i])
		if !metas[i].Empty {
			c.cacheLine(&metas[i], lines[i])
		}
	}
	return nil
}

// indexBatch is how many turns go to the full-text index in one batch.
const indexBatch = 1000

// turnDocs are the full-text index documents of turns about to be put in
// place, from their records.
func turnDocs(convID string, metas []turnMeta, recs []masterlog.Record) []index.Doc {
	docs := make([]index.Doc, 0, len(metas))
	for i := range metas {
		if m := &metas[i]; !m.Empty {
			docs = append(docs, index.Doc{ID: turnDocID(convID, m.Seq), Conversation: convID, Kind: "turn", Text: recs[i].Content, Speaker: m.Name})
		}
	}
	return docs
}

// lastTags returns the tags of the latest non-empty turn at or before seq.
func (c *conv) lastTags(seq int) []string {
	for ; seq > 0 && seq > len(c.turns)-50; seq-- {
		if t := c.turn(seq); t != nil && !t.Empty {
			return t.Tags
		}
	}
	return nil
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
}

// indexTurns adds turns first..last (inclusive) to the full-text index. The
// turn text is read back from the master log. The caller holds c's writer
// lock, and mu too if locks says so; with the writer lock alone, mu is
// taken only to move the watermark.
func (s *Store) indexTurns(ctx context.Context, c *conv, first, last int, locks held) error {
	for lo := first; lo <= last; lo += indexBatch {
		hi := min(last, lo+indexBatch-1)
		docs := make([]index.Doc, 0, hi-lo+1)
		for seq := lo; seq <= hi; seq++ {
			t := c.turn(seq)
			if t == nil || t.Empty {
				continue
			}
			rec, err := c.log.Read(t.Start, t.End)
			if errors.Is(err, masterlog.ErrDamaged) {
				// Found damaged since it was verified: serve the rest.
				s.log.Warn("master log: damaged record not indexed", "conversation", c.id, "turn", turnID(seq), "err", err)
				continue
			}
			if err != nil {
				return err
			}
			docs = append(docs, index.Doc{
				ID: turnDocID(c.id, seq), Conversation: c.id, Kind: "turn", Text: rec.Content, Speaker: t.Name,
			})
		}
		if len(docs) > 0 {
			if err := s.ix.Add(ctx, docs); err != nil {
				return fmt.Errorf("index turns %d-%d of %s: %w", lo, hi, c.id, err)
			}
		}
		if locks == heldWriter {
			c.mu.Lock()
		}
		c.meta.IndexedThrough = max(c.meta.IndexedThrough, hi)
		if locks == heldWriter {
			c.mu.Unlock()
		}
	}
	return nil
}

func turnDocID(conv string, seq int) string { return conv + "/" + turnID(seq) }

// parseTurnDocID reads a turnDocID back (conversation ids hold no "/").
func parseTurnDocID(id string) (conv string, seq int, ok bool) {
	conv, t, ok := strings.Cut(id, "/")
	if !ok || conv == "" {
		return "", 0, false
	}
	seq, err := parseTurnID(t)
	if err != nil {
		return "", 0, false
	}
	return conv, seq, true
}
func segmentDocID(conv string, id int) string { return fmt.Sprintf("%s/s%d", conv, id) }
func tagDocID(conv string, tag string) string { return conv + "/tag/" + tag }

const (
	// bleedBatchMax: batches up to this size get the context-bleed gate.
	bleedBatchMax = 4
	// bleedWords: turns up to this many words are "short follow-ups".
	bleedWords = 12
	// bleedMin: below this cosine, a short turn is not about the previous
	// one, so it must not inherit its topics. Calibrated on the real
	// all-MiniLM-L6-v2 with the 20 + 20 short follow-ups of
	// testdata/calibration.json (TestRealCalibration*): topic switches
	// score -0.07 to 0.127, follow-ups that continue -0.01 to 0.78 (median
	// 0.24). 0.14 sits in the gap above the highest switch: 0 of 20
	// switches inherit topics and 14 of 20 follow-ups do (the rest are
	// generic, "make it 8pm", and keep only their own tags); the old 0.1
	// let 6 of 20 switches inherit.
	bleedMin = 0.14
)

// bleeds reports whether a short turn would wrongly inherit the previous
// turn's topics: the two are unrelated in meaning. Without a model, or for
// longer turns (their own words decide), it never does.
func (s *Store) bleeds(ctx context.Context, text, prevText string) bool {
	if prevText == "" || len(strings.Fields(text)) > bleedWords {
		return false
	}
	vecs, err := s.opts.Embedder.Embed(ctx, []string{clip(text, embedMaxChars), clip(prevText, embedMaxChars)})
	if err != nil || len(vecs) != 2 || len(vecs[0]) == 0 || len(vecs[0]) != len(vecs[1]) {
		return false
	}
	return dot(vecs[0], vecs[1]) < bleedMin
}
