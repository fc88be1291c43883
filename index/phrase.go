package index

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/mapping"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/searcher"
	bindex "github.com/blevesearch/bleve_index_api"
)

// The index keeps no term vectors (positions and offsets, 40% of its
// bytes). Two things used them, both only for find_quote: phrases and
// highlighting. Both now read the document's text from the caller
// (Query.DocText: a turn's is in its master log) and analyse it again
// with the analyzer that indexed it, which gives the same terms at the
// same positions and byte offsets:
//
//   - A phrase is Bleve's own phrase search with the position check done
//     on the re-analysed text: the same conjunction of term searchers with
//     the same boost (so the same scores), keeping the documents where the
//     phrase's terms stand at consecutive positions (stop-word gaps as
//     Bleve leaves them), as Bleve's PhraseSearcher does with slop 0.
//   - Hit.Matches are what Bleve reported from the term vectors: every
//     occurrence of each query term the document holds, and the terms on
//     each path of each phrase it matches.
//
// TestPhrasesAsWithTermVectors compares both with Bleve's own on an index
// that has term vectors.

// DocText returns the text document id was indexed with; ok is false when
// the text cannot be had (the document then matches no phrase).
type DocText func(id string) (text string, ok bool)

// tokenPositions returns, for each term of text as the index analysed it,
// its tokens (positions and byte offsets).
func tokenPositions(text string) analysis.TokenStream {
	text = strings.ToValidUTF8(text, "\uFFFD")
	if text == "" {
		return nil
	}
	return englishAnalyzer().Analyze([]byte(text))
}

// phraseTerms analyses a phrase as Bleve's match-phrase query does: one
// slot per position from the first term to the last, "" for a position a
// stop word held.
func phraseTerms(p string) []string {
	tokens := englishAnalyzer().Analyze([]byte(p))
	if len(tokens) == 0 {
		return nil
	}
	first, last := tokens[0].Position, tokens[0].Position
	for _, t := range tokens {
		first, last = min(first, t.Position), max(last, t.Position)
	}
	out := make([]string, last-first+1)
	for _, t := range tokens {
		// The English analyzer gives one term per position.
		out[t.Position-first] = string(t.Term)
	}
	return out
}

// phrasePaths returns the starting token indexes of every occurrence of
// terms (a phraseTerms slot list) in tokens, with the tokens on each.
func phrasePaths(terms []string, tokens analysis.TokenStream) [][]int {
	if len(terms) == 0 {
		return nil
	}
	byPos := make(map[int]int, len(tokens)) // position -> token index
	for i, t := range tokens {
		byPos[t.Position] = i
	}
	var paths [][]int
	for i, t := range tokens {
		if string(t.Term) != terms[0] {
			continue
		}
		path := []int{i}
		for k := 1; k < len(terms) && path != nil; k++ {
			if terms[k] == "" {
				continue
			}
			j, ok := byPos[t.Position+k]
			if !ok || string(tokens[j].Term) != terms[k] {
				path = nil
				break
			}
			path = append(path, j)
		}
		if path != nil {
			paths = append(paths, path)
		}
	}
	return paths
}

// phraseQuery is a Bleve query for one phrase, checked on DocText.
type phraseQuery struct {
	terms []string // phraseTerms
	field string
	boost float64
	text  DocText
}

func (q *phraseQuery) Searcher(ctx context.Context, r bindex.IndexReader, _ mapping.IndexMapping, options bsearch.SearcherOptions) (bsearch.Searcher, error) {
	// As Bleve's phrase searcher: term searchers asking for term vectors
	// (there are none; asking keeps Bleve's conjunction as it builds it
	// for phrases), one per non-empty slot, in a conjunction.
	options.IncludeTermVectors = true
	var subs []bsearch.Searcher
	for _, t := range q.terms {
		if t == "" {
			continue
		}
		ts, err := searcher.NewTermSearcher(ctx, r, t, q.field, q.boost, options)
		if err != nil {
			for _, s := range subs {
				_ = s.Close()
			}
			return nil, fmt.Errorf("phrase: term searcher: %w", err)
		}
		subs = append(subs, ts)
	}
	must, err := searcher.NewConjunctionSearcher(ctx, r, subs, options)
	if err != nil {
		for _, s := range subs {
			_ = s.Close()
		}
		return nil, fmt.Errorf("phrase: conjunction searcher: %w", err)
	}
	s := &phraseSearcher{must: must, terms: q.terms, reader: r, text: q.text}
	// Bleve's phrase searcher sets its own norm first; a parent's
	// SetQueryNorm replaces it.
	s.must.SetQueryNorm(1.0 / math.Sqrt(s.must.Weight()))
	return s, nil
}

