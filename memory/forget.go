package memory

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/files"
	"github.com/vc-mcp/vc-mcp/memory/decisionlog"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	"github.com/vc-mcp/vc-mcp/memory/summarize"
	bolt "go.etcd.io/bbolt"
)

// Forgetting. Forget removes turns for good: their records in the master
// log become placeholders without text (the same sequence number, the
// message's hash kept so a resend or a re-import never stores it again),
// the decisions log is rewritten without anything drawn from them (their
// tags; the summaries of the segments and topics that held them, remade
// from what is left or emptied when nothing is), and a tombstone record
// (decisions kind "forget": turn numbers, hashes, reason and time, never
// text) is appended. Both logs are rewritten atomically (a temporary file,
// fsync, rename, fsync of the directory). The conversation's derived state
// (vc.db, the index documents, vectors) is then rebuilt from the two logs
// exactly as Rebuild would, so what a restart or a rebuild shows is what
// Forget left. Scan's redaction (scan.go) goes through the same rewrite,
// replacing a secret inside a turn instead of the whole turn.
//
// Bytes on disk: Bleve and bbolt keep deleted data in free pages and old
// segment files until they are reused or merged. After a rewrite the index
// is force-merged in the background (best effort: scorch may keep the last
// older snapshot), and when the store closes vc.db is compacted in place,
// every page written anew (vcdb.DB.Scrub), and the index is deleted (the next Open rebuilds it from the
// logs in the background), so no byte of a forgotten message outlives the
// process that forgot it. While that process runs, answers never show it.

// ForgetRequest selects turns to forget. At least one selector is needed;
// when several are given a turn must match all of them.
type ForgetRequest struct {
	ConversationID string
	// Query is an exact phrase, matched case-insensitively in the text.
	Query string
	// TurnIDs are turn ids ("t12").
	TurnIDs []string
	// Tag selects the turns carrying a tag (or an alias of one).
	Tag string
	// Before selects the turns said before this time.
	Before time.Time
	// DryRun reports what would be forgotten and changes nothing.
	DryRun bool
	// Reason is recorded in the tombstone ("forget" when empty; "ttl" for
	// per-tag expiry).
	Reason string
}

// ForgetResult says what was (or, with DryRun, would be) forgotten.
type ForgetResult struct {
	ConversationID string   `json:"conversation_id"`
	Forgotten      int      `json:"forgotten"`
	TurnIDs        []string `json:"turn_ids"`
	DryRun         bool     `json:"dry_run,omitempty"`
	// SummariesRemade counts the segment and topic summaries remade.
	SummariesRemade int `json:"summaries_remade"`
	// DroppedTags are topics nothing is left of.
	DroppedTags []string `json:"dropped_tags,omitempty"`
}

// Forget removes the selected turns from the conversation and everything
// derived from them (see the comment at the top of forget.go).
func (s *Store) Forget(ctx context.Context, req ForgetRequest) (ForgetResult, error) {
	// opAppend: with shared logs, the conversation's lock is held from the
	// selection to the commit of the rewrite. A dry run changes nothing: a
	// read-only store answers it.
	kind := opAppend
	if req.DryRun {
		kind = opAppendRO
	}
	ctx, end, id, err := s.beginOn(ctx, kind, req.ConversationID)
	if err != nil {
		return ForgetResult{}, err
	}
	defer end()
	res := ForgetResult{ConversationID: id, TurnIDs: []string{}, DryRun: req.DryRun}
	req.Query = strings.TrimSpace(req.Query)
	req.Tag = strings.TrimSpace(req.Tag)
	if req.Query == "" && len(req.TurnIDs) == 0 && req.Tag == "" && req.Before.IsZero() {
		return res, fmt.Errorf("%w: forget needs at least one selector: query (an exact phrase), turn_ids, tag or before (when several are given, a turn must match all of them)", ErrInvalid)
	}
	ids := map[int]bool{}
	for _, tid := range req.TurnIDs {
		seq, err := parseTurnID(strings.TrimSpace(tid))
		if err != nil {
			return res, err
		}
		ids[seq] = true
	}
	c, err := s.conversation(ctx, id, false)
	if err != nil {
		return res, err
	}
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	c.mu.RLock()
	seqs, err := s.selectForget(c, req, ids)
	c.mu.RUnlock()
	if err != nil {
		return res, err
	}
	for _, seq := range seqs {
		res.TurnIDs = append(res.TurnIDs, turnID(seq))
	}
	res.Forgotten = len(seqs)
	if req.DryRun || len(seqs) == 0 {
		return res, nil
	}
	edits := make(map[int]*masterlog.Record, len(seqs))
	for _, seq := range seqs {
		edits[seq] = nil
	}
	reason := req.Reason
	if reason == "" {
		reason = "forget"
	}
	out, err := s.rewriteTurns(ctx, c, edits, reason, nil)
	if err != nil {
		return res, err
	}
	res.SummariesRemade, res.DroppedTags = out.remade, out.dropped
	if err := s.commitShared(ctx); err != nil {
		return res, err
	}
	s.log.Info("forgot turns", "conversation", id, "turns", len(seqs), "reason", reason, "summaries_remade", out.remade)
	return res, nil
}

