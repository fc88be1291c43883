package index

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Highlighting: fragments are cut from the caller's copy of a document's
// text around the byte spans a search matched (Hit.Matches). The index
// does not store the text.
const (
	fragmentSize  = 200 // target bytes per fragment, marks excluded
	fragmentLead  = 60  // bytes of context kept before the first match
	maxFragments  = 3
	fragmentMark  = "**"
	fragmentTrunc = "…"
)

type span struct{ start, end int }

// Span is a byte range [Start, End) of a document's text.
type Span struct{ Start, End int }

// Fragments returns up to three excerpts of text, the text the document
// was indexed with, around matches (Hit.Matches), in text order and with
// each match wrapped in **. Matches that do not fit text are ignored, so
// text that changed since it was indexed gives fewer marks, never a panic.
func Fragments(text string, matches []Span) []string {
	spans := make([]span, len(matches))
	for i, m := range matches {
		spans[i] = span{m.Start, m.End}
	}
	return fragments(strings.ToValidUTF8(text, "\uFFFD"), spans)
}

// fragments returns up to maxFragments excerpts of text, in text order,
// chosen by how many matches they hold, with each match wrapped in
// fragmentMark. Spans that do not fit text are ignored.
func fragments(text string, spans []span) []string {
	spans = cleanSpans(text, spans)
	if len(spans) == 0 {
		return nil
	}
	type window struct {
		start, end int
		spans      []span
	}
	var windows []window
	for i := 0; i < len(spans); {
		prevEnd := 0
		if n := len(windows); n > 0 {
			prevEnd = windows[n-1].end
		}
		start := max(wordStart(text, max(spans[i].start-fragmentLead, 0)), prevEnd)
		end := max(wordEnd(text, start+fragmentSize), spans[i].end)
		j := i
		for j < len(spans) && spans[j].end <= end {
			j++
		}
		windows = append(windows, window{start, end, spans[i:j]})
		i = j
	}
	if len(windows) > maxFragments {
		sort.SliceStable(windows, func(a, b int) bool { return len(windows[a].spans) > len(windows[b].spans) })
		windows = windows[:maxFragments]
		sort.Slice(windows, func(a, b int) bool { return windows[a].start < windows[b].start })
	}
	out := make([]string, 0, len(windows))
	for _, w := range windows {
		var sb strings.Builder
		if w.start > 0 {
			sb.WriteString(fragmentTrunc)
		}
		pos := w.start
		for _, s := range w.spans {
			sb.WriteString(text[pos:s.start])
			sb.WriteString(fragmentMark)
			sb.WriteString(text[s.start:s.end])
			sb.WriteString(fragmentMark)
			pos = s.end
		}
		sb.WriteString(text[pos:w.end])
		if w.end < len(text) {
			sb.WriteString(fragmentTrunc)
		}
		out = append(out, strings.TrimSpace(sb.String()))
	}
	return out
}

// cleanSpans drops spans outside text or off rune boundaries, sorts the
// rest and merges overlapping or touching ones.
func cleanSpans(text string, spans []span) []span {
	ok := spans[:0:0]
	for _, s := range spans {
		if s.start < 0 || s.end > len(text) || s.start >= s.end ||
			!utf8.RuneStart(text[s.start]) || (s.end < len(text) && !utf8.RuneStart(text[s.end])) {
			continue
		}
		ok = append(ok, s)
	}
	sort.Slice(ok, func(a, b int) bool { return ok[a].start < ok[b].start })
	var merged []span
	for _, s := range ok {
		if n := len(merged); n > 0 && s.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// wordStart moves i forward to the start of a word, so a fragment does
// not begin mid-word (unless the word is very long).
func wordStart(text string, i int) int {
	if i == 0 {
		return 0
	}
	for j := i; j < len(text) && j < i+20; j++ {
		if text[j-1] == ' ' || text[j-1] == '\n' || text[j-1] == '\t' {
			return j
		}
	}
	for i < len(text) && !utf8.RuneStart(text[i]) {
		i++
	}
	return i
}

// wordEnd moves i backward to the end of a word, within limits, and never
// past the end of text.
func wordEnd(text string, i int) int {
	if i >= len(text) {
		return len(text)
	}
	for j := i; j > 0 && j > i-20; j-- {
		if text[j] == ' ' || text[j] == '\n' || text[j] == '\t' {
			return j
		}
	}
	for i > 0 && !utf8.RuneStart(text[i]) {
		i--
	}
	return i
}
