package memory

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vc-mcp/vc-mcp/index"
	"github.com/vc-mcp/vc-mcp/internal/files"
)

// Why an item is or is not in a request context (ItemDecision.Reason).
const (
	ReasonAlways       = "always"          // in the session context: include always
	ReasonAdded        = "added"           // added to this conversation
	ReasonIncludeScore = "include_score"   // agent: scored at least include_score
	ReasonTopN         = "top_n"           // agent: among the top_n best
	ReasonOverBudget   = "over_budget"     // no room left in the items' share of the budget
	ReasonBelowMin     = "below_min_score" // agent: scored below min_score
	ReasonBeyondTopN   = "beyond_top_n"    // agent: top_n items scored higher
	ReasonNotInTopK    = "not_in_top_k"    // agent: none of its chunks among the top_k matches
	ReasonRemoved      = "removed"         // removed from this conversation
)

// ItemDecision is one context item a recall included or considered.
type ItemDecision struct {
	Type string `json:"type"`
	Name string `json:"name"`
	// Include is the item's configured include mode; Mode is how it came
	// into this request: "always" and "manual" from the session context,
	// "agent" by relevance to the message.
	Include  string `json:"include"`
	Mode     string `json:"mode"`
	Priority int    `json:"priority"`
	// Score is the best chunk's similarity to the message (agent items).
	Score    *float64 `json:"score,omitempty"`
	Included bool     `json:"included"`
	// Trimmed: only the start of the item fit; the text says so.
	Trimmed bool `json:"trimmed,omitempty"`
	// Tokens is what the item took in the assembly (0 when excluded).
	Tokens int `json:"tokens"`
	// Reason is one of the Reason* codes.
	Reason string `json:"reason"`
}

// ItemSearch describes how agent items were searched for a request.
type ItemSearch struct {
	// Method is "embeddings" or "lexical" (no model, or it failed: the
	// score is then the IDF-weighted share of the message's words found
	// in a chunk); "" when no agent item was a candidate.
	Method       string  `json:"method,omitempty"`
	Note         string  `json:"note,omitempty"`
	TopK         int     `json:"top_k"`
	TopN         int     `json:"top_n"`
	IncludeScore float64 `json:"include_score"`
	MinScore     float64 `json:"min_score"`
	// Chunks is how many chunks were scored; Embedded how many of them had
	// to be embedded for this request (the rest came from the cache).
	Chunks   int `json:"chunks"`
	Embedded int `json:"embedded"`
}

// itemSelection is a conversation's changes to its session context:
// names added (in it whatever their mode) and removed (never in it).
type itemSelection struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

func (sel *itemSelection) clone() *itemSelection {
	if sel == nil {
		return &itemSelection{}
	}
	return &itemSelection{Added: slices.Clone(sel.Added), Removed: slices.Clone(sel.Removed)}
}

func (sel *itemSelection) added(name string) bool {
	return sel != nil && slices.Contains(sel.Added, name)
}
func (sel *itemSelection) removed(name string) bool {
	return sel != nil && slices.Contains(sel.Removed, name)
}

// sessionMode says whether an item is in the session context and how:
// IncludeAlways, IncludeManual, or "" when it is not.
func sessionMode(ci *catItem, sel *itemSelection) string {
	switch {
	case sel.removed(ci.Name):
		return ""
	case ci.Include == IncludeAlways:
		return IncludeAlways
	case sel.added(ci.Name):
		return IncludeManual
	}
	return ""
}

// itemsPart is the context-items section of one recall.
type itemsPart struct {
	text      string // "" when nothing is included
	tokens    int
	decisions []ItemDecision
	search    ItemSearch
}

// selection returns a conversation's item selection (nil when it has
// none or does not exist yet).
func (s *Store) selection(ctx context.Context, id string) (*itemSelection, error) {
	c, err := s.conversation(ctx, id, false)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.meta.Items.clone(), nil
}

