package tokens

import (
	"math"
	"unicode"
	"unicode/utf8"
)

// cl100k's pre-tokenizer, written out by hand.
//
// tiktoken-go splits text with its regular expression
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// run by a backtracking engine (regexp2), which is most of the cost of
// counting tokens: a quarter of the CPU of ingest and a third of recall's.
// cl100kPiece matches the same alternatives in the same order on runes, with
// the same character classes (\s = unicode.IsSpace, \p{L} = unicode.IsLetter,
// \p{N} = unicode.IsNumber, as regexp2 defines them), so the pieces, and then
// the tokens, are identical: TestCl100kParity checks it against tiktoken-go
// on real and generated text. Text that is not valid UTF-8 goes to
// tiktoken-go itself, which reads invalid bytes as U+FFFD.

// cl100kPiece returns the length in bytes of the piece starting at s[i:]
// (i < len(s)).
func cl100kPiece(s string, i int) int {
	r, w := utf8.DecodeRuneInString(s[i:])
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if r == '\'' {
		if n := contraction(s[i+1:]); n > 0 {
			return 1 + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if unicode.IsLetter(r) {
		return w + letterRun(s, i+w)
	}
	if r != '\r' && r != '\n' && !unicode.IsNumber(r) && i+w < len(s) {
		if r2, w2 := utf8.DecodeRuneInString(s[i+w:]); unicode.IsLetter(r2) {
			return w + w2 + letterRun(s, i+w+w2)
		}
	}
	// \p{N}{1,3}
	if unicode.IsNumber(r) {
		n := w
		for k := 1; k < 3 && i+n < len(s); k++ {
			r2, w2 := utf8.DecodeRuneInString(s[i+n:])
			if !unicode.IsNumber(r2) {
				break
			}
			n += w2
		}
		return n
	}
	// " ?[^\s\p{L}\p{N}]+[\r\n]*"
	j := i
	if r == ' ' {
		j = i + 1
	}
	if j < len(s) {
		if rj, wj := utf8.DecodeRuneInString(s[j:]); isSymbol(rj) {
			k := j + wj
			for k < len(s) {
				rk, wk := utf8.DecodeRuneInString(s[k:])
				if !isSymbol(rk) {
					break
				}
				k += wk
			}
			for k < len(s) && (s[k] == '\r' || s[k] == '\n') {
				k++
			}
			return k - i
		}
	}
	// Here r is white space: every other rune started a match above.
	// \s*[\r\n]+ : the run up to and including its last line break.
	e, lastBreak, lastStart := i, -1, i
	for e < len(s) {
		re, we := utf8.DecodeRuneInString(s[e:])
		if !unicode.IsSpace(re) {
			break
		}
		if re == '\r' || re == '\n' {
			lastBreak = e
		}
		lastStart = e
		e += we
	}
	if lastBreak >= 0 {
		return lastBreak + 1 - i
	}
	// \s+(?!\S) : the whole run at the end of the text, else all but its
	// last rune, which then starts the next piece (" word").
	if e == len(s) || lastStart == i {
		return e - i // (or \s+ for a single white-space rune)
	}
	return lastStart - i
}

// contraction matches the (?i:s|t|re|ve|m|ll|d) after an apostrophe.
func contraction(t string) int {
	if t == "" {
		return 0
	}
	switch t[0] | 0x20 {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if len(t) > 1 && t[1]|0x20 == 'e' {
			return 2
		}
	case 'l':
		if len(t) > 1 && t[1]|0x20 == 'l' {
			return 2
		}
	}
	return 0
}

func letterRun(s string, i int) int {
	n := 0
	for i+n < len(s) {
		r, w := utf8.DecodeRuneInString(s[i+n:])
		if !unicode.IsLetter(r) {
			break
		}
		n += w
	}
	return n
}

// isSymbol is [^\s\p{L}\p{N}].
func isSymbol(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.IsLetter(r) && !unicode.IsNumber(r)
}

// bpe is a byte-pair encoder over cl100k's ranks.
type bpe struct {
	ranks map[string]int
}

// count returns the number of tokens of text (valid UTF-8).
func (b *bpe) count(text string) int {
	n := 0
	for i := 0; i < len(text); {
		l := cl100kPiece(text, i)
		n += b.pieceCount(text[i : i+l])
		i += l
	}
	return n
}

// encode returns the tokens of text (valid UTF-8).
func (b *bpe) encode(text string) []int {
	out := make([]int, 0, len(text)/3+1)
	for i := 0; i < len(text); {
		l := cl100kPiece(text, i)
		out = b.appendPiece(out, text[i:i+l])
		i += l
	}
	return out
}

func (b *bpe) pieceCount(piece string) int {
	if _, ok := b.ranks[piece]; ok {
		return 1
	}
	return len(b.merge(piece, nil))
}

func (b *bpe) appendPiece(out []int, piece string) []int {
	if t, ok := b.ranks[piece]; ok {
		return append(out, t)
	}
	bounds := b.merge(piece, nil)
	for k, start := range bounds {
		end := len(piece)
		if k+1 < len(bounds) {
			end = bounds[k+1]
		}
		out = append(out, b.ranks[piece[start:end]])
	}
	return out
}

// longPiece is the piece length from which merge keeps its candidate
// pairs in a heap: the plain scan of every pair at every step is faster
// for the short pieces of prose, and quadratic in a piece's length (a
// 64 KB run of letters, a DNA sequence or a base-less blob, took a
// minute).
const longPiece = 256

// merge runs byte-pair merging on piece and returns the start offsets of
// its tokens: repeatedly join the adjacent pair whose joined bytes have the
// lowest rank (leftmost on ties) until no joined pair is a token.
func (b *bpe) merge(piece string, starts []int) []int {
	if len(piece) >= longPiece {
		return b.mergeLong(piece, starts)
	}
	return b.mergeShort(piece, starts)
}

// mergeShort is merge by a scan of every pair at every step.
func (b *bpe) mergeShort(piece string, starts []int) []int {
	starts = starts[:0]
	for i := 0; i < len(piece); i++ {
		starts = append(starts, i)
	}
	end := func(k int) int {
		if k+1 < len(starts) {
			return starts[k+1]
		}
		return len(piece)
	}
	for len(starts) > 1 {
		best, at := math.MaxInt, -1
		for k := 0; k+1 < len(starts); k++ {
			if r, ok := b.ranks[piece[starts[k]:end(k+1)]]; ok && r < best {
				best, at = r, k
			}
		}
		if at < 0 {
			break
		}
		starts = append(starts[:at+1], starts[at+2:]...)
	}
	return starts
}

// mergeLong is merge in O(n log n) for a piece of n bytes: the same
// merges in the same order. The parts are a linked list; every adjacent
// pair that is a token waits in a heap ordered by rank, then by the
// pair's start (leftmost on ties, as merge's scan). A merge changes the
// pairs on either side of it: their new forms are pushed, and an entry
// whose parts have changed since it was pushed is dropped when popped.
func (b *bpe) mergeLong(piece string, starts []int) []int {
	n := len(piece)
	// Part i starts at byte i (parts start where a byte does, and keep
	// their start); next[i] is the start of the part after it (n at the
	// end), prev[i] the one before (-1 at the start); a merged-away part
	// has next[i] == -1.
	next := make([]int, n)
	prev := make([]int, n)
	for i := range n {
		next[i], prev[i] = i+1, i-1
	}
	h := make(pairHeap, 0, n)
	push := func(i int) { // the pair of part i and the next one
		if i < 0 || next[i] >= n {
			return
		}
		end := next[next[i]]
		if r, ok := b.ranks[piece[i:end]]; ok {
			h.push(pair{rank: r, start: i, end: end})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(i)
	}
	for len(h) > 0 {
		p := h.pop()
		j := next[p.start]
		// Stale: the left part was merged away (-1) or has grown (then j
		// is the old end), or the right one has grown.
		if j < 0 || j >= n || next[j] != p.end {
			continue
		}
		// Join the right part j into the left one.
		next[p.start] = next[j]
		if next[j] < n {
			prev[next[j]] = p.start
		}
		next[j] = -1
		push(prev[p.start])
		push(p.start)
	}
	starts = starts[:0]
	for i := 0; i < n; i = next[i] {
		starts = append(starts, i)
	}
	return starts
}

// pair is a candidate merge of mergeLong: the parts from start to end.
type pair struct{ rank, start, end int }

// pairHeap is a min-heap of pairs by rank, then start.
type pairHeap []pair

func (h pairHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].start < h[b].start
}

func (h *pairHeap) push(p pair) {
	*h = append(*h, p)
	s := *h
	for i := len(s) - 1; i > 0; {
		up := (i - 1) / 2
		if !s.less(i, up) {
			break
		}
		s[i], s[up] = s[up], s[i]
		i = up
	}
}

func (h *pairHeap) pop() pair {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s.less(l, m) {
			m = l
		}
		if r < len(s) && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
