package memory

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vc-mcp/vc-mcp/index"
	"github.com/vc-mcp/vc-mcp/memory/decisionlog"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	bolt "go.etcd.io/bbolt"
)

// bbolt layout. Everything in it is derived from the master logs.
//
//	convs            conversation id -> convMeta
//	c/<id>/turns     seq (uint64 BE) -> turnMeta
//	c/<id>/segments  segment id (uint64 BE) -> segmentRec
//	c/<id>/tagsums   tag -> tagSummaryRec
//	c/<id>/working   tag -> WorkingEntry
//	c/<id>/vectors   seq (uint64 BE) -> float32 LE vector (semantic memory)
//	c/<id>/turnsums  seq (uint64 BE) -> turnSummaryRec (per-message summaries)
var (
	bucketConvs    = []byte("convs")
	bucketMeta     = []byte("meta")
	bucketTurns    = []byte("turns")
	bucketSegments = []byte("segments")
	bucketTagSums  = []byte("tagsums")
	bucketWorking  = []byte("working")
	bucketVectors  = []byte("vectors")
	bucketTurnSums = []byte("turnsums")
	keySchema      = []byte("schema")
)

const schemaVersion = "1"

func convBucketName(id string) []byte { return []byte("c/" + id) }

func seqKey(n int) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	return b[:]
}

// convMeta is a conversation's persistent header.
type convMeta struct {
	ID string `json:"id"`
	// LogSize is how many bytes of the master log are reflected here; a
	// longer log means a crash came between the log's fsync and this
	// store's commit, and the tail is replayed on load.
	LogSize          int64     `json:"log_size"`
	Turns            int       `json:"turns"`
	CompactedThrough int       `json:"compacted_through"`
	IndexedThrough   int       `json:"indexed_through"`
	Created          time.Time `json:"created"`
	Updated          time.Time `json:"updated"`
	// Aliases map other names to tags (registered by tag splits).
	Aliases map[string]string `json:"aliases,omitempty"`
	// SplitChecked records each tag's turn count when last offered to the
	// splitter.
	SplitChecked map[string]int `json:"split_checked,omitempty"`
	// DecisionsSize is how many bytes of the derived-decisions log are
	// reflected here (like LogSize for the master log).
	DecisionsSize int64 `json:"decisions_size,omitempty"`
	// SummaryGen counts changes to the conversation's summaries;
	// SummariesIndexed is the generation the full-text index holds.
	SummaryGen       int `json:"summary_gen,omitempty"`
	SummariesIndexed int `json:"summaries_indexed,omitempty"`
	// Items is the conversation's context-item selection (itemselect.go).
	Items *itemSelection `json:"items,omitempty"`
	// Owner is who first wrote the conversation, when a caller had one
	// (owner.go); empty: open to every caller.
	Owner string `json:"owner,omitempty"`
}

// turnMeta is the index entry for one turn of a master log.
type turnMeta struct {
	Seq        int       `json:"s"`
	Role       string    `json:"r"`
	Name       string    `json:"n,omitempty"`
	When       time.Time `json:"w"`
	Start      int64     `json:"o"`
	End        int64     `json:"e"`
	Tokens     int       `json:"k"`
	Tags       []string  `json:"t,omitempty"`
	Related    []string  `json:"rt,omitempty"`
	Empty      bool      `json:"x,omitempty"`
	Rule       bool      `json:"ru,omitempty"`
	ToolUse    bool      `json:"tu,omitempty"`
	ToolResult bool      `json:"tr,omitempty"`
	Hash       string    `json:"h"`
	ID         string    `json:"id,omitempty"` // the client's message id
	Session    int       `json:"ss"`
	Segment    int       `json:"g,omitempty"`
	// Damaged marks a placeholder for a record that failed verification or
	// is missing from the master log (its bytes are in quarantine): it has
	// no text and no range, and its id is never reused.
	Damaged bool `json:"d,omitempty"`
	// Question marks a turn that asks something: the next turn likely
	// answers it, so recall lends it part of the question's score.
	Question bool `json:"q,omitempty"`
	// Forgotten marks a turn removed by Forget: an empty placeholder whose
	// hash keeps the message from being stored again.
	Forgotten bool `json:"f,omitempty"`
	// TextKey identifies the turn's text alone (textKey), so a caller can
	// say which turns it already holds (RecallRequest.Exclude).
	TextKey string `json:"tk,omitempty"`
}

