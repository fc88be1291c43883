package index

import (
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/registry"
)

// englishAnalyzer is the analyzer of the text field: Unicode word
// segmentation, possessive 's stripped, lowercase, English stop words
// removed, Porter stemming. Bleve analyzers are stateless, so one is shared.
var englishAnalyzer = sync.OnceValue(func() analysis.Analyzer {
	a, err := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
	if err != nil {
		// The analyzer is compiled in; failing to build it is a programming error.
		panic("index: english analyzer: " + err.Error())
	}
	return a
})

// Analyze returns the terms the index derives from text, in order, with
// repeats: lowercased, stop words removed, stemmed. Query text goes through
// the same steps, so callers can use it to measure term overlap.
func Analyze(text string) []string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	if text == "" {
		return nil
	}
	tokens := englishAnalyzer().Analyze([]byte(text))
	if len(tokens) == 0 {
		return nil
	}
	terms := make([]string, len(tokens))
	for i, t := range tokens {
		terms[i] = string(t.Term)
	}
	return terms
}
