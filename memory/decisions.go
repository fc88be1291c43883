package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/decisionlog"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
	bolt "go.etcd.io/bbolt"
)

// The derived-decisions log: one append-only file per conversation beside
// its master log (decisions/<id>.log) recording every decision the store
// made about the master log that cannot be remade for free: the tagger's
// tags for each turn, compaction boundaries with their segment and tag
// summaries (method and version included), summary regenerations, tag
// splits with their aliases, working-set changes, and per-message
// summaries (made, or cleared). Segment and topic summaries the
// extractive summariser made are recorded by reference (segmentref.go,
// rollupref.go) and made again on replay; those a model made are recorded
// in full. The master logs plus
// these logs are the durable inputs: vc.db and index.bleve are a function of
// them, and Rebuild replays both without calling a tagger, summariser or
// splitter.
//
// The file, its framing (one checksummed line per record) and how a
// damaged or torn line is read are package decisionlog's; here each
// record's body is a decision as JSON, and a line whose checksum holds but
// whose body does not decode as a decision with a kind is skipped and
// reported like a damaged one.
//
// Durability: compaction, regeneration, split and working-set decisions are
// fsync'd before the bbolt transaction that applies them commits. Tag
// decisions are written (not fsync'd) with the turns' commit and reach the
// disk with the next fsync'd decision or the next sync: a process crash
// loses none, a power loss may lose the newest few, and replay then tags
// those turns again with the configured tagger.

const (
	decisionsDir = "decisions"
	decisionsExt = ".log"
)

// Decision kinds.
const (
	decTags      = "tags"      // tags of newly stored turns
	decCompact   = "compact"   // a compaction: new segments, rollups, boundary
	decSummaries = "summaries" // regenerated summaries (boundaries unchanged)
	decSplit     = "split"     // a tag split: changed turn tags, aliases
	decWorking   = "working"   // the working set after expand/collapse
	decAliases   = "aliases"   // the conversation's aliases after a user added one
	decItems     = "context"   // the conversation's context-item selection after a change
	// decTurnSums holds per-message summaries (seed 003); decTurnSumsClear
	// removes every per-message summary of the conversation.
	decTurnSums      = "turn_summaries"
	decTurnSumsClear = "turn_summaries_clear"
	decForget        = "forget" // a tombstone: turns forgotten or redacted, summaries remade
)