// textKey is a short hash of a message's text without surrounding white
// space: 64 bits, enough to tell a conversation's turns apart.
func textKey(text string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(text)))
	return hex.EncodeToString(sum[:8])
}

func (t *turnMeta) primary() string {
	if len(t.Tags) == 0 {
		return ""
	}
	return t.Tags[0]
}

// segmentRec is a stored Layer 1 segment.
type segmentRec struct {
	ID            int       `json:"id"`
	Primary       string    `json:"primary"`
	Tags          []string  `json:"tags"`
	First         int       `json:"first"`
	Last          int       `json:"last"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	Summary       string    `json:"summary"`
	SummaryTokens int       `json:"summary_tokens"`
	FullTokens    int       `json:"full_tokens"`
	Entities      []string  `json:"entities,omitempty"`
	Decisions     []string  `json:"decisions,omitempty"`
	Method        string    `json:"method"`
	Version       string    `json:"version"`
	CreatedAt     time.Time `json:"created_at"`
}

// tagSummaryRec is a stored Layer 2 summary.
type tagSummaryRec struct {
	Tag         string    `json:"tag"`
	Summary     string    `json:"summary"`
	Description string    `json:"description"`
	Tokens      int       `json:"tokens"`
	Segments    []int     `json:"segments"`
	Method      string    `json:"method"`
	Version     string    `json:"version"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// conv is a conversation's in-memory state, loaded from bbolt on first use.
//
// Two locks guard it, so that a read never waits for a writer's disk:
//   - wmu serialises the conversation's writers. A writer holds it across
//     its I/O (the master log's append and fsync, the decisions log, the
//     bbolt commit, the index write); holding it is enough to read every
//     field, since only its holder changes them.
//   - mu guards the fields against readers. A writer changes a field only
//     while it holds mu as well; readers (recall, find_quote, status) hold
//     mu for reading. Most writers (ingest, compaction, tag splits,
//     vectors, per-message summaries, the index catch-up, expand_topic and
//     collapse_topic, aliases, an owner's claim, summary regeneration,
//     context-item changes, clearing per-message summaries) take mu only
//     for the change itself once their I/O is done, so readers wait at
//     most for that change, never for their fsync. Forget and redaction
//     (this process's, or another's adopted from a shared store) rewrite
//     the logs under wmu too, readers
//     reading the old log's open file until the rebuilt state is in place
//     (rewriteLock in forget.go); where an open file cannot be replaced
//     (Windows) they hold both locks (c.lock). A replay of what another
//     process (a shared store's refresh) or a bundle import appended to
//     the logs runs on a fork of the state under wmu (fork, adopt).
//
// compactMu serialises compactions so that the slow part (summarising) runs
// without either held. The order is compactMu, wmu, mu (store.go).
type conv struct {
	mu        sync.RWMutex
	wmu       sync.Mutex
	compactMu sync.Mutex

	id        string
	log       *masterlog.Log
	dlog      *decisionlog.Log // derived decisions; nil until the first one
	replay    *decisionReplay  // pending decisions while replayTail runs
	meta      convMeta
	turns     []turnMeta          // turns[seq-1]
	lite      []turnLite          // lite[seq-1]: what ranking reads of turns[seq-1]
	lineToks  []uint64            // lineToks[seq-1]: see linecount.go
	ids       map[string]int      // client message id -> seq
	hashes    map[string]int      // message hash -> seq
	forgotten map[string]bool     // hashes of forgotten messages (never stored again)
	rewrites  int                 // bumped by each rewrite of the log (forget, redact)
	vocab     map[string]int      // tag -> turns carrying it
	tagSeqs   map[string][]int    // tag -> seqs, ascending
	relatedBy map[string][]string // related term -> tags that name it
	segs      []*segmentRec       // segs[id-1]
	tagSums   map[string]*tagSummaryRec
	turnSums  map[int]*turnSummaryRec // seq -> per-message summary
	working   map[string]WorkingEntry
	speakers  map[string]int // lowercased name -> turns
	rules     []int          // seqs of standing-rule turns ("from now on ..."), ascending
	// tagWords holds each tag's (and related term's) analysed words, and
	// wordTags the reverse, so a query finds its tags without a scan.
	tagWords map[string][]string
	wordTags map[string][]string
	// vecs are the turn vectors (semantic memory); vecFailed marks turns the
	// embedder could not encode, so they are not retried forever.
	vecs      vectors
	vecFailed map[int]bool
	// tagVecs are the tag names' vectors, for closed-set semantic tag
	// matching (recomputed in the background after a restart).
	tagVecs map[string][]float32
	// speakerNames lists the names turn lines give their speakers (a
	// turn's name, or else its role), indexed by turnLite.speaker, and
	// speakerIdx is the reverse. speakerToks[i] caches the tokens of
	// speaker i's line prefix (0: not counted yet, as counting waits for
	// the tokenizer's tables): recalls read and fill it under the read
	// lock with atomic loads and stores; writers append under the write
	// lock.
	speakerNames []string
	speakerIdx   map[string]uint16
	speakerToks  []int32
	tokens       int // all non-empty turns
	damaged      int // damaged placeholders
	active       int // tokens of turns after CompactedThrough
}

// lock takes both of c's locks: the holder may do I/O and change fields.
func (c *conv) lock() {
	c.wmu.Lock()
	c.mu.Lock()
}

func (c *conv) unlock() {
	c.mu.Unlock()
	c.wmu.Unlock()
}

func newConv(id string) *conv {
	return &conv{
		id: id, ids: map[string]int{}, hashes: map[string]int{}, forgotten: map[string]bool{}, vocab: map[string]int{}, tagSeqs: map[string][]int{},
		relatedBy: map[string][]string{}, tagSums: map[string]*tagSummaryRec{}, turnSums: map[int]*turnSummaryRec{},
		working: map[string]WorkingEntry{}, speakers: map[string]int{},
		tagWords: map[string][]string{}, wordTags: map[string][]string{}, speakerIdx: map[string]uint16{},
	}
}

// fork returns a private copy of c's state that a writer changes without
// the readers' lock, to put in place with adopt under c.mu once its I/O is
// done (a replay of what another process or a bundle appended to the
// logs). What writers change in place is copied: the turns, the compact
// arrays, the maps, and the slices inside the tag maps (a tag's turns are
// kept sorted by inserting). What they only replace or append to is
// shared: the records the maps point at, the turns' tag slices (appends
// land beyond the readers' lengths), the vectors (only the embedder writes
// them, under c.wmu), the log handles. c.wmu is held, so the state does
// not change meanwhile; readers may still fill the atomic caches, read
// here with atomic loads.
func (c *conv) fork() *conv {
	n := &conv{id: c.id, log: c.log, dlog: c.dlog, meta: c.meta, rewrites: c.rewrites, vecs: c.vecs,
		tokens: c.tokens, damaged: c.damaged, active: c.active}
	n.turns = slices.Clone(c.turns)
	n.lite = slices.Clone(c.lite)
	n.lineToks = make([]uint64, len(c.lineToks))
	for i := range c.lineToks {
		n.lineToks[i] = atomic.LoadUint64(&c.lineToks[i])
	}
	n.speakerNames = slices.Clone(c.speakerNames)
	n.speakerIdx = maps.Clone(c.speakerIdx)
	n.speakerToks = make([]int32, len(c.speakerToks))
	for i := range c.speakerToks {
		n.speakerToks[i] = atomic.LoadInt32(&c.speakerToks[i])
	}
	n.ids, n.hashes, n.forgotten = maps.Clone(c.ids), maps.Clone(c.hashes), maps.Clone(c.forgotten)
	n.vocab, n.speakers = maps.Clone(c.vocab), maps.Clone(c.speakers)
	n.tagSeqs, n.relatedBy = cloneLists(c.tagSeqs), cloneLists(c.relatedBy)
	n.tagWords, n.wordTags = cloneLists(c.tagWords), cloneLists(c.wordTags)
	n.segs, n.rules = slices.Clone(c.segs), slices.Clone(c.rules)
	n.tagSums, n.turnSums, n.working = maps.Clone(c.tagSums), maps.Clone(c.turnSums), maps.Clone(c.working)
	n.vecFailed, n.tagVecs = maps.Clone(c.vecFailed), maps.Clone(c.tagVecs)
	return n
}

// cloneLists copies a map of slices and each slice.
func cloneLists[K comparable, V any](m map[K][]V) map[K][]V {
	if m == nil {
		return nil
	}
	out := make(map[K][]V, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

// addTurn folds one turn into the in-memory indexes.
func (c *conv) addTurn(t turnMeta) {
	c.turns = append(c.turns, t)
	c.lite = append(c.lite, liteOf(&t, c.speakerOf(&t)))
	c.lineToks = append(c.lineToks, 0)
	if t.Damaged {
		c.damaged++
		return
	}
	if t.ID != "" {
		c.ids[t.ID] = t.Seq
	}
	c.hashes[t.Hash] = t.Seq
	if t.Forgotten {
		c.forgotten[t.Hash] = true
	}
	if t.Empty {
		return
	}
	c.tokens += t.Tokens
	if t.Seq > c.meta.CompactedThrough {
		c.active += t.Tokens
	}
	for _, tag := range t.Tags {
		c.learnWords(tag)
		c.vocab[tag]++
		c.tagSeqs[tag] = append(c.tagSeqs[tag], t.Seq)
		for _, r := range t.Related {
			c.learnWords(r)
			if !contains(c.relatedBy[r], tag) {
				c.relatedBy[r] = append(c.relatedBy[r], tag)
			}
		}
	}
	if t.Name != "" {
		c.speakers[strings.ToLower(t.Name)]++
	}
	// Standing instructions come from the user (or the system prompt); an
	// assistant saying "never give up" is not one.
	if t.Rule && (t.Role == "user" || t.Role == "system") {
		c.rules = append(c.rules, t.Seq)
	}
}

// turnLite is the part of a turn that ranking reads for every candidate
// and its neighbours: a recall scores thousands of turns spread over the
// conversation, and reading these from turnMeta (over 200 bytes each)
// missed the cache on almost every one. None of it changes once the turn
// is stored (a rewrite rebuilds the conversation).
type turnLite struct {
	session int32
	tokens  int32 // capped at math.MaxInt32
	flags   uint8
	speaker uint16 // index into conv.speakerNames, or noSpeaker
}

// noSpeaker marks a turn whose speaker did not get a slot (a conversation
// with 65,535 speaker names already): its prefix is counted by name.
const noSpeaker = math.MaxUint16

const (
	liteEmpty uint8 = 1 << iota
	liteQuestion
)

func liteOf(t *turnMeta, speaker uint16) turnLite {
	l := turnLite{session: int32(t.Session), tokens: int32(min(t.Tokens, math.MaxInt32)), speaker: speaker}
	if t.Empty {
		l.flags |= liteEmpty
	}
	if t.Question {
		l.flags |= liteQuestion
	}
	return l
}

// speakerName is the name a turn's line gives its speaker.
func speakerName(t *turnMeta) string {
	if t.Name != "" {
		return t.Name
	}
	return t.Role
}

// speakerOf returns t's speaker slot, adding one for a new name. c.mu is
// held for writing (or c is not shared yet).
func (c *conv) speakerOf(t *turnMeta) uint16 {
	who := speakerName(t)
	if i, ok := c.speakerIdx[who]; ok {
		return i
	}
	if len(c.speakerNames) >= noSpeaker {
		return noSpeaker
	}
	i := uint16(len(c.speakerNames))
	c.speakerNames = append(c.speakerNames, who)
	c.speakerToks = append(c.speakerToks, 0)
	c.speakerIdx[who] = i
	return i
}

func (l turnLite) empty() bool    { return l.flags&liteEmpty != 0 }
func (l turnLite) question() bool { return l.flags&liteQuestion != 0 }

// liteAt returns turn seq's turnLite; ok is false for no such turn.
func (c *conv) liteAt(seq int) (turnLite, bool) {
	if seq <= 0 || seq > len(c.lite) {
		return turnLite{}, false
	}
	return c.lite[seq-1], true
}

func (c *conv) turn(seq int) *turnMeta {
	if seq <= 0 || seq > len(c.turns) {
		return nil
	}
	return &c.turns[seq-1]
}

// loadConv reads a conversation's state from bbolt.
func loadConv(tx *bolt.Tx, id string) (*conv, error) {
	c := newConv(id)
	if v := tx.Bucket(bucketConvs).Get([]byte(id)); v != nil {
		if err := json.Unmarshal(v, &c.meta); err != nil {
			return nil, fmt.Errorf("decode conversation %s: %w", id, err)
		}
	} else {
		c.meta.ID = id
	}
	b := tx.Bucket(convBucketName(id))
	if b == nil {
		return c, nil
	}
	if tb := b.Bucket(bucketTurns); tb != nil {
		err := forEachRecord(tb, func(seq int, v []byte) error {
			t, err := decodeTurn(v)
			if err != nil {
				return fmt.Errorf("decode turn %d of %s: %w", seq, id, err)
			}
			if t.Seq != len(c.turns)+1 {
				return fmt.Errorf("conversation %s: turn %d out of sequence", id, t.Seq)
			}
			c.addTurn(t)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if sb := b.Bucket(bucketSegments); sb != nil {
		err := forEachRecord(sb, func(_ int, v []byte) error {
			s, err := decodeSegment(v)
			if err != nil {
				return fmt.Errorf("decode segment of %s: %w", id, err)
			}
			c.segs = append(c.segs, s)
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Slice(c.segs, func(i, j int) bool { return c.segs[i].ID < c.segs[j].ID })
		// A turn's segment is not written again into its record when a
		// compaction makes the segment (that rewrote every page of the
		// compacted turns, the largest part of vc.db's free pages): the
		// segments' ranges give it. Records written before hold it too.
		for _, sg := range c.segs {
			for seq := max(sg.First, 1); seq <= sg.Last && seq <= len(c.turns); seq++ {
				c.turns[seq-1].Segment = sg.ID
			}
		}
	}
	if tb := b.Bucket(bucketTagSums); tb != nil {
		err := tb.ForEach(func(k, v []byte) error {
			s, err := decodeTagSum(v)
			if err != nil {
				return fmt.Errorf("decode tag summary of %s: %w", id, err)
			}
			c.tagSums[s.Tag] = s
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if tb := b.Bucket(bucketTurnSums); tb != nil {
		err := tb.ForEach(func(k, v []byte) error {
			r := &turnSummaryRec{}
			if err := json.Unmarshal(v, r); err != nil {
				return fmt.Errorf("decode turn summary of %s: %w", id, err)
			}
			c.turnSums[r.Seq] = r
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if err := loadVectors(b, c); err != nil {
		return nil, fmt.Errorf("load vectors of %s: %w", id, err)
	}
	if wb := b.Bucket(bucketWorking); wb != nil {
		err := wb.ForEach(func(k, v []byte) error {
			var w WorkingEntry
			if err := json.Unmarshal(v, &w); err != nil {
				return fmt.Errorf("decode working set of %s: %w", id, err)
			}
			c.working[w.Tag] = w
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// appendFillPercent is how full bbolt fills a page before splitting it in
// the buckets keyed by increasing sequence numbers.
const appendFillPercent = 0.95

func appendOnlyBucket(name []byte) bool {
	switch string(name) {
	case string(bucketTurns), string(bucketSegments), string(bucketVectors):
		return true
	}
	return false
}

// convBucket returns (creating) the conversation's bucket and its sub-buckets.
func convBucket(tx *bolt.Tx, id string) (*bolt.Bucket, error) {
	b, err := tx.CreateBucketIfNotExists(convBucketName(id))
	if err != nil {
		return nil, fmt.Errorf("create bucket for %s: %w", id, err)
	}
	for _, name := range [][]byte{bucketTurns, bucketSegments, bucketTagSums, bucketWorking, bucketVectors, bucketTurnSums} {
		sb, err := b.CreateBucketIfNotExists(name)
		if err != nil {
			return nil, fmt.Errorf("create %s bucket for %s: %w", name, id, err)
		}
		if appendOnlyBucket(name) {
			// Keys are sequence numbers written in order: split full pages
			// near full instead of at half, or the file is half empty.
			// The handle is cached for the rest of the transaction.
			sb.FillPercent = appendFillPercent
		}
	}
	return b, nil
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return b.Put(key, data)
}

func putMeta(tx *bolt.Tx, m convMeta) error {
	return putJSON(tx.Bucket(bucketConvs), []byte(m.ID), m)
}

// learnWords records the analysed words of a new tag or related term.
func (c *conv) learnWords(tag string) {
	if _, ok := c.tagWords[tag]; ok {
		return
	}
	words := index.Analyze(strings.ReplaceAll(tag, "-", " "))
	c.tagWords[tag] = words
	seen := map[string]bool{}
	for _, w := range words {
		if !seen[w] {
			seen[w] = true
			c.wordTags[w] = append(c.wordTags[w], tag)
		}
	}
}