// selectForget lists, ascending, the turns req selects. c.mu is held.
func (s *Store) selectForget(c *conv, req ForgetRequest, ids map[int]bool) ([]int, error) {
	for seq := range ids {
		if seq > len(c.turns) {
			return nil, fmt.Errorf("%w: turn %s does not exist: conversation %q has %d turns", ErrNotFound, turnID(seq), c.id, len(c.turns))
		}
	}
	tag := ""
	if req.Tag != "" {
		name, err := c.findTag(req.Tag)
		if err != nil {
			if alias, ok := c.meta.Aliases[req.Tag]; ok {
				name, err = alias, nil
			}
		}
		if err != nil {
			return nil, err
		}
		tag = name
	}
	phrase := strings.ToLower(req.Query)
	var out []int
	for i := range c.turns {
		t := &c.turns[i]
		if t.Damaged || t.Forgotten {
			continue
		}
		if len(ids) > 0 && !ids[t.Seq] {
			continue
		}
		if t.Empty && len(ids) == 0 {
			continue
		}
		if tag != "" && !contains(t.Tags, tag) {
			continue
		}
		if !req.Before.IsZero() && !t.When.Before(req.Before) {
			continue
		}
		if phrase != "" {
			if t.Empty {
				continue
			}
			rec, err := c.log.Read(t.Start, t.End)
			if err != nil {
				if errors.Is(err, masterlog.ErrDamaged) {
					continue
				}
				return nil, err
			}
			if !strings.Contains(strings.ToLower(rec.Content), phrase) && !bytes.Contains(bytes.ToLower(rec.Raw), []byte(phrase)) {
				continue
			}
		}
		out = append(out, t.Seq)
	}
	return out, nil
}

// rewriteOutcome is what a rewrite changed.
type rewriteOutcome struct {
	remade  int
	dropped []string
}

// rewriteTurns replaces the master log records of the turns in edits: a
// nil edit forgets the turn (a placeholder without text), any other
// replaces its content (same sequence number; a redaction). Everything
// derived from those turns follows (see the top of this file), in three
// steps: what the edits touch (planRewrite, under the readers' lock), the
// summaries made again (resummarise, no lock held), then the logs
// rewritten and the state rebuilt (commitRewrite, under the writers'
// lock). drop names topics to take off every turn (a redaction's: those
// made of a secret), which then vanish as those of forgotten turns do.
// c.compactMu is held; c.mu is not.
func (s *Store) rewriteTurns(ctx context.Context, c *conv, edits map[int]*masterlog.Record, reason string, drop map[string]bool) (rewriteOutcome, error) {
	p, err := s.planRewrite(c, edits, drop)
	if err != nil {
		return rewriteOutcome{}, err
	}
	if err := s.resummarise(ctx, c, &p); err != nil {
		return rewriteOutcome{}, err
	}
	if err := s.commitRewrite(ctx, c, edits, reason, &p); err != nil {
		return rewriteOutcome{}, err
	}
	return rewriteOutcome{remade: len(p.fresh) + len(p.rollups), dropped: p.dropped}, nil
}

// rewritePlan is what a rewrite's edits touch, and then the summaries it
// makes again.
type rewritePlan struct {
	// all are the conversation's segments as they will be: copies, the
	// affected ones remade.
	all          []*segmentRec
	affectedSegs map[int]bool
	affectedTags map[string]bool
	// plans are the affected segments with turns left, to summarise
	// again; emptied are those with none.
	plans   []segmentPlan
	emptied []*segmentRec
	// gone are the topics only edited turns carried; hadRollup the topics
	// with a topic summary.
	gone, hadRollup map[string]bool
	// fresh are the remade segments, rollups the remade topic summaries,
	// dropped the topics nothing is left of (set by resummarise).
	fresh   []*segmentRec
	rollups []*tagSummaryRec
	dropped []string
}

