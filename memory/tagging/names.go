package tagging

import "strings"

// Names returns what a text names: its proper nouns (capitalised words
// that do not start a sentence, and acronyms), runs of them joined ("New
// York", "Lord of the Rings" stays "Lord" and "Rings"), and quoted titles
// ("Little Women", 'Embracing Identity'). Words that are capitalised for
// other reasons are left out: "I", function and generic words, greetings,
// months and weekdays. skip lists names (lowercased) the caller knows already, e.g. the
// conversation's speakers. It does no I/O and never fails.
func Names(text string, skip map[string]bool) []string {
	var buf [64]token
	toks := tokenize(text, buf[:0])
	var out []string
	add := func(s string) {
		if s == "" || skip[strings.ToLower(s)] {
			return
		}
		for _, o := range out {
			if strings.EqualFold(o, s) {
				return
			}
		}
		out = append(out, s)
	}
	for i := range toks {
		t := &toks[i]
		if !t.alpha || !isProper(*t) || t.low == "i" || isFunction(t.low) || isGeneric(t.low) || isGreeting(t.low) {
			continue
		}
		if _, ok := monthNames[t.low]; ok {
			continue
		}
		if _, ok := weekdayNames[t.low]; ok {
			continue
		}
		// Join a run of proper nouns with nothing between them.
		if i > 0 && len(out) > 0 && !t.brk && toks[i-1].alpha && isProper(toks[i-1]) &&
			strings.EqualFold(out[len(out)-1], toks[i-1].text) {
			out[len(out)-1] += " " + t.text
			continue
		}
		add(t.text)
	}
	for _, q := range quoted(text) {
		add(q)
	}
	return out
}

// quoted returns the spans of text between double quotes (straight or
// curly), and between single quotes that open after a space and close
// before one (so apostrophes are not taken for quotes), of 1 to 8 words.
func quoted(text string) []string {
	var out []string
	for _, pair := range [...][2]string{{`"`, `"`}, {"\u201c", "\u201d"}, {"'", "'"}, {"\u2018", "\u2019"}} {
		rest := text
		for {
			a := strings.Index(rest, pair[0])
			if a < 0 {
				break
			}
			if pair[0] == "'" && a > 0 && rest[a-1] != ' ' {
				rest = rest[a+1:]
				continue
			}
			inner := rest[a+len(pair[0]):]
			b := strings.Index(inner, pair[1])
			if b < 0 {
				break
			}
			if pair[1] == "'" {
				// The closing quote ends a word: a space, punctuation or the end follows.
				for b >= 0 && b+1 < len(inner) && !strings.ContainsRune(" .,!?;:)", rune(inner[b+1])) {
					nb := strings.Index(inner[b+1:], "'")
					if nb < 0 {
						b = -1
						break
					}
					b += 1 + nb
				}
				if b < 0 {
					break
				}
			}
			span := strings.TrimSpace(inner[:b])
			if n := len(strings.Fields(span)); n >= 1 && n <= 8 {
				out = append(out, strings.Trim(span, ".,!?;:"))
			}
			rest = inner[b+len(pair[1]):]
		}
	}
	return out
}