// decision is one record of the derived-decisions log.
type decision struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`

	// decTags. Vocab holds the tags used more than once in the record,
	// each written once: a turn names them by their index (see tagvocab.go);
	// decoding puts the strings back, so Vocab is empty in memory.
	Vocab []string   `json:"vocab,omitempty"`
	Turns []turnTags `json:"turns,omitempty"`

	// decCompact, decSummaries
	Through  int             `json:"through,omitempty"`
	Segments []segmentRec    `json:"segments,omitempty"`
	TagSums  []tagSummaryRec `json:"tag_summaries,omitempty"`
	// decCompact: extractive rollups recorded by reference (rollupref.go),
	// applied after TagSums (no tag is in both).
	TagRefs []rollupRef `json:"tag_refs,omitempty"`
	// decCompact: extractive segments recorded by reference
	// (segmentref.go); with Segments, the compaction's segments in id
	// order.
	SegRefs []segmentRef `json:"segment_refs,omitempty"`

	// decSplit
	Split *splitRec `json:"split,omitempty"`

	// decWorking: the whole working set after the change.
	Working []WorkingEntry `json:"working,omitempty"`

	// decAliases: every alias after the change.
	Aliases map[string]string `json:"aliases,omitempty"`
	// decItems: the whole selection after the change.
	Items *itemSelection `json:"items,omitempty"`
	// decTurnSums
	TurnSums []turnSummaryRec `json:"turn_summaries,omitempty"`
	// decForget (with Segments and TagSums: the summaries remade without
	// the forgotten text).
	Forget *forgetRec `json:"forget,omitempty"`
	// decOwner (owner.go)
	Owner string `json:"owner,omitempty"`
}

// forgetRec is a tombstone: what Forget removed (or scan redacted) and
// why, never the text. Hashes are the removed messages' hashes, so that
// the same message resent or re-imported is not stored again.
type forgetRec struct {
	Reason   string       `json:"reason"`
	Turns    []forgotTurn `json:"turns,omitempty"`    // forgotten: placeholders now
	Redacted []forgotTurn `json:"redacted,omitempty"` // secrets replaced in place
	Dropped  []string     `json:"dropped_tags,omitempty"`
}

// forgotTurn names one turn of a tombstone: its sequence number and the
// hash of the message as it was stored before.
type forgotTurn struct {
	Seq  int    `json:"seq"`
	Hash string `json:"hash"`
}

// turnTags is the tagger's verdict on one stored turn. Hash ties it to the
// master log record it was made for: the first tagHashLen hex digits of
// the record's hash (logs written before this hold all 64; both match).
type turnTags struct {
	Seq     int      `json:"seq"`
	Hash    string   `json:"hash"`
	Tags    []string `json:"tags,omitempty"`
	Related []string `json:"related,omitempty"`
	Rule    bool     `json:"rule,omitempty"`
}

// A tags decision holds one turnTags per stored turn (a tenth of a long
// conversation's decisions log), so each is written as a JSON array rather
// than an object, its member names being a third of it:
//
//	[seq, "hash", ["tag", ...], ["related", ...], true]
//
// related and the final rule flag are left out when empty or false (an
// empty related list stands in when only rule is set). Logs written before
// hold objects ({"seq":1,"hash":"…","tags":[…],"related":[…],"rule":true});
// both decode.
func (t turnTags) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 64)
	out = strconv.AppendInt(append(out, '['), int64(t.Seq), 10)
	hash, err := json.Marshal(t.Hash)
	if err != nil {
		return nil, err
	}
	out = append(append(out, ','), hash...)
	out = appendTagList(append(out, ','), t.Tags)
	if len(t.Related) > 0 || t.Rule {
		out = appendTagList(append(out, ','), t.Related)
	}
	if t.Rule {
		out = append(out, ",true"...)
	}
	return append(out, ']'), nil
}

// UnmarshalJSON reads either form (see MarshalJSON).
func (t *turnTags) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		type object turnTags // without these methods
		var o object
		if err := json.Unmarshal(data, &o); err != nil {
			return err
		}
		*t = turnTags(o)
		return nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(data, &parts); err != nil {
		return err
	}
	if len(parts) < 3 || len(parts) > 5 {
		return fmt.Errorf("a turn's tags: %d members, want 3 to 5", len(parts))
	}
	*t = turnTags{}
	dst := []any{&t.Seq, &t.Hash, &t.Tags, &t.Related, &t.Rule}
	for i, p := range parts {
		var err error
		if i == 2 || i == 3 {
			*(dst[i].(*[]string)), err = parseTagList(p)
		} else {
			err = json.Unmarshal(p, dst[i])
		}
		if err != nil {
			return fmt.Errorf("a turn's tags, member %d: %w", i+1, err)
		}
	}
	if len(t.Tags) == 0 {
		t.Tags = nil
	}
	if len(t.Related) == 0 {
		t.Related = nil
	}
	return nil
}

// splitRec is an applied tag split.
type splitRec struct {
	Tag     string            `json:"tag"`
	Count   int               `json:"count"`             // the tag's turns when offered
	Turns   map[int][]string  `json:"turns,omitempty"`   // seq -> the turn's tags after the split
	Aliases map[string]string `json:"aliases,omitempty"` // the conversation's aliases after the split
}

// tagHashLen is how many hex digits of a turn's hash a tags decision
// records: 64 bits, enough to tell the record at one sequence number from
// another message stored there, at a quarter of the bytes (the tags
// decisions were a fifth of the decisions log).
const tagHashLen = 16

// shortHash is the prefix of a turn's hash that tags decisions record.
func shortHash(h string) string { return h[:min(len(h), tagHashLen)] }

// sameTurnHash reports whether recorded, a full hash or a prefix of at
// least tagHashLen digits, names the record whose hash is full.
func sameTurnHash(recorded, full string) bool {
	return len(recorded) >= min(tagHashLen, len(full)) && strings.HasPrefix(full, recorded)
}

func (s *Store) decisionsPath(id string) string {
	return convFile(s.opts.Dir, decisionsDir, id, decisionsExt)
}

// encodeDecision renders d as its decisions log line (decisionlog.Frame).
func encodeDecision(d decision) ([]byte, error) {
	body, err := marshalDecision(d)
	if err != nil {
		return nil, err
	}
	return decisionlog.Frame(body), nil
}

// marshalDecision is the body of d's line.
func marshalDecision(d decision) ([]byte, error) {
	body, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode decision: %w", err)
	}
	return body, nil
}

// scanResult is what a scan of a decisions log found.
type scanResult struct {
	end     int64   // offset after the last complete line
	skipped []int64 // offsets of complete lines that did not verify or decode
	torn    bool    // an unterminated last line follows end
}

// scanDecisions reads complete lines from r (positioned at byte base) and
// calls fn, when not nil, for each record that verifies and decodes, with
// the offset after it. The others are skipped.
func scanDecisions(r io.Reader, base int64, fn func(d decision, end int64) error) (scanResult, error) {
	var skipped []int64
	res, err := decisionlog.Scan(r, base, func(l decisionlog.Line) error {
		var d decision
		ok := l.OK
		if ok {
			d, ok = decodeDecisionBody(l.Body)
		}
		if !ok {
			skipped = append(skipped, l.Start)
			return nil
		}
		if fn != nil {
			return fn(d, l.End)
		}
		return nil
	})
	return scanResult{end: res.End, skipped: skipped, torn: res.Torn}, err
}

// decodeDecision verifies and decodes one line (without its newline).
func decodeDecision(line []byte) (decision, bool) {
	body, ok := decisionlog.Body(line)
	if !ok {
		return decision{}, false
	}
	return decodeDecisionBody(body)
}

// decodeDecisionBody decodes a verified line's body: a decision with a
// kind.
func decodeDecisionBody(body []byte) (decision, bool) {
	var d decision
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&d); err != nil || d.Kind == "" {
		return d, false
	}
	return d, true
}

// readDecisions returns the verified records of a conversation's decisions
// log after byte from, each with the offset after it, and the log's end. A
// missing log has none. Damaged records are skipped and logged.
func (s *Store) readDecisions(id string, from int64) ([]decision, []int64, int64, error) {
	path := s.decisionsPath(id)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("open decisions log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("stat decisions log: %w", err)
	}
	if from > st.Size() {
		// The store saw more than the file holds: unsynced tag decisions
		// lost to a power failure. Everything still here was applied.
		s.log.Warn("decisions log is shorter than the store recorded; the newest tag decisions were lost, those turns keep their stored tags", "conversation", id, "size", st.Size(), "recorded", from)
		return nil, nil, st.Size(), nil
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, nil, 0, fmt.Errorf("seek decisions log: %w", err)
	}
	var ds []decision
	var ends []int64
	res, err := scanDecisions(f, from, func(d decision, end int64) error {
		ds = append(ds, d)
		ends = append(ends, end)
		return nil
	})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("decisions log %s: %w", path, err)
	}
	for _, off := range res.skipped {
		s.log.Warn("damaged record in the decisions log skipped (left in place)", "conversation", id, "path", path, "offset", off)
	}
	if res.torn {
		s.log.Warn("decisions log ends in a torn record (never applied); it will be overwritten", "conversation", id, "offset", res.end)
	}
	return ds, ends, res.end, nil
}

// recordDecision appends d to the conversation's decisions log, opening it
// on first use, and returns the offset after it for convMeta.DecisionsSize.
// Every decision but tags is fsync'd before this returns. c's writer lock
// is held, which orders the records.
func (s *Store) recordDecision(c *conv, d decision) (int64, error) {
	if c.dlog == nil {
		l, err := decisionlog.Open(s.decisionsPath(c.id))
		if err != nil {
			return 0, err
		}
		c.dlog = l
	}
	if d.At.IsZero() {
		d.At = s.now().UTC()
	}
	body, err := marshalDecision(d)
	if err != nil {
		return 0, err
	}
	end, err := c.dlog.Append(body, d.Kind != decTags)
	if err != nil {
		return 0, fmt.Errorf("record %s decision of %s: %w", d.Kind, c.id, err)
	}
	return end, nil
}

// decisionReplay holds a conversation's decisions not yet reflected in
// bbolt while replayTail folds them in.
type decisionReplay struct {
	tags map[int]turnTags // seq -> recorded tags
	rest []decision       // every other decision, in log order
	end  int64            // the log's end when read
}

// loadReplay reads the decisions after c.meta.DecisionsSize. It returns
// nil when there are none. c.mu is held for writing (or c is not shared yet).
func (s *Store) loadReplay(c *conv) (*decisionReplay, error) {
	ds, _, end, err := s.readDecisions(c.id, c.meta.DecisionsSize)
	if err != nil {
		return nil, err
	}
	if end < c.meta.DecisionsSize {
		c.meta.DecisionsSize = end
	}
	if len(ds) == 0 {
		return nil, nil
	}
	r := &decisionReplay{tags: map[int]turnTags{}, end: end}
	for _, d := range ds {
		if d.Kind == decTags {
			for _, t := range d.Turns {
				r.tags[t.Seq] = t
			}
			continue
		}
		r.rest = append(r.rest, d)
	}
	return r, nil
}

// decisionsBehind reports whether a conversation's decisions log holds
// records its stored state does not reflect.
func (s *Store) decisionsBehind(id string, m convMeta) bool {
	st, err := os.Stat(s.decisionsPath(id))
	return err == nil && st.Size() > m.DecisionsSize
}

// lastTurn is the highest turn number the decisions name (0 for none, or
// a nil replay): a tag decision is written after its turn's record is in
// the master log, so that many turns were stored.
func (r *decisionReplay) lastTurn() int {
	if r == nil {
		return 0
	}
	last := 0
	for seq := range r.tags {
		last = max(last, seq)
	}
	return last
}

// replayedTags returns the recorded tags of recs and the indexes of the
// records that have none (written before the log existed, or lost).
func (r *decisionReplay) replayedTags(recs []masterlog.Record) ([]turnTags, []int) {
	out := make([]turnTags, len(recs))
	var missing []int
	for i, rec := range recs {
		t, ok := r.tags[rec.Seq]
		if !ok || !sameTurnHash(t.Hash, rec.Hash) {
			missing = append(missing, i)
			continue
		}
		out[i] = t
	}
	return out, missing
}

// tagsForReplay gives the tags of records replayed from the master log: the
// recorded ones, and the configured tagger's for records that have none.
// It returns the indexes of the records tagged here (their decisions must
// be recorded). c.mu is held for writing.
func (s *Store) tagsForReplay(ctx context.Context, c *conv, recs []masterlog.Record) ([]tagging.Result, []int) {
	out := make([]tagging.Result, len(recs))
	missing := make([]int, len(recs))
	for i := range missing {
		missing[i] = i
	}
	if c.replay != nil {
		var recorded []turnTags
		recorded, missing = c.replay.replayedTags(recs)
		for i, t := range recorded {
			if len(t.Tags) > 0 {
				out[i] = tagging.Result{Tags: t.Tags, Primary: t.Tags[0], Related: t.Related, Rule: t.Rule, Source: "recorded"}
			}
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	ins := make([]turnInput, len(missing))
	for j, i := range missing {
		ins[j] = turnInput{Text: recs[i].Content, Role: recs[i].Role, Name: recs[i].Name}
	}
	snap := tagSnapshot{vocab: make(map[string]int, len(c.vocab)), aliases: c.meta.Aliases, prevTags: c.lastTags(len(c.turns))}
	for k, v := range c.vocab {
		snap.vocab[k] = v
	}
	for _, t := range out {
		for _, tag := range t.Tags {
			snap.vocab[tag]++
		}
	}
	if len(missing) < len(recs) {
		s.log.Info("replay: tagging turns that have no recorded tags", "conversation", c.id, "turns", len(missing))
	}
	tagged := s.tagBatch(ctx, c.id, ins, snap)
	for j, i := range missing {
		out[i] = tagged[j]
	}
	return out, missing
}

// recordTurnTags appends the tags decision for metas[i], i in which (all
// of metas when which is nil). It returns the log's end, or 0 when there
// was nothing to record. c's writer lock is held.
func (s *Store) recordTurnTags(c *conv, metas []turnMeta, which []int) (int64, error) {
	if which == nil {
		which = make([]int, len(metas))
		for i := range which {
			which[i] = i
		}
	}
	var d decision
	for _, i := range which {
		m := metas[i]
		if m.Empty {
			continue
		}
		d.Turns = append(d.Turns, turnTags{Seq: m.Seq, Hash: shortHash(m.Hash), Tags: m.Tags, Related: m.Related, Rule: m.Rule})
	}
	if len(d.Turns) == 0 {
		return 0, nil
	}
	d.Kind = decTags
	return s.recordDecision(c, d)
}

// applyReplay folds the pending non-tag decisions into the conversation,
// in log order, and commits them in one transaction. A decision that no
// longer fits the state (its commit failed once and a later decision took
// its place) is skipped and logged. c.mu is held for writing.
func (s *Store) applyReplay(ctx context.Context, c *conv) error {
	r := c.replay
	if r == nil {
		return nil
	}
	a := &replayChanges{s: s, c: c, meta: c.meta,
		turns: map[int]bool{}, segs: map[int]bool{}, sums: map[string]bool{}, dropped: map[string]bool{}}
	for _, d := range r.rest {
		a.apply(ctx, d)
	}
	meta := a.meta
	c.meta.CompactedThrough = meta.CompactedThrough
	c.active = 0
	for seq := meta.CompactedThrough + 1; seq <= len(c.turns); seq++ {
		c.active += c.turns[seq-1].Tokens
	}
	meta.DecisionsSize = r.end
	if c.dlog != nil {
		meta.DecisionsSize = max(meta.DecisionsSize, c.dlog.End())
	}
	if a.summaries {
		meta.SummaryGen++
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return a.commit(tx, meta) }); err != nil {
		return fmt.Errorf("commit replayed decisions of %s: %w", c.id, err)
	}
	c.meta = meta
	if n := len(r.rest); n > 0 {
		s.log.Info("replayed derived decisions", "conversation", c.id, "decisions", n, "segments", len(c.segs), "tag_summaries", len(c.tagSums))
	}
	// Turns already in the index whose tags changed are indexed again.
	var reindex []int
	for seq := range a.turns {
		if seq <= c.meta.IndexedThrough {
			reindex = append(reindex, seq)
		}
	}
	if len(reindex) > 0 {
		sort.Ints(reindex)
		if err := s.indexSeqs(ctx, c, reindex); err != nil {
			s.log.Warn("re-indexing replayed turns failed; the reconciler retries", "conversation", c.id, "err", err)
		}
	}
	return nil
}

// replayChanges is one replay of decisions: each kind of decision is folded
// into the conversation by its own method, which records what it changed,
// and commit writes those records, and meta, in one transaction.
type replayChanges struct {
	s    *Store
	c    *conv
	meta convMeta
	// turns, segs and sums were changed; dropped are topic summaries gone.
	turns, segs   map[int]bool
	sums, dropped map[string]bool
	// working, summaries and turnSums: the working set, the segment or
	// topic summaries, and the per-turn summaries changed.
	working, summaries, turnSums bool
}

func (a *replayChanges) apply(ctx context.Context, d decision) {
	c := a.c
	switch d.Kind {
	case decCompact:
		a.compact(ctx, d)
	case decSummaries:
		a.replaceSums(d)
	case decSplit:
		a.split(d)
	case decForget:
		a.forget(d)
	case decAliases:
		a.meta.Aliases = maps.Clone(d.Aliases)
	case decOwner:
		if a.meta.Owner == "" { // the first owner stays
			a.meta.Owner = d.Owner
		}
	case decItems:
		a.meta.Items = d.Items.clone()
	case decTurnSums:
		for i := range d.TurnSums {
			r := d.TurnSums[i]
			if t := c.turn(r.Seq); t == nil || t.Hash != r.Hash {
				a.s.log.Warn("replay: summary of a turn that is not the one summarised skipped", "conversation", c.id, "turn", r.Seq)
				continue
			}
			c.turnSums[r.Seq] = &r
		}
		a.turnSums = true
	case decTurnSumsClear:
		c.turnSums = map[int]*turnSummaryRec{}
		a.turnSums = true
	case decWorking:
		c.working = make(map[string]WorkingEntry, len(d.Working))
		for _, w := range d.Working {
			c.working[w.Tag] = w
		}
		a.working = true
	default:
		a.s.log.Warn("replay: unknown decision kind skipped", "conversation", c.id, "kind", d.Kind)
	}
}

// compact appends a compaction's segments and puts its topic summaries in
// place, if it starts where the conversation's compacted part ends.
func (a *replayChanges) compact(ctx context.Context, d decision) {
	c := a.c
	firstID, firstSeq := 0, 0
	for _, sg := range d.Segments {
		if firstID == 0 || sg.ID < firstID {
			firstID, firstSeq = sg.ID, sg.First
		}
	}
	for _, ref := range d.SegRefs {
		if firstID == 0 || ref.ID < firstID {
			firstID, firstSeq = ref.ID, ref.First
		}
	}
	if firstID == 0 || d.Through <= a.meta.CompactedThrough || d.Through > len(c.turns) ||
		firstID != len(c.segs)+1 || firstSeq != a.meta.CompactedThrough+1 {
		a.s.log.Warn("replay: compaction decision does not fit the stored state; skipped", "conversation", c.id, "through", d.Through)
		return
	}
	segs := slices.Clone(d.Segments)
	for _, ref := range d.SegRefs {
		segs = append(segs, a.s.resolveSegment(ctx, c, ref))
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].ID < segs[j].ID })
	for i := range segs {
		sg := segs[i]
		c.segs = append(c.segs, &sg)
		a.segs[sg.ID] = true
		for seq := sg.First; seq <= sg.Last && seq <= len(c.turns); seq++ {
			c.turns[seq-1].Segment = sg.ID
		}
	}
	for i := range d.TagSums {
		ts := d.TagSums[i]
		a.setTagSum(&ts)
	}
	for _, ref := range d.TagRefs {
		if ref.Add == nil {
			ref.Add = derivedAdd(ref.Tag, segs)
		}
		a.setTagSum(a.s.resolveRollup(ctx, c, ref))
	}
	a.meta.CompactedThrough = d.Through
	a.summaries = true
}

// replaceSums puts a decision's remade segment and topic summaries in
// place (regenerated summaries, or those a forget rewrote).
func (a *replayChanges) replaceSums(d decision) {
	c := a.c
	for i := range d.Segments {
		sg := d.Segments[i]
		if sg.ID < 1 || sg.ID > len(c.segs) {
			a.s.log.Warn("replay: summary of an unknown segment skipped", "conversation", c.id, "segment", sg.ID, "kind", d.Kind)
			continue
		}
		c.segs[sg.ID-1] = &sg
		a.segs[sg.ID] = true
	}
	for i := range d.TagSums {
		ts := d.TagSums[i]
		a.setTagSum(&ts)
	}
	a.summaries = true
}

func (a *replayChanges) setTagSum(ts *tagSummaryRec) {
	a.c.tagSums[ts.Tag] = ts
	a.sums[ts.Tag] = true
	delete(a.dropped, ts.Tag)
}

// split records a topic split: the turns' new tags and the aliases.
func (a *replayChanges) split(d decision) {
	sp := d.Split
	if sp == nil {
		return
	}
	a.meta.SplitChecked = maps.Clone(a.meta.SplitChecked)
	if a.meta.SplitChecked == nil {
		a.meta.SplitChecked = map[string]int{}
	}
	a.meta.SplitChecked[sp.Tag] = sp.Count
	if sp.Aliases != nil {
		a.meta.Aliases = maps.Clone(sp.Aliases)
	}
	for seq, tags := range sp.Turns {
		if a.c.turn(seq) == nil {
			continue
		}
		a.c.addTags(seq, tags)
		a.turns[seq] = true
	}
}

// forget puts a forget's remade summaries in place, drops the topics
// nothing is left of, and remembers the forgotten turns' hashes.
func (a *replayChanges) forget(d decision) {
	c := a.c
	a.replaceSums(d)
	if d.Forget == nil {
		return
	}
	for _, tag := range d.Forget.Dropped {
		if _, ok := c.tagSums[tag]; ok || a.sums[tag] {
			delete(c.tagSums, tag)
			delete(a.sums, tag)
			a.dropped[tag] = true
		}
	}
	for _, t := range d.Forget.Turns {
		c.forgotten[t.Hash] = true
	}
}

// commit writes what the replay changed, and meta, in tx.
func (a *replayChanges) commit(tx *bolt.Tx, meta convMeta) error {
	c := a.c
	b, err := convBucket(tx, c.id)
	if err != nil {
		return err
	}
	tb, sb, rb := b.Bucket(bucketTurns), b.Bucket(bucketSegments), b.Bucket(bucketTagSums)
	turns := make([]*turnMeta, 0, len(a.turns))
	for seq := range a.turns {
		turns = append(turns, c.turn(seq))
	}
	if err := putTurns(tb, turns...); err != nil {
		return err
	}
	segs := make([]*segmentRec, 0, len(a.segs))
	for id := range a.segs {
		segs = append(segs, c.segs[id-1])
	}
	if err := putSegments(sb, segs...); err != nil {
		return err
	}
	for tag := range a.sums {
		if err := putTagSum(rb, c.tagSums[tag]); err != nil {
			return err
		}
	}
	for tag := range a.dropped {
		if err := rb.Delete([]byte(tag)); err != nil {
			return err
		}
	}
	if a.working {
		if err := putWorking(b, c.working); err != nil {
			return err
		}
	}
	if a.turnSums {
		if err := resetBucket(b, bucketTurnSums); err != nil {
			return err
		}
		tsb := b.Bucket(bucketTurnSums)
		for seq, r := range c.turnSums {
			if err := putJSON(tsb, seqKey(seq), r); err != nil {
				return err
			}
		}
	}
	return putMeta(tx, meta)
}

// addTags gives turn seq the tags it lacks from tags, keeping the
// vocabulary, tag lists and tag words in step. c.mu is held for writing.
func (c *conv) addTags(seq int, tags []string) {
	t := c.turn(seq)
	for _, tag := range tags {
		if contains(t.Tags, tag) {
			continue
		}
		t.Tags = append(t.Tags, tag)
		if t.Empty {
			continue
		}
		c.learnWords(tag)
		c.vocab[tag]++
		for _, r := range t.Related { // as addTurn does, so a reload agrees
			if !contains(c.relatedBy[r], tag) {
				c.relatedBy[r] = append(c.relatedBy[r], tag)
			}
		}
		list := c.tagSeqs[tag]
		i := sort.SearchInts(list, seq)
		c.tagSeqs[tag] = append(list[:i], append([]int{seq}, list[i:]...)...)
	}
}