// planRewrite lists what the edits touch: the segments and topics whose
// summaries hold text of edited turns, with the text they keep. The topics
// in drop are taken off every segment and count as gone.
func (s *Store) planRewrite(c *conv, edits map[int]*masterlog.Record, drop map[string]bool) (rewritePlan, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p := rewritePlan{all: make([]*segmentRec, len(c.segs)), affectedSegs: map[int]bool{}, affectedTags: map[string]bool{}, hadRollup: map[string]bool{}}
	for i, sg := range c.segs {
		cp := *sg
		if len(drop) > 0 {
			cp.Tags = slices.DeleteFunc(slices.Clone(cp.Tags), func(t string) bool { return drop[t] })
			if drop[cp.Primary] {
				cp.Primary = ""
				if len(cp.Tags) > 0 {
					cp.Primary = cp.Tags[0]
				}
			}
		}
		p.all[i] = &cp
		hit := false
		for seq := sg.First; seq <= sg.Last && !hit; seq++ {
			_, hit = edits[seq]
		}
		if !hit {
			continue
		}
		p.affectedSegs[sg.ID] = true
		for _, t := range sg.Tags {
			p.affectedTags[t] = true
		}
		sp := segmentPlan{rec: cp}
		sp.rec.FullTokens = 0
		var kept []string
		for seq := sg.First; seq <= sg.Last; seq++ {
			t := c.turn(seq)
			edit, edited := edits[seq]
			if t == nil || t.Empty || edited && edit == nil {
				continue
			}
			text, speaker := "", t.Name
			if edited {
				text, speaker = edit.Content, edit.Name
			} else {
				rec, err := c.log.Read(t.Start, t.End)
				if err != nil {
					return p, err
				}
				text = rec.Content
			}
			sp.rec.FullTokens += s.tok.Count(text)
			kept = mergeTags(kept, slices.DeleteFunc(slices.Clone(t.Tags), func(t string) bool { return drop[t] }))
			sp.turns = append(sp.turns, summarize.Turn{ID: turnID(seq), Role: t.Role, Speaker: speaker, Time: t.When, Text: text})
		}
		var tags []string
		for _, t := range sg.Tags {
			if contains(kept, t) {
				tags = append(tags, t)
			}
		}
		sp.rec.Tags = tags
		if !contains(tags, sp.rec.Primary) {
			sp.rec.Primary = ""
			if len(tags) > 0 {
				sp.rec.Primary = tags[0]
			}
		}
		if len(sp.turns) == 0 {
			sp.rec.Summary, sp.rec.SummaryTokens, sp.rec.Entities, sp.rec.Decisions = "", 0, nil, nil
			sp.rec.Tags, sp.rec.Primary, sp.rec.CreatedAt = nil, "", s.now().UTC()
			e := sp.rec
			p.emptied = append(p.emptied, &e)
			p.all[i] = &e
			continue
		}
		p.plans = append(p.plans, sp)
	}
	// Topics carried only by forgotten turns vanish, names included; so
	// do those dropped.
	p.gone = c.goneTopics(edits)
	for t := range drop {
		if c.vocab[t] > 0 {
			p.gone[t], p.affectedTags[t] = true, true
		}
	}
	for tag, r := range c.tagSums {
		for _, id := range r.Segments {
			if p.affectedSegs[id] {
				p.affectedTags[tag] = true
			}
		}
		p.hadRollup[tag] = true
	}
	return p, nil
}

// resummarise makes the affected segments' and topics' summaries again,
// with no lock held (a model may take its time).
func (s *Store) resummarise(ctx context.Context, c *conv, p *rewritePlan) error {
	if err := s.summariseSegments(ctx, c.id, p.plans, func(string) {}); err != nil {
		return err
	}
	p.fresh = slices.Clone(p.emptied)
	for i := range p.plans {
		p.fresh = append(p.fresh, &p.plans[i].rec)
		p.all[p.plans[i].rec.ID-1] = &p.plans[i].rec
	}
	sort.Slice(p.fresh, func(i, j int) bool { return p.fresh[i].ID < p.fresh[j].ID })
	carried := map[string]int{}
	for _, sg := range p.all {
		for _, t := range sg.Tags {
			carried[t]++
		}
	}
	var candidates []string
	for t := range p.affectedTags {
		candidates = append(candidates, t)
	}
	sort.Strings(candidates)
	var keep []string
	for _, t := range earnedTags(candidates, p.all, func(t string) bool { return p.hadRollup[t] }) {
		if carried[t] > 0 {
			keep = append(keep, t)
		}
	}
	for _, t := range candidates {
		if p.hadRollup[t] && !contains(keep, t) {
			p.dropped = append(p.dropped, t)
		}
	}
	var err error
	p.rollups, err = s.rollup(ctx, c.id, keep, fullRollups(keep, p.all), func(string) {})
	return err
}