// selectItems builds the request context's items for a message: the
// session items, then the agent items relevant to msg, packed in priority
// order into budget. qvec is the message's vector, nil without a model.
func (s *Store) selectItems(ctx context.Context, convID, msg string, qvec []float32, budget int) (itemsPart, error) {
	cat := s.items
	part := itemsPart{decisions: []ItemDecision{}}
	if len(cat.items) == 0 {
		return part, nil
	}
	sel, err := s.selection(ctx, convID)
	if err != nil {
		return part, err
	}
	type entry struct {
		ci    *catItem
		dec   ItemDecision
		score float64
	}
	var chosen []entry
	var candidates []*catItem
	for _, ci := range cat.items {
		d := ItemDecision{Type: ci.Type, Name: ci.Name, Include: ci.Include, Priority: ci.Priority}
		switch mode := sessionMode(ci, sel); {
		case mode != "":
			d.Mode, d.Reason = mode, ReasonAdded
			if mode == IncludeAlways {
				d.Reason = ReasonAlways
			}
			chosen = append(chosen, entry{ci: ci, dec: d})
		case ci.Include == IncludeAgent && sel.removed(ci.Name):
			d.Mode, d.Reason = IncludeAgent, ReasonRemoved
			part.decisions = append(part.decisions, d)
		case ci.Include == IncludeAlways:
			d.Mode, d.Reason = IncludeAlways, ReasonRemoved
			part.decisions = append(part.decisions, d)
		case ci.Include == IncludeAgent:
			candidates = append(candidates, ci)
		}
	}
	o := cat.search
	part.search = ItemSearch{TopK: o.TopK, TopN: o.TopN, IncludeScore: o.IncludeScore, MinScore: o.MinScore}
	if len(candidates) > 0 {
		scores, inTopK, err := s.scoreItems(ctx, candidates, msg, qvec, &part.search)
		if err != nil {
			return part, err
		}
		order := slices.Clone(candidates)
		sort.SliceStable(order, func(i, j int) bool { return scores[order[i]] > scores[order[j]] })
		n := 0
		for _, ci := range order {
			sc := round3(scores[ci])
			d := ItemDecision{Type: ci.Type, Name: ci.Name, Include: ci.Include, Mode: IncludeAgent, Priority: ci.Priority, Score: &sc}
			switch {
			case !inTopK[ci]:
				d.Reason = ReasonNotInTopK
			case scores[ci] < o.MinScore:
				d.Reason = ReasonBelowMin
			case scores[ci] >= o.IncludeScore:
				d.Reason = ReasonIncludeScore
			case n < o.TopN:
				d.Reason = ReasonTopN
			default:
				d.Reason = ReasonBeyondTopN
			}
			if d.Reason == ReasonIncludeScore || d.Reason == ReasonTopN {
				n++
				chosen = append(chosen, entry{ci: ci, dec: d, score: scores[ci]})
				continue
			}
			part.decisions = append(part.decisions, d)
		}
	}
	// Priority first (lower first), the session's items before the
	// agent's, better scores first.
	sort.SliceStable(chosen, func(i, j int) bool {
		a, b := chosen[i], chosen[j]
		if a.ci.Priority != b.ci.Priority {
			return a.ci.Priority < b.ci.Priority
		}
		if (a.dec.Mode == IncludeAgent) != (b.dec.Mode == IncludeAgent) {
			return b.dec.Mode == IncludeAgent
		}
		if a.score != b.score {
			return a.score > b.score
		}
		return a.ci.Name < b.ci.Name
	})
	const header = "# Context items"
	room := budget - s.tok.Count(header) - 1
	var blocks []string
	for _, e := range chosen {
		d := e.dec
		cost := e.ci.tokens + 2
		switch {
		case cost <= room:
			blocks = append(blocks, e.ci.block)
			d.Included, d.Tokens = true, cost
			room -= cost
		case room >= minTrimmedItem:
			text := s.trimItem(e.ci, room-2)
			n := s.tok.Count(text) + 2
			blocks = append(blocks, text)
			d.Included, d.Trimmed, d.Tokens = true, true, n
			room = 0 // what follows a trimmed item would jump the priority order
		default:
			d.Reason = ReasonOverBudget
		}
		part.decisions = append(part.decisions, d)
	}
	// Included first, in assembly order; then the rest as considered.
	sort.SliceStable(part.decisions, func(i, j int) bool { return part.decisions[i].Included && !part.decisions[j].Included })
	if len(blocks) > 0 {
		part.text = header + "\n" + strings.Join(blocks, "\n\n")
		part.tokens = s.tok.Count(part.text)
	}
	return part, nil
}

// minTrimmedItem is the least room worth showing the start of an item in.
const minTrimmedItem = 48