// phraseSearcher mirrors Bleve's PhraseSearcher (search_phrase.go) with the
// position check on the document's text.
type phraseSearcher struct {
	must        bsearch.Searcher
	terms       []string
	reader      bindex.IndexReader
	text        DocText
	curr        *bsearch.DocumentMatch
	initialized bool
}

func (s *phraseSearcher) advanceNext(ctx *bsearch.SearchContext) error {
	if s.curr != nil {
		ctx.DocumentMatchPool.Put(s.curr)
	}
	var err error
	s.curr, err = s.must.Next(ctx)
	return err
}

// matches reports whether the current document holds the phrase.
func (s *phraseSearcher) matches() bool {
	id, err := s.reader.ExternalID(s.curr.IndexInternalID)
	if err != nil {
		return false
	}
	text, ok := s.text(id)
	if !ok {
		return false
	}
	return len(phrasePaths(s.terms, tokenPositions(text))) > 0
}

func (s *phraseSearcher) Next(ctx *bsearch.SearchContext) (*bsearch.DocumentMatch, error) {
	if !s.initialized {
		if err := s.advanceNext(ctx); err != nil {
			return nil, err
		}
		s.initialized = true
	}
	for s.curr != nil {
		var rv *bsearch.DocumentMatch
		if s.matches() {
			rv, s.curr = s.curr, nil
			rv.FieldTermLocations = rv.FieldTermLocations[:0]
		}
		if err := s.advanceNext(ctx); err != nil {
			return nil, err
		}
		if rv != nil {
			return rv, nil
		}
	}
	return nil, nil
}

func (s *phraseSearcher) Advance(ctx *bsearch.SearchContext, id bindex.IndexInternalID) (*bsearch.DocumentMatch, error) {
	if !s.initialized {
		if err := s.advanceNext(ctx); err != nil {
			return nil, err
		}
		s.initialized = true
	}
	if s.curr != nil {
		if s.curr.IndexInternalID.Compare(id) >= 0 {
			return s.Next(ctx)
		}
		ctx.DocumentMatchPool.Put(s.curr)
	}
	if s.curr == nil {
		return nil, nil
	}
	var err error
	if s.curr, err = s.must.Advance(ctx, id); err != nil {
		return nil, err
	}
	return s.Next(ctx)
}

func (s *phraseSearcher) Close() error               { return s.must.Close() }
func (s *phraseSearcher) Weight() float64            { return s.must.Weight() }
func (s *phraseSearcher) SetQueryNorm(n float64)     { s.must.SetQueryNorm(n) }
func (s *phraseSearcher) Count() uint64              { return s.must.Count() }
func (s *phraseSearcher) Min() int                   { return 0 }
func (s *phraseSearcher) Size() int                  { return 64 + s.must.Size() }
func (s *phraseSearcher) DocumentMatchPoolSize() int { return s.must.DocumentMatchPoolSize() + 1 }

// highlight returns the byte spans Bleve's term vectors gave for a hit:
// every occurrence of the query terms the text holds, and the terms on the
// paths of the phrases it matches.
func highlight(text string, terms map[string]bool, phrases [][]string) []Span {
	tokens := tokenPositions(text)
	on := make([]bool, len(tokens))
	for i, t := range tokens {
		on[i] = terms[string(t.Term)]
	}
	for _, p := range phrases {
		for _, path := range phrasePaths(p, tokens) {
			for _, i := range path {
				on[i] = true
			}
		}
	}
	var out []Span
	for i, t := range tokens {
		if on[i] {
			out = append(out, Span{Start: t.Start, End: t.End})
		}
	}
	return out
}