// commitRewrite rewrites the logs and rebuilds the derived state, holding
// the writers' lock; readers wait only for the rebuilt state to be put in
// place (rewriteLock).
func (s *Store) commitRewrite(ctx context.Context, c *conv, edits map[int]*masterlog.Record, reason string, p *rewritePlan) error {
	rl, unlock := lockRewrite(c)
	defer unlock()
	if size, err := c.log.Size(); err != nil || size != c.meta.LogSize {
		rl.lock()
		err := s.reconcileLog(ctx, c)
		rl.unlock()
		if err != nil {
			return s.storageError(err, "nothing was forgotten")
		}
	}
	tomb := &forgetRec{Reason: reason, Dropped: p.dropped}
	var oldTexts []string // what the turns' vectors were computed from
	recs := make(map[int]masterlog.Record, len(edits))
	seqs := make([]int, 0, len(edits))
	for seq := range edits {
		seqs = append(seqs, seq)
	}
	sort.Ints(seqs)
	for _, seq := range seqs {
		t := c.turn(seq)
		if t == nil || t.Damaged {
			return fmt.Errorf("%w: turn %s of %q cannot be rewritten (missing or damaged)", ErrInvalid, turnID(seq), c.id)
		}
		old, err := c.log.Read(t.Start, t.End)
		if err != nil {
			return err
		}
		// What the vector was computed from: the text after the speaker's
		// name (embedText), or the text alone (vector format 1).
		oldTexts = append(oldTexts, clip(embedText(old.Name, old.Content), embedMaxChars))
		if old.Name != "" {
			oldTexts = append(oldTexts, clip(old.Content, embedMaxChars))
		}
		if edit := edits[seq]; edit != nil {
			rec := *edit
			rec.Seq, rec.At = seq, old.At
			recs[seq] = rec
			tomb.Redacted = append(tomb.Redacted, forgotTurn{Seq: seq, Hash: old.Hash})
			continue
		}
		recs[seq] = masterlog.Record{Seq: seq, ID: old.ID, Role: old.Role, Name: old.Name, Timestamp: old.Timestamp,
			At: old.At, Hash: old.Hash, ToolUse: old.ToolUse, ToolResult: old.ToolResult, Forgotten: true}
		tomb.Turns = append(tomb.Turns, forgotTurn{Seq: seq, Hash: old.Hash})
	}
	dec := decision{Kind: decForget, Forget: tomb, Segments: make([]segmentRec, len(p.fresh)), TagSums: make([]tagSummaryRec, len(p.rollups))}
	for i, r := range p.fresh {
		dec.Segments[i] = *r
	}
	for i, r := range p.rollups {
		dec.TagSums[i] = *r
	}
	// With shared logs, the commit replaces them with the rewritten files.
	if err := s.markRewrite(ctx, c.id); err != nil {
		return err
	}
	// The tombstone goes first: should the process die between the two
	// renames, the same forget run again finds the turns and finishes.
	if err := s.rewriteDecisions(c, edits, scrubSet{segs: p.affectedSegs, tags: p.affectedTags, gone: p.gone}, dec); err != nil {
		return s.storageError(err, "nothing was forgotten")
	}
	nlog, err := s.rewriteMasterLog(c, recs, rl)
	if err != nil {
		return s.storageError(err, "the summaries were rewritten but the turns were not; run the same forget again")
	}
	if err := s.afterRewrite(ctx, c, nlog, rl, edits, seqs, p.affectedTags, p.gone); err != nil {
		return err
	}
	if vf, ok := s.opts.Embedder.(VectorForgetter); ok {
		if err := vf.ForgetVectors(ctx, oldTexts); err != nil {
			s.log.Warn("dropping the vectors of rewritten turns from the embedder's cache failed", "conversation", c.id, "err", err)
		}
	}
	return nil
}

// VectorForgetter is optionally implemented by an Embedder that keeps the
// vectors it computes (pgstore's shared cache): forget and redaction drop
// the vectors of the texts they remove.
type VectorForgetter interface {
	ForgetVectors(ctx context.Context, texts []string) error
}

// rewriteLock is how a rewrite of a conversation's logs (forget,
// redaction) holds it: the writers' lock throughout, the readers' lock
// only to put the rebuilt state in place. Until then recall, find_quote
// and status go on with the state as it was, reading the turns from the
// old log's file, which stays open (and readable) after the new one is
// renamed over it. Where an open file cannot be replaced (Windows), or
// when the caller holds both locks already, whole is set: the readers'
// lock is held throughout and lock and unlock do nothing.
type rewriteLock struct {
	c     *conv
	whole bool
}

// lockRewrite takes c's locks for a rewrite of its logs: the writers'
// lock, and the readers' lock too where an open file cannot be replaced.
// The caller defers unlock.
func lockRewrite(c *conv) (rl rewriteLock, unlock func()) {
	c.wmu.Lock()
	rl = rewriteLock{c: c, whole: !replaceOpenFiles}
	if rl.whole {
		c.mu.Lock()
		return rl, func() { c.mu.Unlock(); c.wmu.Unlock() }
	}
	return rl, c.wmu.Unlock
}

func (l rewriteLock) lock() {
	if !l.whole {
		l.c.mu.Lock()
	}
}

func (l rewriteLock) unlock() {
	if !l.whole {
		l.c.mu.Unlock()
	}
}

// rewriteHook, when set (tests only), runs once a rewrite's new logs are
// in place and its state rebuilt, before that state replaces the old one.
var rewriteHook func()

// replaceOpenFiles: a file may be renamed over while open, the open
// handle reading on the old file.
const replaceOpenFiles = runtime.GOOS != "windows"

// rewrittenLog is a conversation's master log after a rewrite: the new
// file's log and its size.
type rewrittenLog struct {
	log  *masterlog.Log
	size int64
}

