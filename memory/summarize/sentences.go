package summarize

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// splitSentences splits text into sentences: at line breaks, and after '.',
// '!' or '?' followed by a space and a letter, digit or quote, unless the
// word before a '.' is a common abbreviation or an initial. Fenced
// code blocks are dropped (they summarise badly); list markers are trimmed.
func splitSentences(text string) []string {
	var out []string
	inFence := false
	for line := range strings.SplitSeq(text, "\n") {
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "```") {
			inFence = !inFence
			continue
		}
		if inFence || trim == "" {
			continue
		}
		trim = trimListMarker(trim)
		start := 0
		for i := 0; i < len(trim); i++ {
			c := trim[i]
			if c != '.' && c != '!' && c != '?' {
				continue
			}
			j := i + 1
			for j < len(trim) && (trim[j] == '.' || trim[j] == '!' || trim[j] == '?' || trim[j] == '"' || trim[j] == '\'' || trim[j] == ')') {
				j++
			}
			if j >= len(trim) || trim[j] != ' ' {
				i = j - 1
				continue
			}
			k := j
			for k < len(trim) && trim[k] == ' ' {
				k++
			}
			if k >= len(trim) {
				break
			}
			// A '!' or '?' always ends a sentence (chat is often
			// lower case); a '.' before a lower-case word only after a
			// word that is no abbreviation.
			r, _ := utf8.DecodeRuneInString(trim[k:])
			if c == '.' && !(unicode.IsUpper(r) || unicode.IsDigit(r) || r == '"' || r == '\'' || r == '(' || r == '*' || r == '`') && !unicode.IsLower(r) {
				i = j - 1
				continue
			}
			if c == '.' && abbreviation(trim[start:i]) {
				i = j - 1
				continue
			}
			if s := strings.TrimSpace(trim[start:j]); s != "" {
				out = append(out, s)
			}
			start = k
			i = k - 1
		}
		if s := strings.TrimSpace(trim[start:]); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// trimListMarker removes "- ", "* ", "• ", "1. ", "2) " from a line's start.
func trimListMarker(s string) string {
	for _, m := range []string{"- ", "* ", "• ", "+ "} {
		if strings.HasPrefix(s, m) {
			return strings.TrimSpace(s[len(m):])
		}
	}
	i := 0
	for i < len(s) && i < 3 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(s) && (s[i] == '.' || s[i] == ')') && s[i+1] == ' ' {
		return strings.TrimSpace(s[i+2:])
	}
	return s
}

// abbreviation reports whether the text before a '.' ends in a word that
// does not end a sentence ("Dr", "e.g", "vs", an initial).
func abbreviation(before string) bool {
	k := strings.LastIndexAny(before, " (") + 1
	w := strings.ToLower(before[k:])
	switch w {
	case "dr", "mr", "mrs", "ms", "prof", "st", "vs", "etc", "e.g", "i.e", "eg", "ie", "no", "approx", "inc", "ltd", "jr", "sr", "fig", "cf", "al":
		return true
	}
	return len(w) == 1 && w[0] >= 'a' && w[0] <= 'z'
}

// splitLabel splits "Caroline: text" into the speaker label and the text,
// for segment summaries rolled up into tag summaries.
func splitLabel(line string) (label, text string) {
	i := strings.Index(line, ": ")
	if i <= 0 || i > 40 {
		return "", line
	}
	l := line[:i]
	r, _ := utf8.DecodeRuneInString(l)
	if !unicode.IsUpper(r) || strings.ContainsAny(l, ".!?:;,\"") || len(strings.Fields(l)) > 3 {
		return "", line
	}
	return l, line[i+2:]
}
