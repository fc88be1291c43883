package index

import (
	"context"
	"fmt"
	"strings"

	"github.com/blevesearch/bleve/v2"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Limits applied to every Query.
const (
	DefaultLimit = 10
	MaxLimit     = 1000
	// maxTerms and maxPhrases bound the work one request can cause; terms
	// beyond them are ignored.
	maxTerms   = 256
	maxPhrases = 32
	// phraseBoost multiplies the score a matching phrase adds.
	phraseBoost = 2.0
)

// Query describes a search. Text and Phrases are plain text, never query
// syntax: they are analysed like indexed text and nothing else. Phrases
// without searchable terms (empty, stop words) are ignored, as are terms
// beyond the 256th and phrases beyond the 32nd.
type Query struct {
	Text           string   // terms are OR'ed and BM25-ranked
	Phrases        []string // exact phrases; each match adds to the score
	RequirePhrases bool     // every non-empty phrase must match
	Conversations  []string // empty = all conversations
	Kinds          []string // empty = all kinds
	Speaker        string   // optional, case-insensitive exact match
	// IDs, when not nil, admits only these documents (an empty list
	// admits none). The index holds no times: a caller filtering by time
	// names the documents in its range (timestamps are indexed as 16
	// prefix terms each, a third of a conversation index's size, for a
	// filter that only find_quote's since/until uses).
	IDs       []string
	Limit     int  // <= 0 means DefaultLimit; capped at MaxLimit
	Highlight bool // fill Hit.Matches (see Fragments)
	// DocText gives a document's text, which the index does not keep:
	// phrases and highlighting check it (phrase.go). Required with
	// Phrases or Highlight.
	DocText DocText
}

// Hit is one matching document, best first: its ID (the index stores
// nothing else of it; the caller knows its own ID scheme) and score.
type Hit struct {
	ID    string
	Score float64
	// Matches are the byte spans of the matched terms in the document's
	// text, in no particular order; only with Query.Highlight. The index
	// does not store the text: Fragments(text, h.Matches) cuts excerpts
	// from the caller's copy.
	Matches []Span
}

// Search runs q. A query with no searchable terms and no phrases (empty or
// stop words only) returns no hits and no error. Ties in score are broken
// by ID so that equal indexes give equal answers.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	return ix.search(ctx, q, false)
}