// afterRewrite rebuilds c's derived state from its rewritten logs (nlog:
// the new master log; edits: the turns rewritten, seqs their numbers
// ascending; nil edits are forgotten turns), puts it in place, removes
// from the index what nothing regenerates, and tells subscribers.
// c.compactMu and c.wmu are held, and c.mu as rl says.
func (s *Store) afterRewrite(ctx context.Context, c *conv, nlog rewrittenLog, rl rewriteLock, edits map[int]*masterlog.Record, seqs []int, affectedTags, gone map[string]bool) error {
	oldTags := make(map[string]bool, len(c.vocab))
	for t := range c.vocab {
		oldTags[t] = true
	}
	oldSums := make(map[string]bool, len(c.tagSums))
	for t := range c.tagSums {
		oldSums[t] = true
	}
	n, err := s.rebuildConv(ctx, c, nlog.log, edits)
	if err != nil {
		useLog(s, c, nlog, rl)
		return err
	}
	// Index documents nothing regenerates: forgotten turns, dropped topics,
	// emptied segments.
	var goneDocs []string
	for _, seq := range seqs {
		if edits[seq] == nil {
			goneDocs = append(goneDocs, turnDocID(c.id, seq))
		}
	}
	for t := range oldSums {
		if _, ok := n.tagSums[t]; !ok {
			goneDocs = append(goneDocs, tagDocID(c.id, t))
		}
	}
	for _, sg := range n.segs {
		if sg.Summary == "" {
			goneDocs = append(goneDocs, segmentDocID(c.id, sg.ID))
		}
	}
	if err := s.ix.Delete(ctx, goneDocs); err != nil {
		s.log.Warn("removing forgotten documents from the index failed", "conversation", c.id, "err", err)
	}
	if err := s.indexTurns(ctx, n, n.meta.IndexedThrough+1, len(n.turns), heldBoth); err != nil {
		s.log.Warn("re-indexing a rewritten conversation failed; the reconciler retries", "conversation", c.id, "err", err)
		s.kickReconciler()
	} else if err := s.indexSummaries(ctx, n); err != nil {
		s.log.Warn("re-indexing summaries failed; the reconciler retries", "conversation", c.id, "err", err)
		s.kickReconciler()
	}
	if rewriteHook != nil {
		rewriteHook()
	}
	rl.lock()
	old := c.log
	c.adopt(n)
	c.rewrites++ // the embedder drops vectors it made from the old texts
	c.tagVecs = nil
	s.logRewrites.Add(1) // before the scrub: see appendRequest
	rl.unlock()
	releaseOld(s, c, old)
	forgot := map[string]bool{}
	for _, seq := range seqs {
		if edits[seq] == nil {
			forgot[turnID(seq)] = true
		}
	}
	if err := s.scrubRequests(c.id, gone, forgot); err != nil {
		s.log.Warn("removing forgotten turns from the request history failed", "conversation", c.id, "err", err)
	}
	s.purgeAtClose.Store(true)
	go s.purgeIndex()
	ch := Change{Kind: ChangeForgotten, ConversationID: c.id}
	for _, seq := range seqs {
		ch.TurnIDs = append(ch.TurnIDs, turnID(seq))
	}
	ch.Tags = slices.Sorted(func(yield func(string) bool) {
		for t := range affectedTags {
			if !yield(t) {
				return
			}
		}
	})
	for t := range oldTags {
		if c.vocab[t] == 0 {
			ch.GoneTags = append(ch.GoneTags, t)
			ch.Tags = union(ch.Tags, []string{t})
		}
	}
	sort.Strings(ch.GoneTags)
	s.publish(ch)
	s.kickEmbedder()
	return nil
}

// useLog puts a rewritten log under c's state as it was, when the state
// could not be rebuilt from it (as a store opening them would find them):
// readers and writers stop using the old file.
func useLog(s *Store, c *conv, nlog rewrittenLog, rl rewriteLock) {
	rl.lock()
	old := c.log
	c.log, c.meta.LogSize = nlog.log, nlog.size
	rl.unlock()
	releaseOld(s, c, old)
}

// releaseOld closes a master log replaced by a rewrite, once the reads in
// flight on it are done.
func releaseOld(s *Store, c *conv, old *masterlog.Log) {
	if old == c.log {
		return
	}
	if err := old.Release(); err != nil {
		s.log.Warn("closing the replaced master log failed", "conversation", c.id, "err", err)
	}
}

// rewriteMasterLog replaces the records of recs (by sequence number) in the
// committed part of c's master log, keeping every other byte (damaged
// stretches included), and swaps the new file in atomically. With rl.whole
// the log is replaced in place; otherwise c.log keeps the old file open
// for readers and the new one is returned.
func (s *Store) rewriteMasterLog(c *conv, recs map[int]masterlog.Record, rl rewriteLock) (rewrittenLog, error) {
	f, err := os.Open(c.log.Path())
	if err != nil {
		return rewrittenLog{}, fmt.Errorf("open master log: %w", err)
	}
	data := make([]byte, c.meta.LogSize)
	_, err = f.ReadAt(data, 0)
	_ = f.Close()
	if err != nil {
		return rewrittenLog{}, fmt.Errorf("read master log %s: %w", c.log.Path(), err)
	}
	type repl struct {
		start, end int64
		line       []byte
	}
	var repls []repl
	done := map[int]bool{}
	if _, err := masterlog.Scan(bytes.NewReader(data), 0, func(fr masterlog.Frame) error {
		r, ok := recs[fr.Seq]
		if !ok || done[fr.Seq] {
			return nil
		}
		done[fr.Seq] = true
		line, err := masterlog.Encode(r)
		if err != nil {
			return err
		}
		repls = append(repls, repl{fr.Start, fr.End, line})
		return nil
	}, nil); err != nil {
		return rewrittenLog{}, err
	}
	if len(done) != len(recs) {
		return rewrittenLog{}, fmt.Errorf("master log %s: %d of %d records to rewrite not found", c.log.Path(), len(recs)-len(done), len(recs))
	}
	var buf bytes.Buffer
	buf.Grow(len(data))
	off := int64(0)
	for _, r := range repls {
		buf.Write(data[off:r.start])
		buf.Write(r.line)
		off = r.end
	}
	buf.Write(data[off:])
	size := int64(buf.Len())
	if rl.whole {
		if err := c.log.Replace(buf.Bytes()); err != nil {
			return rewrittenLog{}, err
		}
		c.meta.LogSize = size
		return rewrittenLog{c.log, size}, nil
	}
	n, err := c.log.Successor(buf.Bytes())
	if err != nil {
		// The new file may be in place: nothing reads the old one on (the
		// next writer finds the size it did not commit and reconciles).
		return rewrittenLog{}, errors.Join(err, c.log.Release())
	}
	return rewrittenLog{n, size}, nil
}