// trimItem cuts an item's block to at most n tokens, ending with a marker
// that says how much is missing and where the whole item is.
func (s *Store) trimItem(ci *catItem, n int) string {
	for reserve := 40; reserve < n; reserve += 16 {
		head := s.tok.Truncate(ci.block, n-reserve)
		shown := s.tok.Count(head)
		text := fmt.Sprintf("%s\n[trimmed to fit the budget: %d of %d tokens shown; the whole item is the resource %s]",
			strings.TrimRight(head, " \n"), shown, ci.tokens, ItemURI(ci.Name))
		if s.tok.Count(text) <= n {
			return text
		}
	}
	return s.tok.Truncate(ci.block, n)
}

// ItemURI is the resource URI of a context item's whole text.
func ItemURI(name string) string {
	return "virtualcontext://context-items/" + strings.ReplaceAll(name, " ", "%20")
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// scoreItems scores each candidate by its best chunk against msg, over
// the topK best chunks of all candidates: by embeddings when a model is
// ready, else lexically. It reports which items have a chunk in the top K.
func (s *Store) scoreItems(ctx context.Context, cands []*catItem, msg string, qvec []float32, info *ItemSearch) (map[*catItem]float64, map[*catItem]bool, error) {
	type hit struct {
		ci    *catItem
		score float64
	}
	var hits []hit
	var chunks []string
	var owners []*catItem
	for _, ci := range cands {
		for _, ch := range ci.chunks {
			chunks = append(chunks, ch)
			owners = append(owners, ci)
		}
	}
	info.Chunks = len(chunks)
	var vecs [][]float32
	if qvec != nil {
		var embedded int
		var err error
		vecs, embedded, err = s.itemVecs.vectors(ctx, s, chunks)
		info.Embedded = embedded
		switch {
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return nil, nil, err
		case err != nil:
			s.log.Warn("embedding context items failed; choosing them lexically", "err", err)
			info.Note = "embedding the items failed; lexical scores"
			vecs = nil
		}
	} else if s.opts.Embedder != nil {
		info.Note = "embedding model not ready; lexical scores"
	}
	if vecs != nil {
		info.Method = "embeddings"
		for i, v := range vecs {
			sc := 0.0
			if len(v) == len(qvec) {
				sc = float64(dot(qvec, v))
			}
			hits = append(hits, hit{owners[i], sc})
		}
	} else {
		info.Method = "lexical"
		var sets []map[string]bool
		for _, ci := range cands {
			sets = append(sets, ci.terms...)
		}
		for i, sc := range lexicalScores(msg, sets) {
			hits = append(hits, hit{owners[i], sc})
		}
	}
	best := map[*catItem]float64{}
	for _, h := range hits {
		if cur, ok := best[h.ci]; !ok || h.score > cur {
			best[h.ci] = h.score
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	inTopK := map[*catItem]bool{}
	for i, h := range hits {
		if i >= s.items.search.TopK {
			break
		}
		inTopK[h.ci] = true
	}
	return best, inTopK, nil
}

// lexicalScores scores each chunk, given as its set of analysed terms
// (termSet), by the IDF-weighted share of the message's distinct analysed
// terms (lower-cased, stemmed, stop words out) that it contains; IDF is
// taken over the chunks scored. A score is in [0, 1]: 1 when the chunk has
// every term of the message.
func lexicalScores(msg string, sets []map[string]bool) []float64 {
	q := distinct(index.Analyze(msg))
	out := make([]float64, len(sets))
	if len(q) == 0 {
		return out
	}
	n := float64(len(sets))
	idf := make([]float64, len(q))
	total := 0.0
	for j, t := range q {
		d := 0.0
		for _, set := range sets {
			if set[t] {
				d++
			}
		}
		idf[j] = math.Log(1 + (n-d+0.5)/(d+0.5))
		total += idf[j]
	}
	for i, set := range sets {
		got := 0.0
		for j, t := range q {
			if set[t] {
				got += idf[j]
			}
		}
		out[i] = got / total
	}
	return out
}

func termSet(text string) map[string]bool {
	set := map[string]bool{}
	for _, t := range index.Analyze(text) {
		set[t] = true
	}
	return set
}

func distinct(terms []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// itemVectors caches context-item chunk vectors in memory and on disk
// (cache/context-vectors/ in the data directory), one file per chunk named
// by the SHA-256 of the model's id and the chunk's text, so a chunk is
// embedded once per model however often recall runs or the server starts.
type itemVectors struct {
	dir string
	// fill serialises lookups and embedding, so that concurrent recalls
	// embed a missing chunk once.
	fill sync.Mutex

	mu    sync.Mutex
	model string // the embedder's id, found once (see modelID)
	dim   int
	mem   map[string][]float32 // key -> vector
}

const itemVectorsDir = "cache/context-vectors"

// modelProbe is embedded once per store to tell models apart: two models
// (or versions) give different vectors for it.
const modelProbe = "vc-mcp context item cache: model probe sentence"

// ModelIdentifier is optionally implemented by an Embedder that knows its
// model's identity; without it, the store derives one from the vector the
// model gives a fixed probe sentence.
type ModelIdentifier interface {
	ModelID() string
}

func (v *itemVectors) modelID(ctx context.Context, s *Store) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.model != "" {
		return v.model, nil
	}
	out, err := s.opts.Embedder.Embed(ctx, []string{modelProbe})
	if err != nil {
		return "", err
	}
	if len(out) != 1 || len(out[0]) == 0 {
		return "", fmt.Errorf("embedder gave %d vectors for 1 text", len(out))
	}
	h := sha256.New()
	if mi, ok := s.opts.Embedder.(ModelIdentifier); ok {
		h.Write([]byte(mi.ModelID()))
	}
	for _, f := range out[0] {
		// Rounded, so that a model rerun on another CPU keeps its cache.
		binary.Write(h, binary.LittleEndian, int32(math.Round(float64(f)*1e4)))
	}
	v.model, v.dim = hex.EncodeToString(h.Sum(nil))[:16], len(out[0])
	return v.model, nil
}

// vectors returns the vectors of chunks, embedding (in one call) only
// those found neither in memory nor on disk. It reports how many it
// embedded.
func (v *itemVectors) vectors(ctx context.Context, s *Store, chunks []string) ([][]float32, int, error) {
	v.fill.Lock()
	defer v.fill.Unlock()
	model, err := v.modelID(ctx, s)
	if err != nil {
		return nil, 0, err
	}
	out := make([][]float32, len(chunks))
	keys := make([]string, len(chunks))
	var missing []int
	v.mu.Lock()
	for i, ch := range chunks {
		sum := sha256.Sum256([]byte(model + "\x00" + ch))
		keys[i] = hex.EncodeToString(sum[:])
		if vec, ok := v.mem[keys[i]]; ok {
			out[i] = vec
			continue
		}
		if vec := v.readFile(keys[i]); vec != nil {
			v.mem[keys[i]] = vec
			out[i] = vec
			continue
		}
		missing = append(missing, i)
	}
	v.mu.Unlock()
	if len(missing) == 0 {
		return out, 0, nil
	}
	texts := make([]string, len(missing))
	for j, i := range missing {
		texts[j] = chunks[i]
	}
	vecs, err := s.opts.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, 0, err
	}
	if len(vecs) != len(texts) {
		return nil, 0, fmt.Errorf("embedder gave %d vectors for %d texts", len(vecs), len(texts))
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for j, i := range missing {
		if len(vecs[j]) != v.dim {
			return nil, 0, fmt.Errorf("embedder gave a %d-dimensional vector, %d expected", len(vecs[j]), v.dim)
		}
		out[i] = vecs[j]
		v.mem[keys[i]] = vecs[j]
		if err := v.writeFile(keys[i], vecs[j]); err != nil {
			// Only the cache is lost: the vector is recomputed next time.
			s.log.Warn("caching a context item vector failed", "err", err)
		}
	}
	return out, len(missing), nil
}

func (v *itemVectors) path(key string) string { return filepath.Join(v.dir, key[:2], key+".f32") }

// readFile returns a cached vector, or nil when there is none or it is
// not v.dim floats. v.mu is held.
func (v *itemVectors) readFile(key string) []float32 {
	data, err := os.ReadFile(v.path(key))
	if err != nil || len(data) != 4*v.dim {
		return nil
	}
	vec := make([]float32, v.dim)
	for i := range vec {
		vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return vec
}

func (v *itemVectors) writeFile(key string, vec []float32) error {
	p := v.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(p), err)
	}
	data := make([]byte, 4*len(vec))
	for i, f := range vec {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(f))
	}
	return files.AtomicWrite(p, data)
}
