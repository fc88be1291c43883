package tagging

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// token is one word of a text, with what the tagger and the query
// classifier need to know about its surroundings.
type token struct {
	text string // as written, a trailing possessive 's removed
	low  string // lowercase text, curly apostrophes straightened
	pos  int    // byte offset in the text

	sentStart bool // first word of a sentence or line
	brk       bool // punctuation (a clause break) separates it from the previous word
	prevP     byte // last punctuation byte before it since the previous word, 0 if none
	nextP     byte // first punctuation byte after it, 0 if none

	cap     bool // starts with an upper-case letter
	allCaps bool // two or more letters, all upper case (an acronym)
	digit   bool // contains a digit
	alpha   bool // contains a letter
	ident   bool // looks like code: inner '.', '_', camelCase, letters mixed with digits, or `quoted`
	code    bool // inside a ``` fence

	lex uint16 // word classes (see lex)
}

// tokenize splits text into words. Letters and digits (any script) make
// words; an apostrophe, '-', '.', '_' joins two word characters. Sentence
// ends are '.', '!', '?' or ':' followed by a space, and newlines.
func tokenize(text string, buf []token) []token {
	toks := buf[:0]
	sent := true  // next word starts a sentence
	brk := false  // punctuation seen since the last word
	var last byte // last punctuation byte since the last word
	inTick, inFence := false, false
	i := 0
	for i < len(text) {
		c := text[i]
		if c == '`' {
			if strings.HasPrefix(text[i:], "```") {
				inFence = !inFence
				i += 3
				sent, brk = true, true
				continue
			}
			inTick = !inTick
			i++
			brk = true
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		if !isWordRune(r) {
			switch {
			case c == '\n':
				sent, brk = true, true
				last = '\n'
			case c == ' ' || c == '\t' || c == '\r':
			case c == '.' || c == '!' || c == '?' || c == ':':
				if i+1 >= len(text) || isSpaceOrQuote(text[i+1]) {
					sent = true
				}
				brk = true
				last = c
			default:
				brk = true
				if c < utf8.RuneSelf {
					last = c
				} else {
					last = '*'
				}
			}
			if n := len(toks); n > 0 && toks[n-1].nextP == 0 && last != 0 {
				toks[n-1].nextP = last
			}
			i += size
			continue
		}
		// A word: word runes, with single joiners between word runes.
		start := i
		hasUpperInside, hasLower := false, false
		t := token{pos: start, sentStart: sent, brk: brk, prevP: last, ident: inTick, code: inFence}
		first, curly := true, false // curly: joined by a ’
		for i < len(text) {
			c := text[i]
			r, size := rune(c), 1
			if c >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(text[i:])
			}
			if isWordRune(r) {
				switch {
				case unicode.IsUpper(r):
					if first {
						t.cap = true
					} else {
						hasUpperInside = true
					}
				case unicode.IsDigit(r):
					t.digit = true
				default:
					t.alpha = true
					hasLower = true
				}
				if unicode.IsUpper(r) {
					t.alpha = true
				}
				first = false
				i += size
				continue
			}
			// A joiner must sit between two word runes.
			if c == '\'' || c == '-' || c == '.' || c == '_' || r == '’' {
				j := i + size
				if j < len(text) {
					r2, _ := utf8.DecodeRuneInString(text[j:])
					if isWordRune(r2) {
						if c == '.' || c == '_' {
							t.ident = true
						}
						curly = curly || r == '’'
						i = j
						continue
					}
				}
			}
			break
		}
		t.text = text[start:i]
		if strings.HasSuffix(t.text, "'s") {
			t.text = t.text[:len(t.text)-2]
		} else if strings.HasSuffix(t.text, "’s") {
			t.text = t.text[:len(t.text)-len("’s")]
		}
		if t.text == "" {
			continue
		}
		t.low = strings.ToLower(t.text)
		if curly && strings.Contains(t.low, "’") { // only a joiner can be one
			t.low = strings.ReplaceAll(t.low, "’", "'")
		}
		t.lex = lex[t.low]
		if hasUpperInside && hasLower {
			t.ident = true // camelCase, iPhone
		}
		if t.cap && !hasLower && t.alpha && len(t.text) >= 2 {
			t.allCaps = true
		}
		if t.digit && t.alpha {
			t.ident = true
		}
		if !t.alpha {
			t.ident = false // 3.5, 2023-05-08
		}
		toks = append(toks, t)
		sent, brk, last = false, false, 0
	}
	return toks
}

// Tokens is a text split into words once, for a caller that asks several
// things of the same text (the extractive summariser wants each sentence's
// terms, dates and tags): Terms, FindDates and Keyword.TagTokens answer as
// Terms, FindDates and Keyword.Tag do on the text, without splitting it
// again. The zero value holds the empty text. Reset reuses a Tokens' memory
// for the next text; a Tokens is not safe for concurrent use.
type Tokens struct {
	text string
	toks []token
}

// Reset makes t hold text.
func (t *Tokens) Reset(text string) {
	if t.toks == nil {
		t.toks = make([]token, 0, 64)
	}
	t.text = text
	t.toks = tokenize(text, t.toks[:0])
}

// Terms is Terms(text) of the text t holds.
func (t *Tokens) Terms() []string { return terms(t.toks) }

// FindDates is FindDates(text, now) of the text t holds.
func (t *Tokens) FindDates(now time.Time) []DateMention { return dateMentions(t.text, t.toks, now) }

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func isSpaceOrQuote(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '"' || c == '\'' || c == ')' || c >= utf8.RuneSelf
}

// Terms returns the content words of text, lowercased, without stop words
// or duplicates, in order of first appearance. Query classification and the
// extractive summariser share it.
func Terms(text string) []string {
	var buf [64]token
	return terms(tokenize(text, buf[:0]))
}

// terms is Terms of a text tokenized as toks.
func terms(toks []token) []string {
	out := make([]string, 0, len(toks)/2)
	seen := make(map[string]struct{}, len(toks))
	for i := range toks {
		w := toks[i].low
		if !toks[i].alpha && !toks[i].digit || isFunction(w) || termNoise(w) {
			continue
		}
		if _, ok := seen[w]; ok {
			continue
		}
		seen[w] = struct{}{}
		out = append(out, w)
	}
	return out
}

// termNoise are words that carry nothing for retrieval beyond the function
// words: chit-chat and the verbs of asking about a conversation.
var termNoiseWords = set(`
ok okay hi hello hey thanks thank please sure yeah lol um uh oh
tell remind recall remember discuss discussed discussing talk talked talking say said mention
mentioned know think want get got go going like
`)