// rewriteDecisions rewrites c's decisions log without anything drawn from
// the edited turns (their tags, the text of the affected segments' and
// topics' summaries), then appends the tombstone dec, atomically. c.mu is
// held for writing.
func (s *Store) rewriteDecisions(c *conv, edits map[int]*masterlog.Record, sc scrubSet, dec decision) error {
	if c.dlog != nil {
		if err := c.dlog.Close(); err != nil {
			return err
		}
		c.dlog = nil
	}
	ds, _, _, err := s.readDecisions(c.id, 0)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, d := range ds {
		scrubDecision(&d, edits, sc)
		if d.Kind == decTags && len(d.Turns) == 0 || d.Kind == decTurnSums && len(d.TurnSums) == 0 {
			continue
		}
		line, err := encodeDecision(d)
		if err != nil {
			return err
		}
		buf.Write(line)
	}
	dec.At = s.now().UTC()
	line, err := encodeDecision(dec)
	if err != nil {
		return err
	}
	buf.Write(line)
	path := s.decisionsPath(c.id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create decisions directory: %w", err)
	}
	if err := files.AtomicWrite(path, buf.Bytes()); err != nil {
		return err
	}
	return files.SyncDir(filepath.Dir(path))
}

// scrubSet is what a rewrite takes out of old decisions: the text of the
// summaries of segs and of tags, and every mention of the gone tags.
type scrubSet struct {
	segs       map[int]bool
	tags, gone map[string]bool
}

// scrubDecision removes from one decision what the edited turns gave it.
func scrubDecision(d *decision, edits map[int]*masterlog.Record, sc scrubSet) {
	segs, tags, gone := sc.segs, sc.tags, sc.gone
	keepTags := func(list []string) []string {
		out := list[:0:0]
		for _, t := range list {
			if !gone[t] {
				out = append(out, t)
			}
		}
		return out
	}
	if len(d.Turns) > 0 {
		kept := d.Turns[:0]
		for _, t := range d.Turns {
			if _, ok := edits[t.Seq]; !ok {
				// A gone topic can be carried on by a turn that is
				// kept (a redaction's topic made of a secret).
				t.Tags, t.Related = keepTags(t.Tags), keepTags(t.Related)
				kept = append(kept, t)
			}
		}
		d.Turns = kept
	}
	if len(d.TurnSums) > 0 {
		// A per-message summary was written with its neighbours in view:
		// the edited turns' own and their neighbours' go (they are remade
		// on demand from what is left).
		kept := d.TurnSums[:0]
		for _, ts := range d.TurnSums {
			_, self := edits[ts.Seq]
			_, prev := edits[ts.Seq-1]
			_, next := edits[ts.Seq+1]
			if !self && !prev && !next {
				kept = append(kept, ts)
			}
		}
		d.TurnSums = kept
	}
	for i := range d.Segments {
		sg := &d.Segments[i]
		if segs[sg.ID] {
			sg.Summary, sg.SummaryTokens, sg.Entities, sg.Decisions = "", 0, nil, nil
		}
		sg.Tags = keepTags(sg.Tags)
		if gone[sg.Primary] {
			sg.Primary = ""
			if len(sg.Tags) > 0 {
				sg.Primary = sg.Tags[0]
			}
		}
	}
	for i := range d.SegRefs {
		sr := &d.SegRefs[i]
		// Replay remakes a reference from what the summariser was given
		// (its primary topic and Tags[:In]); when a gone tag was among
		// them, that input is no longer on disk, and the summary is left
		// empty as for a segment in segs (the forget remakes those).
		in := sr.Tags[:min(max(sr.In, 0), len(sr.Tags))]
		if segs[sr.ID] || gone[sr.Primary] || len(keepTags(in)) != len(in) {
			sr.Cleared = true
		}
		kept := keepTags(in)
		sr.In = len(kept)
		sr.Tags = append(kept, keepTags(sr.Tags[len(in):])...)
		if gone[sr.Primary] {
			sr.Primary = ""
			if len(sr.Tags) > 0 {
				sr.Primary = sr.Tags[0]
			}
		}
	}
	sums := d.TagSums[:0]
	for _, ts := range d.TagSums {
		if gone[ts.Tag] {
			continue
		}
		if tags[ts.Tag] {
			ts.Summary, ts.Description, ts.Tokens = "", "", 0
		}
		sums = append(sums, ts)
	}
	d.TagSums = sums
	refs := d.TagRefs[:0]
	for _, r := range d.TagRefs {
		if gone[r.Tag] {
			continue
		}
		r.Cleared = r.Cleared || tags[r.Tag]
		refs = append(refs, r)
	}
	d.TagRefs = refs
	if d.Working != nil {
		w := d.Working[:0]
		for _, e := range d.Working {
			if !gone[e.Tag] {
				w = append(w, e)
			}
		}
		d.Working = w
		if len(w) == 0 {
			d.Working = []WorkingEntry{} // still "the working set is empty"
		}
	}
	if d.Kind == decAliases {
		for k, v := range d.Aliases {
			if gone[k] || gone[v] {
				delete(d.Aliases, k)
			}
		}
	}
	if sp := d.Split; sp != nil {
		for seq, list := range sp.Turns {
			if _, ok := edits[seq]; ok {
				delete(sp.Turns, seq)
				continue
			}
			sp.Turns[seq] = keepTags(list)
		}
		for k, v := range sp.Aliases {
			if gone[k] || gone[v] {
				delete(sp.Aliases, k)
			}
		}
		if gone[sp.Tag] {
			d.Split = nil
		}
	}
}

