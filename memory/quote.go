package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vc-mcp/vc-mcp/index"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

const (
	defaultQuotes = 5
	maxQuotes     = 50
	excerptChars  = 240
)

// FindQuote searches every stored original turn (find_quote). Each hit
// carries an excerpt with the matched terms marked, who said it and when,
// its tags, and its master-log reference (file and byte range).
func (s *Store) FindQuote(ctx context.Context, req FindQuoteRequest) (FindQuoteResult, error) {
	ctx, end, err := s.begin(ctx, opRead)
	if err != nil {
		return FindQuoteResult{}, err
	}
	defer end()
	res := FindQuoteResult{Query: req.Query, Quotes: []Quote{}}
	query := strings.TrimSpace(req.Query)
	if query == "" {
		return res, fmt.Errorf("%w: query must not be empty", ErrInvalid)
	}
	if !utf8.ValidString(query) {
		return res, fmt.Errorf("%w: query is not valid UTF-8", ErrInvalid)
	}
	n := req.MaxResults
	if n == 0 {
		n = defaultQuotes
	}
	if n < 1 || n > maxQuotes {
		return res, fmt.Errorf("%w: max_results must be between 1 and %d (got %d)", ErrInvalid, maxQuotes, req.MaxResults)
	}
	if !req.Since.IsZero() && !req.Until.IsZero() && req.Until.Before(req.Since) {
		return res, fmt.Errorf("%w: until (%s) is before since (%s)", ErrInvalid, req.Until.Format("2006-01-02T15:04:05Z07:00"), req.Since.Format("2006-01-02T15:04:05Z07:00"))
	}
	convs, unread, err := s.scopeConvs(ctx, req.ConversationID, req.Scope)
	res.Note = unread
	if err != nil || len(convs) == 0 {
		return res, err
	}
	byID := map[string]*conv{}
	ids := make([]string, len(convs))
	for i, c := range convs {
		byID[c.id], ids[i] = c, c.id
		c.mu.RLock()
		defer c.mu.RUnlock()
	}
	iq := index.Query{Text: query, Conversations: ids, Kinds: []string{"turn"}, Speaker: req.Speaker,
		IDs: turnsInRange(convs, req.Since, req.Until), Limit: n, Highlight: true}
	texts := &quoteTexts{byID: byID, read: map[string]string{}}
	iq.DocText = texts.text
	// A multi-word query is also tried as a phrase: exact quotes rank first.
	if words := strings.Fields(strings.Trim(query, `"'“”`)); len(words) > 1 && len(words) <= 12 {
		iq.Phrases = []string{strings.Join(words, " ")}
	}
	if res.CatchingUp, res.IndexedThrough = catchingUp(convs); res.CatchingUp {
		res.Note = strings.TrimSpace(catchingUpNote(res.IndexedThrough) + " " + unread)
	}
	hits, err := s.ix.Search(ctx, iq)
	if err != nil {
		return res, fmt.Errorf("search: %w", err)
	}
	for _, h := range hits {
		// The index stores nothing but the document's ID.
		conv, seq, ok := parseTurnDocID(h.ID)
		c := byID[conv]
		if !ok || c == nil {
			continue
		}
		t := c.turn(seq)
		if t == nil {
			continue
		}
		// The index keeps no text: the excerpt is cut from the master log,
		// the text the turn was indexed with (read once: the index's
		// highlighting read it already).
		content, err := texts.content(h.ID, c, t)
		if errors.Is(err, masterlog.ErrDamaged) {
			s.log.Warn("master log: damaged record left out of find_quote", "conversation", c.id, "turn", turnID(t.Seq), "err", err)
			continue
		}
		if err != nil {
			return res, err
		}
		excerpt := strings.Join(index.Fragments(content, h.Matches), " … ")
		if excerpt == "" {
			excerpt = clip(content, excerptChars)
		}
		file := s.refPath(c.log.Path())
		res.Quotes = append(res.Quotes, Quote{
			TurnID: turnID(t.Seq), ConversationID: c.id, Role: t.Role, Speaker: t.Name, Timestamp: t.When,
			Excerpt: excerpt, Tags: nonNil(t.Tags), Ref: LogRef{File: file, Start: t.Start, End: t.End},
			Score: h.Score, Match: "lexical",
		})
	}
	if len(res.Quotes) < n && s.embedderReady() {
		sem, err := s.semanticQuotes(ctx, convs, query, req, n-len(res.Quotes), res.Quotes)
		if err != nil {
			s.log.Warn("semantic quote search failed; lexical hits only", "err", err)
		}
		res.Quotes = append(res.Quotes, sem...)
	}
	return res, nil
}