// search runs q; native runs phrases and highlighting on Bleve's term
// vectors instead, on an index that has them (tests compare the two).
func (ix *Index) search(ctx context.Context, q Query, native bool) ([]Hit, error) {
	if !native && q.DocText == nil && (q.Highlight || hasPhrase(q.Phrases)) {
		return nil, fmt.Errorf("index: search: phrases and highlighting need Query.DocText (the index keeps no text)")
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return nil, fmt.Errorf("index: search: %w", ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("index: search: %w", err)
	}
	bq, ok := buildQuery(q, native)
	if !ok || q.IDs != nil && len(q.IDs) == 0 {
		return nil, nil
	}
	if err := ix.sync(); err != nil {
		return nil, fmt.Errorf("index: search: %w", err)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	stats, err := ix.bm25Stats()
	if err != nil {
		return nil, fmt.Errorf("index: search: %w", err)
	}
	var hits []Hit
	if native {
		matches, err := ix.bleveSorted(ctx, bq, min(limit, MaxLimit), stats, q.Highlight)
		if err != nil {
			return nil, fmt.Errorf("index: search: %w", err)
		}
		hits = make([]Hit, 0, len(matches))
		for _, dm := range matches {
			h := Hit{ID: dm.ID, Score: dm.Score}
			if q.Highlight { // a phrase searcher keeps locations regardless
				for _, locs := range dm.Locations[fieldText] {
					for _, l := range locs {
						h.Matches = append(h.Matches, Span{Start: int(l.Start), End: int(l.End)})
					}
				}
			}
			hits = append(hits, h)
		}
		return hits, nil
	}
	if hits, err = ix.collect(ctx, bq, min(limit, MaxLimit), stats); err != nil {
		return nil, fmt.Errorf("index: search: %w", err)
	}
	if q.Highlight {
		terms, phrases := queryTerms(q)
		for i := range hits {
			if text, ok := q.DocText(hits[i].ID); ok {
				hits[i].Matches = highlight(text, terms, phrases)
			}
		}
	}
	return hits, nil
}

// bleveSorted runs bq through Bleve's own search, sorted by score and ID
// (what collect does faster), with the matched terms' locations when
// locations is set.
func (ix *Index) bleveSorted(ctx context.Context, bq query.Query, limit int, stats *bsearch.BM25Stats, locations bool) ([]*bsearch.DocumentMatch, error) {
	req := bleve.NewSearchRequestOptions(bq, limit, 0, false)
	req.SortBy([]string{"-_score", "_id"})
	req.IncludeLocations = locations
	req.PreSearchData = map[string]any{bsearch.BM25PreSearchDataKey: stats}
	res, err := ix.bi.SearchInContext(ctx, req)
	if err != nil {
		return nil, err
	}
	return res.Hits, nil
}

// hasPhrase reports whether any of ps has a searchable term.
func hasPhrase(ps []string) bool {
	for _, p := range ps {
		if len(Analyze(p)) > 0 {
			return true
		}
	}
	return false
}

// queryTerms returns the text terms and the phrases buildQuery searches for.
func queryTerms(q Query) (map[string]bool, [][]string) {
	terms := map[string]bool{}
	for _, t := range Analyze(q.Text) {
		if len(terms) == maxTerms {
			break
		}
		terms[t] = true
	}
	var phrases [][]string
	for _, p := range q.Phrases {
		pt := phraseTerms(strings.ToValidUTF8(p, "\uFFFD"))
		if len(pt) == 0 || len(phrases) == maxPhrases {
			continue
		}
		phrases = append(phrases, pt)
	}
	return terms, phrases
}

// buildQuery translates q into Bleve's query tree:
//
//	Conjunction{ filters..., Disjunction{terms..., phrases...} }
//	Boolean{ Must: {filters..., phrases...}, Should: terms }   with RequirePhrases
//
// Filters sit in the conjunction, so Bleve leapfrogs between their posting
// lists and the text's instead of scoring every text match and filtering
// afterwards (3-4x faster in BenchmarkSearch). Their boost is zero, so
// they add nothing to scores and do not change the query norm.
// ok is false when nothing is searchable.
func buildQuery(q Query, native bool) (bq query.Query, ok bool) {
	var terms []query.Query
	seen := make(map[string]bool)
	for _, t := range Analyze(q.Text) {
		if seen[t] || len(terms) == maxTerms {
			continue
		}
		seen[t] = true
		tq := query.NewTermQuery(t)
		tq.SetField(fieldText)
		terms = append(terms, tq)
	}
	var phrases []query.Query
	for _, p := range q.Phrases {
		p = strings.ToValidUTF8(p, "\uFFFD")
		if len(Analyze(p)) == 0 || len(phrases) == maxPhrases {
			continue
		}
		if !native {
			phrases = append(phrases, &phraseQuery{terms: phraseTerms(p), field: fieldText, boost: phraseBoost, text: q.DocText})
			continue
		}
		pq := query.NewMatchPhraseQuery(p)
		pq.SetField(fieldText)
		pq.SetBoost(phraseBoost)
		phrases = append(phrases, pq)
	}
	if len(terms) == 0 && len(phrases) == 0 {
		return nil, false
	}

	filters := filterQueries(q)
	if q.RequirePhrases && len(phrases) > 0 {
		return query.NewBooleanQuery(append(filters, phrases...), terms, nil), true
	}
	text := query.NewDisjunctionQuery(append(terms, phrases...))
	if len(filters) == 0 {
		return text, true
	}
	return query.NewConjunctionQuery(append(filters, text)), true
}

// filterQueries returns one zero-boost query per filter in q.
func filterQueries(q Query) []query.Query {
	var fs []query.Query
	if d := anyTerm(fieldConversation, q.Conversations, false); d != nil {
		fs = append(fs, d)
	}
	if d := anyTerm(fieldKind, q.Kinds, false); d != nil {
		fs = append(fs, d)
	}
	if s := normKeyword(q.Speaker); s != "" {
		fs = append(fs, anyTerm(fieldSpeaker, []string{s}, true))
	}
	if q.IDs != nil {
		d := query.NewDocIDQuery(q.IDs)
		d.SetBoost(0)
		fs = append(fs, d)
	}
	return fs
}

// anyTerm matches documents whose keyword field equals one of values.
func anyTerm(field string, values []string, normalized bool) query.Query {
	if len(values) == 0 {
		return nil
	}
	ds := make([]query.Query, 0, len(values))
	for _, v := range values {
		if normalized {
			v = normKeyword(v)
		}
		tq := query.NewTermQuery(v)
		tq.SetField(field)
		tq.SetBoost(0)
		ds = append(ds, tq)
	}
	if len(ds) == 1 {
		return ds[0]
	}
	d := query.NewDisjunctionQuery(ds)
	d.SetBoost(0)
	return d
}

// bm25AvgFieldLength is the average field length BM25 normalises by.
//
// Bleve estimates it as the sum over index segments of each segment's
// distinct terms, divided by the document count: a figure that changes
// with how documents happen to be spread over segments (merges, deleted
// versions of replaced documents), so the same documents scored
// differently before and after a rebuild or a background merge. A fixed
// figure makes scores a function of the documents alone; 2 is what Bleve's
// estimate settles at on a merged index of conversation turns.
const bm25AvgFieldLength = 2

// bm25Stats are the corpus statistics handed to Bleve's BM25 scorer.
func (ix *Index) bm25Stats() (*bsearch.BM25Stats, error) {
	n, err := ix.bi.DocCount()
	if err != nil {
		return nil, err
	}
	card := int(n) * bm25AvgFieldLength
	fields := map[string]int{}
	for _, f := range []string{fieldText, fieldConversation, fieldKind, fieldSpeaker} {
		fields[f] = card
	}
	return &bsearch.BM25Stats{DocCount: float64(n), FieldCardinality: fields}, nil
}