// rebuildConv rebuilds c's derived state from its rewritten logs (log is
// the new master log), as Rebuild would: the conversation's bbolt entries
// are replaced (vectors of unchanged turns kept), the logs replayed into a
// new conv, which it returns. c.wmu is held; c itself is not changed, and
// readers do not read its bbolt entries (a loaded conversation is read
// from memory).
func (s *Store) rebuildConv(ctx context.Context, c *conv, log *masterlog.Log, edits map[int]*masterlog.Record) (*conv, error) {
	err := s.db.Update(func(tx *bolt.Tx) error {
		name := convBucketName(c.id)
		var keep [][2][]byte
		if b := tx.Bucket(name); b != nil {
			if vb := b.Bucket(bucketVectors); vb != nil {
				if err := vb.ForEach(func(k, v []byte) error {
					if len(k) == 8 {
						if _, edited := edits[int(binary.BigEndian.Uint64(k))]; edited {
							return nil
						}
					}
					keep = append(keep, [2][]byte{slices.Clone(k), slices.Clone(v)})
					return nil
				}); err != nil {
					return err
				}
			}
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketConvs).Delete([]byte(c.id)); err != nil {
			return err
		}
		b, err := convBucket(tx, c.id)
		if err != nil {
			return err
		}
		vb := b.Bucket(bucketVectors)
		for _, kv := range keep {
			if err := vb.Put(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.storageError(fmt.Errorf("reset derived state of %s: %w", c.id, err), "the logs are rewritten; the store rebuilds the rest when it next opens")
	}
	var n *conv
	if err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = loadConv(tx, c.id)
		return err
	}); err != nil {
		return nil, err
	}
	n.log = log
	n.meta.Created = c.meta.Created
	if n.replay, err = s.loadReplay(n); err != nil {
		return nil, err
	}
	defer func() { n.replay = nil }()
	if err := s.reconcileLog(ctx, n); err != nil {
		return nil, err
	}
	if err := s.applyReplay(ctx, n); err != nil {
		return nil, err
	}
	if n.dlog == nil {
		if n.dlog, err = decisionlog.Open(s.decisionsPath(c.id)); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// adopt takes over n's state: a rebuilt copy of c (a rewrite) or a fork
// of it that a writer changed. c.mu is held for writing.
func (c *conv) adopt(n *conv) {
	c.log, c.dlog, c.replay, c.meta = n.log, n.dlog, nil, n.meta
	c.turns, c.lite, c.lineToks, c.ids, c.hashes, c.forgotten = n.turns, n.lite, n.lineToks, n.ids, n.hashes, n.forgotten
	c.vocab, c.tagSeqs, c.relatedBy = n.vocab, n.tagSeqs, n.relatedBy
	c.segs, c.tagSums, c.working, c.speakers, c.rules = n.segs, n.tagSums, n.working, n.speakers, n.rules
	c.turnSums = n.turnSums
	c.tagWords, c.wordTags = n.tagWords, n.wordTags
	c.vecs, c.vecFailed, c.tagVecs = n.vecs, n.vecFailed, n.tagVecs
	c.speakerNames, c.speakerIdx, c.speakerToks = n.speakerNames, n.speakerIdx, n.speakerToks
	c.tokens, c.damaged, c.active = n.tokens, n.damaged, n.active
}

// purgeIndex force-merges the full-text index so that deleted documents
// leave its files (best effort; runs after a forget).
func (s *Store) purgeIndex() {
	p, ok := s.ix.(interface{ Purge(context.Context) error })
	if !ok || !s.purging.CompareAndSwap(false, true) {
		return
	}
	defer s.purging.Store(false)
	if err := p.Purge(context.Background()); err != nil && !s.closed.Load() {
		s.log.Warn("merging the index after forget failed; forgotten text leaves its files when the store closes", "err", err)
	}
}

// scrubRequests takes conversation id's gone topics and forgotten turns
// out of the request histories (requests/*.jsonl.gz), rewriting each that
// names one atomically: id's own, and any other whose recalls over every
// conversation (scope all) named them as "<id>/t12" (the histories with a
// scope-all marker).
func (s *Store) scrubRequests(id string, gone, forgot map[string]bool) error {
	if len(gone) == 0 && len(forgot) == 0 {
		return nil
	}
	errs := []error{s.scrubHistory(id, id, gone, forgot)}
	others, err := s.scopeAllHistories()
	errs = append(errs, err)
	for _, o := range others {
		if o != id {
			errs = append(errs, s.scrubHistory(o, id, gone, forgot))
		}
	}
	return errors.Join(errs...)
}

// scrubHistory takes conversation of's gone topics and forgotten turns out
// of hist's request history. In of's own history a turn is named "t12"
// (or "<of>/t12" by a recall over every conversation); in another's only
// by the latter, and only those histories are decoded.
func (s *Store) scrubHistory(hist, of string, gone, forgot map[string]bool) error {
	own := hist == of
	prefix := of + "/"
	var needles [][]byte
	if !own {
		// Turns are named "<of>/t12"; summaries by "conversation_id";
		// matched tags unqualified, as JSON strings.
		enc, err := json.Marshal(prefix)
		if err != nil {
			return fmt.Errorf("scrub request history: %w", err)
		}
		needles = [][]byte{enc[1 : len(enc)-1]}
		for tag := range gone {
			q, err := json.Marshal(tag)
			if err != nil {
				return fmt.Errorf("scrub request history: %w", err)
			}
			needles = append(needles, q)
		}
	}
	return s.requestLog(hist).Update(func(lines [][]byte) ([][]byte, bool, error) {
		if !own && !slices.ContainsFunc(lines, func(line []byte) bool {
			return slices.ContainsFunc(needles, func(n []byte) bool { return bytes.Contains(line, n) })
		}) {
			return nil, false, nil // names nothing of conversation of: nothing decoded
		}
		recs := decodeRequests(lines)
		if !scrubRecords(recs, own, of, gone, forgot) {
			return nil, false, nil
		}
		out := make([][]byte, 0, len(recs))
		for i := range recs {
			line, err := json.Marshal(&recs[i])
			if err != nil {
				return nil, false, fmt.Errorf("scrub request history: %w", err)
			}
			out = append(out, line)
		}
		return out, true, nil
	})
}

// scrubRecords takes conversation of's gone topics and forgotten turns
// out of recs, in place, and says whether it changed any; own says recs
// are of's own history (see scrubHistory).
func scrubRecords(recs []RequestRecord, own bool, of string, gone, forgot map[string]bool) bool {
	prefix := of + "/"
	// named says whether v names one of set's turns or topics of of.
	named := func(v string, set map[string]bool) bool {
		if own && set[v] && !strings.Contains(v, "/") {
			return true
		}
		rest, ok := strings.CutPrefix(v, prefix)
		return ok && set[rest]
	}
	changed := false
	drop := func(list []string, out map[string]bool) []string {
		kept := list[:0:0]
		for _, v := range list {
			if named(v, out) {
				changed = true
				continue
			}
			kept = append(kept, v)
		}
		return kept
	}
	for i := range recs {
		m := &recs[i].Memory
		if own || recs[i].Scope == ScopeAll {
			// A recall over every conversation matched tags of all of
			// them, unqualified: a topic gone from of is taken out.
			for _, tag := range m.MatchedTags {
				if gone[tag] {
					changed = true
				}
			}
			m.MatchedTags = slices.DeleteFunc(m.MatchedTags, func(tag string) bool { return gone[tag] })
		}
		m.TurnIDs = drop(m.TurnIDs, forgot)
		// A summary's inclusion names it unqualified ("s3", a tag, "t12"
		// for a message summary): its conversation is in Summaries.
		type sumKey struct{ kind, id string }
		ofSums := map[sumKey]bool{}
		sums := m.Summaries[:0:0]
		for _, r := range m.Summaries {
			if r.ConversationID == of || own && r.ConversationID == "" {
				ofSums[sumKey{r.Kind, r.ID}] = true
				if r.Kind == "message" && forgot[r.ID] {
					changed = true
					continue
				}
				if gone[r.Tag] {
					changed = true
					if r.Kind == "tag" {
						continue
					}
					r.Tag = ""
				}
			}
			sums = append(sums, r)
		}
		m.Summaries = sums
		inc := m.Included[:0:0]
		for _, r := range m.Included {
			ours := strings.HasPrefix(r.ID, prefix)
			switch r.Kind {
			case "tag", "segment", "message":
				ours = ofSums[sumKey{r.Kind, r.ID}]
			default:
				ours = ours || own && !strings.Contains(r.ID, "/")
			}
			if ours && (r.Kind == "tag" && gone[r.ID] || r.Kind == "message" && forgot[r.ID]) ||
				r.Kind != "tag" && r.Kind != "segment" && r.Kind != "message" && (named(r.ID, forgot) || named(r.ID, gone)) {
				changed = true
				continue
			}
			if ours && gone[r.Tag] {
				changed = true
				r.Tag = ""
			}
			inc = append(inc, r)
		}
		m.Included = inc
	}
	return changed
}

// goneTopics returns the topics of c that only forgotten turns carry (a
// nil edit is a forgotten turn): they vanish with them, names included.
func (c *conv) goneTopics(edits map[int]*masterlog.Record) map[string]bool {
	gone := map[string]bool{}
	for tag, list := range c.tagSeqs {
		all := len(list) > 0
		for _, seq := range list {
			if edit, ok := edits[seq]; !ok || edit != nil {
				all = false
				break
			}
		}
		if all {
			gone[tag] = true
		}
	}
	return gone
}