// quoteTexts gives the index a turn's text from its master log record (the
// index keeps none; phrases and highlighting read it) and keeps what it
// read for the excerpts. The conversations' read locks are held.
type quoteTexts struct {
	byID map[string]*conv
	mu   sync.Mutex
	read map[string]string // document id -> content
}

func (x *quoteTexts) text(id string) (string, bool) {
	conv, seq, ok := parseTurnDocID(id)
	c := x.byID[conv]
	if !ok || c == nil {
		return "", false
	}
	t := c.turn(seq)
	if t == nil {
		return "", false
	}
	content, err := x.content(id, c, t)
	return content, err == nil
}

// content returns turn t's content (document id), read from c's log once.
func (x *quoteTexts) content(id string, c *conv, t *turnMeta) (string, error) {
	x.mu.Lock()
	content, ok := x.read[id]
	x.mu.Unlock()
	if ok {
		return content, nil
	}
	content, err := c.log.ReadContent(t.Start, t.End)
	if err != nil {
		return "", err
	}
	x.mu.Lock()
	x.read[id] = content
	x.mu.Unlock()
	return content, nil
}

// turnsInRange names the index documents of the turns of convs said
// within [since, until] (inclusive; a zero end is open), or nil when
// every turn is (no filter). The index holds no times, so a time filter
// is this list. The conversations' read locks are held.
func turnsInRange(convs []*conv, since, until time.Time) []string {
	if since.IsZero() && until.IsZero() {
		return nil
	}
	ids := []string{}
	all := true
	for _, c := range convs {
		for i := range c.turns {
			t := &c.turns[i]
			if !since.IsZero() && t.When.Before(since) || !until.IsZero() && t.When.After(until) {
				all = false
				continue
			}
			if !t.Empty {
				ids = append(ids, turnDocID(c.id, t.Seq))
			}
		}
	}
	if all {
		return nil
	}
	return ids
}

// semanticQuoteMin is the least cosine for a turn to be offered as a
// semantic match when the words do not match. Calibrated on the real
// all-MiniLM-L6-v2 with the sentence pairs of testdata/calibration.json
// (TestRealCalibration*): unrelated sentences score at most 0.23 (p95
// 0.20), later references to a turn in drifted words ("that caching trick
// for the feed") median 0.38. At 0.28, 13 of 15 drifted references pass,
// 0 of 25 unrelated and 6 of 15 merely topic-related pairs; the old 0.35
// kept only 9 of 15 drifted references.
const semanticQuoteMin = 0.28

// semanticQuotes supplements lexical hits with turns close in meaning, when
// the model is confident in them, honouring the same filters. The
// conversations' read locks are held.
func (s *Store) semanticQuotes(ctx context.Context, convs []*conv, query string, req FindQuoteRequest, n int, have []Quote) ([]Quote, error) {
	qv := s.queryVector(ctx, query)
	if qv == nil {
		return nil, nil
	}
	seen := map[string]bool{}
	for _, q := range have {
		seen[q.ConversationID+"/"+q.TurnID] = true
	}
	var out []Quote
	for _, c := range convs {
		seqs, sims, conf := denseScores(c, qv, 4*n+8)
		if conf <= 0 {
			continue
		}
		for i, seq := range seqs {
			t := c.turn(seq)
			if sims[i] < semanticQuoteMin || seen[c.id+"/"+turnID(seq)] || t == nil {
				continue
			}
			if req.Speaker != "" && !strings.EqualFold(req.Speaker, t.Name) ||
				!req.Since.IsZero() && t.When.Before(req.Since) || !req.Until.IsZero() && t.When.After(req.Until) {
				continue
			}
			content, err := c.log.ReadContent(t.Start, t.End)
			if err != nil {
				return out, err
			}
			file := s.refPath(c.log.Path())
			out = append(out, Quote{
				TurnID: turnID(seq), ConversationID: c.id, Role: t.Role, Speaker: t.Name, Timestamp: t.When,
				Excerpt: clip(content, excerptChars), Tags: nonNil(t.Tags), Ref: LogRef{File: file, Start: t.Start, End: t.End},
				Score: float64(sims[i]), Match: "semantic",
			})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
