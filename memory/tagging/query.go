package tagging

import (
	"strconv"
	"strings"
	"time"
)

// Query is what a recall message asks for, read without a model.
type Query struct {
	// Broad: an overview request with no topic of its own ("what did we
	// discuss?", "recap", "summarize everything").
	Broad bool
	// Temporal: the message points at a position or a period in time
	// ("the first thing we discussed", "last time", "in May 2023").
	Temporal bool
	// Order is "first" (earliest first) or "last" (most recent first) when
	// the message asks for one end of the conversation, "" otherwise.
	Order string
	// Since and Until bound the dates the message mentions: Since inclusive,
	// Until exclusive, both zero if none. "before X" sets only Until,
	// "after X" and "since X" only Since.
	Since, Until time.Time
	// Speakers are the capitalised names in the message, as written. The
	// caller keeps those that are known speakers.
	Speakers []string
	// Terms are the content words, lowercased, without stop words, date
	// words or the words of asking about a conversation.
	Terms []string
	// When: the message asks for a time ("when", "what date", "how long ago").
	When bool
	// List: the message asks for several things of one kind ("What books
	// has Tim read?", "Which cities has Jon visited?", "What are the names
	// of John's children?"): a wh-word, then a plural noun or "kinds of"
	// before the verb. Its answer is gathered from many places, each
	// naming one instance.
	List bool
	// Kind is a list question's noun phrase for the kind it asks about,
	// as written ("books", "European countries", "interests" for "what
	// kinds of interests"); "" when List is false or the kind says nothing
	// ("things", "ways").
	Kind string
	// Choices are the alternatives of a question that offers two ("Would
	// Melanie prefer a national park or a theme park?": "national park",
	// "theme park"), as written; nil if none, or "yes or no".
	Choices []string
}

// ClassifyQuery reads a recall message. Relative dates ("yesterday", "2
// weeks ago", "last month") are resolved against now, in now's location.
// It does no I/O and never fails.
func ClassifyQuery(text string, now time.Time) Query {
	var buf [64]token
	toks := tokenize(text, buf[:0])
	var q Query
	q.Order = detectOrder(toks)
	q.When = detectWhen(toks)
	q.List, q.Kind = detectList(toks)
	q.Choices = detectChoices(toks)

	used := make([]bool, len(toks))
	for _, d := range findDates(toks, now) {
		for j := d.a; j < d.b; j++ {
			used[j] = true
		}
		start, end := d.start, d.end
		switch d.rel {
		case "before":
			start, end = time.Time{}, start
		case "after":
			start, end = end, time.Time{}
		case "since":
			end = time.Time{}
		}
		if !start.IsZero() && (q.Since.IsZero() || start.Before(q.Since)) {
			q.Since = start
		}
		if !end.IsZero() && end.After(q.Until) {
			q.Until = end
		}
	}
	seen := make(map[string]bool, len(toks))
	topical := 0
	for i := range toks {
		t := &toks[i]
		if used[i] || !t.alpha && !t.digit {
			continue
		}
		w := t.low
		if t.cap && !t.allCaps && t.alpha && !isFunction(w) && !isGeneric(w) && !isCue(w) && !termNoise(w) &&
			(!t.sentStart || !isQueryVerb(w)) {
			if !seen["S"+t.text] {
				seen["S"+t.text] = true
				q.Speakers = append(q.Speakers, t.text)
			}
		}
		if isFunction(w) || termNoise(w) || isCue(w) {
			continue
		}
		if _, ok := monthNames[w]; ok {
			continue
		}
		if !seen[w] {
			seen[w] = true
			q.Terms = append(q.Terms, w)
			if !isGeneric(w) {
				topical++
			}
		}
	}
	q.Broad = detectBroad(toks) && topical == 0
	q.Temporal = q.Order != "" || !q.Since.IsZero() || !q.Until.IsZero() || mentionsAgo(toks)
	return q
}

// cueWords are the words of asking about the conversation itself; they are
// not topic terms.
var cueWords = set(`
summarize summarise summarized summary summaries recap recaps overview rundown roundup recapitulate
discuss discussed discussing discussion discussions talk talked talking chat chatted chatting
cover covered covering conversation conversations session sessions everything topics topic
earlier before previously far beginning start started first last latest recent recently lately
originally initially early earliest remind recall remember mention mentioned said say
what's anything things stuff thing whole points point key main highlights
`)

// isQueryVerb: sentence-initial imperative or question words that are
// capitalised only because they start the sentence.
func isQueryVerb(w string) bool {
	switch w {
	case "tell", "show", "give", "list", "find", "remind", "summarize", "summarise", "recap", "describe",
		"explain", "search", "look", "help", "can", "could", "did", "does", "do", "was", "were", "is", "are":
		return true
	}
	return false
}

// has reports whether the tokens from i on read words, each word a list of
// "a|b" alternatives.
func has(toks []token, i int, words ...string) bool {
	if i < 0 || i+len(words) > len(toks) {
		return false
	}
	for j, w := range words {
		if !alt(toks[i+j].low, w) {
			return false
		}
	}
	return true
}

// alt matches w against "a|b|c".
func alt(w, pattern string) bool {
	for {
		k := strings.IndexByte(pattern, '|')
		if k < 0 {
			return w == pattern
		}
		if w == pattern[:k] {
			return true
		}
		pattern = pattern[k+1:]
	}
}

func hasAnywhere(toks []token, words ...string) bool {
	for i := range toks {
		if has(toks, i, words...) {
			return true
		}
	}
	return false
}

const discussVerbs = "discuss|discussed|discussing|talk|talked|talking|cover|covered|covering|chat|chatted|chatting|said|say|mention|mentioned|decide|decided|do|did|done"

// detectBroad reports an overview request. ClassifyQuery also requires that
// the message name no topic.
func detectBroad(toks []token) bool {
	for i := range toks {
		if toks[i].lex&tBroad == 0 {
			continue
		}
		w := toks[i].low
		switch {
		case alt(w, "summarize|summarise|summary|recap|overview|rundown|roundup|recapitulate|tldr|tl;dr"):
			return true
		case has(toks, i, "sum|catch|fill|bring", "me|us|up|it", "up|in|to"),
			has(toks, i, "sum", "up"),
			has(toks, i, "where", "were", "we"),
			has(toks, i, "where", "did", "we", "leave|stop"),
			has(toks, i, "go|went", "over", "everything|all"),
			has(toks, i, "remind", "me", "what|everything|about"),
			has(toks, i, "everything", "we|you|i"),
			has(toks, i, "all", "the", "topics|things|stuff"),
			has(toks, i, "what", "topics|subjects"),
			has(toks, i, "what", "have|did|were|had", "we|you|i", "been|just", discussVerbs+"|working"),
			has(toks, i, "what", "have|did|were|had", "we|you|i", discussVerbs+"|work|worked|working|go|gone"),
			has(toks, i, "what", "we", "have|'ve|did", discussVerbs),
			has(toks, i, "what", "we've|we'd|we're", discussVerbs+"|been"):
			return true
		}
	}
	return false
}

// listAux are the verbs that end a list question's head ("what books
// HAS Tim read"). A modal ends it too, but makes it no list: "what fields
// WOULD Caroline pursue" asks what someone is inclined to, which no turn
// lists by name.
const (
	listAux   = "has|have|had|does|do|did|is|are|was|were"
	listModal = "would|could|might|should|will|can|may|must"
)

// detectList finds a question for several things of one kind: "what" or
// "which", then a plural noun and the verb ("what books has", "which
// European countries has", "what kinds of interests do"); or "what are the"
// and a plural ("what are the names of"). A modal verb makes it no list
// (see listModal). A plural-looking word right
// before a name is a verb ("what inspires Joanna"): the head must end at
// the verb. kind is the noun phrase before the verb (see Query.Kind).
func detectList(toks []token) (list bool, kind string) {
	i := 0
	if i < len(toks) && alt(toks[i].low, "in|on|at|from|with|for|to") {
		i++
	}
	if i >= len(toks) || !alt(toks[i].low, "what|which") {
		return false, ""
	}
	i++
	if has(toks, i, "are|were", "the|some") {
		if i+2 >= len(toks) || !plural(toks[i+2].low) {
			return false, ""
		}
		// "what are the names of John's children": the kind is what
		// follows "of", past a possessor.
		j := i + 2
		if alt(toks[j].low, listVague) && has(toks, j+1, "of") {
			j += 2
			if j+1 < len(toks) && toks[j].cap && !toks[j+1].brk {
				j++
			}
		}
		if j >= len(toks) {
			return true, ""
		}
		return true, kindOf(toks[j : j+1])
	}
	seen := false
	for j := i; j < len(toks) && j < i+5; j++ {
		w := toks[j].low
		if toks[j].brk || alt(w, listModal) {
			return false, ""
		}
		if alt(w, listAux) {
			if !seen {
				return false, ""
			}
			return true, kindOf(toks[i:j])
		}
		seen = seen || plural(w)
	}
	return false, ""
}

// detectChoices finds "A or B" in a question: each side runs from "or"
// to the nearest function word (an article, a preposition, a verb of
// asking) or clause break, at most four words.
func detectChoices(toks []token) []string {
	for i := 1; i+1 < len(toks); i++ {
		if toks[i].low != "or" || toks[i].brk || toks[i+1].brk {
			continue
		}
		a := i
		for a > 0 && i-a < 4 && !toks[a].brk && !isFunction(toks[a-1].low) {
			a--
			if toks[a].brk {
				break
			}
		}
		b := i + 1
		for b < len(toks) && isFunction(toks[b].low) && !toks[b].brk {
			b++
		}
		e := b
		for e < len(toks) && e-b < 4 && !isFunction(toks[e].low) && (e == b || !toks[e].brk) {
			e++
		}
		if a == i || e == b || alt(toks[b].low, "no|not|neither") {
			return nil
		}
		return []string{joinText(toks[a:i]), joinText(toks[b:e])}
	}
	return nil
}

func joinText(ts []token) string {
	words := make([]string, len(ts))
	for k, t := range ts {
		words[k] = t.text
	}
	return strings.Join(words, " ")
}

// listVague are the head nouns that name no kind of their own: "kinds of
// interests" asks for interests, "what things" for anything.
const listVague = "kind|kinds|type|types|sort|sorts|names|things|ways|stuff"

// kindOf joins the words of a list question's head, less a leading "kinds
// of" and the like; "" when nothing else is left.
func kindOf(head []token) string {
	for len(head) > 0 && (alt(head[0].low, listVague) || head[0].low == "of") {
		head = head[1:]
	}
	words := make([]string, len(head))
	for k, t := range head {
		words[k] = t.text
	}
	return strings.Join(words, " ")
}

// plural reports a word that reads as a plural noun: a regular "-s" ending
// that is not "-ss", "-us" or "-is", and not a verb or pronoun of asking.
func plural(w string) bool {
	if len(w) < 4 || !strings.HasSuffix(w, "s") || isFunction(w) {
		return false
	}
	for _, suf := range [...]string{"ss", "us", "is", "'s"} {
		if strings.HasSuffix(w, suf) {
			return false
		}
	}
	return true
}

// detectOrder finds a request for one end of the conversation.
func detectOrder(toks []token) string {
	for i := range toks {
		if toks[i].lex&tOrder == 0 {
			continue
		}
		w := toks[i].low
		switch {
		case alt(w, "originally|initially|earliest"),
			has(toks, i, "very", "first|beginning|start"),
			has(toks, i, "at|in|from", "the", "beginning|start|outset"),
			has(toks, i, "at", "first"),
			has(toks, i, "early", "on"),
			has(toks, i, "to", "begin|start", "with"),
			has(toks, i, "when", "we", "started|began|first"),
			has(toks, i, "first", "thing|things|topic|topics|question|questions|time|message|messages|we|you|i|one|part|few"):
			return "first"
		case alt(w, "latest|lately|recently"),
			has(toks, i, "most", "recent|recently"),
			has(toks, i, "just", "now"),
			has(toks, i, "last", "thing|things|topic|topics|question|questions|time|message|messages|we|you|i|one|part|few|bit"):
			return "last"
		}
	}
	return ""
}

// detectWhen reports a question about a time.
func detectWhen(toks []token) bool {
	for i := range toks {
		if toks[i].lex&tWhen == 0 {
			continue
		}
		switch {
		case toks[i].low == "when" && (toks[i].sentStart || i+1 < len(toks) && alt(toks[i+1].low, "did|was|were|is|are|do|does|will|would|have|has|had|can|could|should|exactly")),
			has(toks, i, "what|which", "date|dates|day|days|time|year|month|week"),
			has(toks, i, "how", "long", "ago|since"),
			has(toks, i, "since", "when"):
			return true
		}
	}
	return false
}

// mentionsAgo finds "<something> ago" (not "how long ago") and "the other day".
func mentionsAgo(toks []token) bool {
	for i := 1; i < len(toks); i++ {
		if toks[i].low == "ago" && toks[i-1].low != "long" {
			return true
		}
	}
	return hasAnywhere(toks, "the", "other", "day")
}

// detectRule finds an explicit standing instruction: "from now on ...",
// "always answer in ...", "please never ...", "don't ever ...". Casual
// speech is full of "always" and "never" ("I always loved painting",
// "never thought I'd ...", "in the future I want a studio"), so those count
// only when they open an instruction.
func detectRule(toks []token) bool {
	for i := range toks {
		if toks[i].lex&tRule == 0 || encouragement(toks, i) {
			continue
		}
		w := toks[i].low
		switch {
		case has(toks, i, "from", "now", "on"), has(toks, i, "from", "here", "on|onwards"),
			w == "henceforth", has(toks, i, "for", "future", "reference"),
			has(toks, i, "don't|dont", "ever"), has(toks, i, "do", "not", "ever"):
			return true
		case has(toks, i, "going", "forward"), has(toks, i, "in", "the", "future"), has(toks, i, "in", "future"):
			if instructionFollows(toks, i+2) {
				return true
			}
		case w == "always" || w == "never":
			if has(toks, i, "never", "mind") {
				continue
			}
			if requestedBefore(toks, i) || startOfInstruction(toks, i) && i+1 < len(toks) && alt(toks[i+1].low, instructionVerbs) {
				return true
			}
		}
	}
	return false
}

// encouragement reports idioms that look like instructions but cheer
// someone on: "never give up", "never say never", "don't ever quit".
func encouragement(toks []token, i int) bool {
	return has(toks, i, "never", "give|stop|quit|change|say", "up|never") || has(toks, i, "never", "stop|quit|change") ||
		has(toks, i, "don't|dont", "ever", "give|stop|quit|change|forget|doubt|lose") ||
		has(toks, i, "do", "not", "ever", "give|stop|quit|change|forget|doubt|lose")
}

// instructionVerbs are verbs an instruction to an assistant opens with.
const instructionVerbs = "use|answer|respond|reply|write|say|call|include|mention|add|put|keep|remind|check|ask|format|prefer|start|end|show|give|explain|run|test|commit|push|deploy|cite|refer|address|spell|speak|talk|sign|make|do|be|return|list|wrap|capitalize|label|tag|store|save|log|send|let|tell|greet|use|avoid|summarize|summarise|translate|double-check|confirm|follow|treat|assume|quote|link|sort"

// instructionFollows reports whether an instruction starts within a few
// words after i ("going forward, please ...", "in the future, always ...").
func instructionFollows(toks []token, i int) bool {
	for j := i; j < len(toks) && j < i+4; j++ {
		if alt(toks[j].low, "please|always|never|don't|dont|remember|use|you|make") {
			return true
		}
	}
	return false
}

// requestedBefore reports whether always/never at i is asked for: "please
// always", "remember to never", "make sure to always", "be sure to always".
func requestedBefore(toks []token, i int) bool {
	return i >= 1 && toks[i-1].low == "please" ||
		i >= 2 && toks[i-1].low == "to" && alt(toks[i-2].low, "remember|sure|need|want")
}

// startOfInstruction reports whether the word at i starts its sentence,
// possibly after a few softeners ("ok, and always ...", "also never ...").
func startOfInstruction(toks []token, i int) bool {
	j := i
	for j > 0 && !toks[j].sentStart {
		if alt(toks[j-1].low, "please|and|also|so|but|ok|okay|just|then") {
			j--
			continue
		}
		return false
	}
	return true
}

// DateMention is a date expression found in a text.
type DateMention struct {
	// Text is the expression as written ("8 May 2023", "last week").
	Text string
	// Start and End bound the period it denotes (End exclusive).
	Start, End time.Time
}

// FindDates returns the date expressions in text, in order. Relative ones
// ("yesterday", "two weeks ago") are resolved against now.
func FindDates(text string, now time.Time) []DateMention {
	var buf [64]token
	return dateMentions(text, tokenize(text, buf[:0]), now)
}

// dateMentions is FindDates of text, tokenized as toks.
func dateMentions(text string, toks []token, now time.Time) []DateMention {
	ds := findDates(toks, now)
	out := make([]DateMention, 0, len(ds))
	for _, d := range ds {
		last := toks[d.b-1]
		out = append(out, DateMention{Text: text[toks[d.a].pos : last.pos+len(last.text)], Start: d.start, End: d.end})
	}
	return out
}

type dateSpan struct {
	a, b       int // tokens [a, b)
	start, end time.Time
	rel        string // "before", "after", "since" or ""
}

func findDates(toks []token, now time.Time) []dateSpan {
	var out []dateSpan
	for i := 0; i < len(toks); {
		if !toks[i].digit && toks[i].lex&tDate == 0 {
			i++
			continue
		}
		d, ok := dateAt(toks, i, now)
		if !ok {
			i++
			continue
		}
		if i > 0 {
			p := toks[i-1].low
			switch {
			case alt(p, "before|until|till|prior"):
				d.rel = "before"
			case p == "to" && i > 1 && toks[i-2].low == "prior":
				d.rel = "before"
			case p == "after":
				d.rel = "after"
			case p == "since":
				d.rel = "since"
			}
		}
		out = append(out, d)
		i = d.b
	}
	return out
}

func day0(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

func daySpan(a, b int, t time.Time) dateSpan {
	s := day0(t)
	return dateSpan{a: a, b: b, start: s, end: s.AddDate(0, 0, 1)}
}

func monthSpan(a, b, y, m int, loc *time.Location) dateSpan {
	s := time.Date(y, time.Month(m), 1, 0, 0, 0, 0, loc)
	return dateSpan{a: a, b: b, start: s, end: s.AddDate(0, 1, 0)}
}

func yearSpan(a, b, y int, loc *time.Location) dateSpan {
	s := time.Date(y, 1, 1, 0, 0, 0, 0, loc)
	return dateSpan{a: a, b: b, start: s, end: s.AddDate(1, 0, 0)}
}

func weekStart(t time.Time) time.Time {
	d := day0(t)
	off := (int(d.Weekday()) + 6) % 7 // Monday = 0
	return d.AddDate(0, 0, -off)
}

// dateAt parses a date expression starting at token i.
func dateAt(toks []token, i int, now time.Time) (dateSpan, bool) {
	loc := now.Location()
	t := &toks[i]
	w := t.low
	next := func(k int) string {
		if i+k < len(toks) {
			return toks[i+k].low
		}
		return ""
	}
	// 2023-05-08, 2023-05
	if t.digit && !t.alpha && len(w) >= 7 && w[4] == '-' {
		if d, err := time.ParseInLocation("2006-01-02", w, loc); err == nil {
			return daySpan(i, i+1, d), true
		}
		if d, err := time.ParseInLocation("2006-01", w, loc); err == nil {
			return monthSpan(i, i+1, d.Year(), int(d.Month()), loc), true
		}
	}
	// 2023/05/08
	if y, ok := year(w); ok && i+2 < len(toks) && toks[i+1].prevP == '/' && toks[i+2].prevP == '/' {
		m, err1 := strconv.Atoi(toks[i+1].low)
		d, err2 := strconv.Atoi(toks[i+2].low)
		if err1 == nil && err2 == nil && validDate(y, m, d) {
			return daySpan(i, i+3, time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc)), true
		}
	}
	// 8 May 2023, 8th of May
	if d, ok := dayNumber(w); ok {
		k := 1
		if next(k) == "of" {
			k++
		}
		if m, ok := monthNames[next(k)]; ok && (next(k) != "may" || toks[i+k].cap) {
			if y, ok := year(next(k + 1)); ok && validDate(y, m, d) {
				return daySpan(i, i+k+2, time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc)), true
			}
			if y := guessYear(m, d, now); validDate(y, m, d) {
				return daySpan(i, i+k+1, time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc)), true
			}
		}
	}
	if m, ok := monthNames[w]; ok && (w != "may" || t.cap) && (len(w) > 3 || t.cap || w == "may") {
		// May 8, 2023 / May 8th / May 2023 / May
		if d, ok := dayNumber(next(1)); ok && !toks[i+1].brk {
			if y, ok := year(next(2)); ok && validDate(y, m, d) {
				return daySpan(i, i+3, time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc)), true
			}
			if y := guessYear(m, d, now); validDate(y, m, d) {
				return daySpan(i, i+2, time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc)), true
			}
		}
		if y, ok := year(next(1)); ok {
			return monthSpan(i, i+2, y, m, loc), true
		}
		if monthAlone(toks, i) {
			y := now.Year()
			if m > int(now.Month()) {
				y--
			}
			return monthSpan(i, i+1, y, m, loc), true
		}
	}
	if y, ok := year(w); ok && yearAlone(toks, i) {
		return yearSpan(i, i+1, y, loc), true
	}
	today := day0(now)
	switch {
	case w == "yesterday":
		return daySpan(i, i+1, today.AddDate(0, 0, -1)), true
	case w == "today" || w == "tonight":
		return daySpan(i, i+1, today), true
	case w == "tomorrow":
		return daySpan(i, i+1, today.AddDate(0, 0, 1)), true
	case has(toks, i, "the", "day", "before", "yesterday"):
		return daySpan(i, i+4, today.AddDate(0, 0, -2)), true
	case has(toks, i, "last", "night"):
		return daySpan(i, i+2, today.AddDate(0, 0, -1)), true
	case has(toks, i, "this", "morning|afternoon|evening"):
		return daySpan(i, i+2, today), true
	case has(toks, i, "last|past|previous|this|next", "week|month|year"):
		return periodSpan(i, next(0), next(1), now), true
	case has(toks, i, "last|past|previous", "few|couple"):
		// "the last few days": the last three units up to now
		k := 2
		if next(k) == "of" {
			k++
		}
		if u := unitDays(next(k)); u > 0 {
			n := 3
			if next(1) == "couple" {
				n = 2
			}
			return dateSpan{a: i, b: i + k + 1, start: today.AddDate(0, 0, -n*u), end: today.AddDate(0, 0, 1)}, true
		}
	}
	if alt(w, "last|past|previous") {
		if n, ok := smallNumber(next(1)); ok {
			if u := unitDays(next(2)); u > 0 {
				return dateSpan{a: i, b: i + 3, start: today.AddDate(0, 0, -n*u), end: today.AddDate(0, 0, 1)}, true
			}
		}
	}
	if wd, ok := weekdayNames[w]; ok && (t.cap || i > 0 && alt(toks[i-1].low, "on|last|next|this")) {
		a := i
		dir := -1
		if i > 0 && toks[i-1].low == "next" {
			dir, a = 1, i-1
		} else if i > 0 && alt(toks[i-1].low, "last|this") {
			a = i - 1
		}
		d := today
		for k := 0; k < 7; k++ {
			d = d.AddDate(0, 0, dir)
			if int(d.Weekday()) == wd {
				break
			}
		}
		return daySpan(a, i+1, d), true
	}
	// N days ago, a week ago, a couple of months ago
	if n, k, ok := countWords(toks, i); ok && i+k+1 < len(toks) && toks[i+k+1].low == "ago" {
		unit := toks[i+k].low
		switch {
		case strings.HasPrefix(unit, "day"):
			return daySpan(i, i+k+2, today.AddDate(0, 0, -n)), true
		case strings.HasPrefix(unit, "hour") || strings.HasPrefix(unit, "minute"):
			return daySpan(i, i+k+2, now), true
		case strings.HasPrefix(unit, "week"):
			s := weekStart(today.AddDate(0, 0, -7*n))
			return dateSpan{a: i, b: i + k + 2, start: s, end: s.AddDate(0, 0, 7)}, true
		case strings.HasPrefix(unit, "month"):
			y, m, _ := now.Date()
			s := time.Date(y, m-time.Month(n), 1, 0, 0, 0, 0, loc)
			return monthSpan(i, i+k+2, s.Year(), int(s.Month()), loc), true
		case strings.HasPrefix(unit, "year"):
			return yearSpan(i, i+k+2, now.Year()-n, loc), true
		}
	}
	return dateSpan{}, false
}

// periodSpan handles "last|past|previous|this|next week|month|year".
func periodSpan(i int, which, unit string, now time.Time) dateSpan {
	loc := now.Location()
	off := 0
	switch which {
	case "last", "previous":
		off = -1
	case "next":
		off = 1
	case "past":
		today := day0(now)
		days := unitDays(unit)
		return dateSpan{a: i, b: i + 2, start: today.AddDate(0, 0, -days), end: today.AddDate(0, 0, 1)}
	}
	switch unit {
	case "week":
		s := weekStart(now).AddDate(0, 0, 7*off)
		return dateSpan{a: i, b: i + 2, start: s, end: s.AddDate(0, 0, 7)}
	case "month":
		y, m, _ := now.Date()
		s := time.Date(y, m+time.Month(off), 1, 0, 0, 0, 0, loc)
		return dateSpan{a: i, b: i + 2, start: s, end: s.AddDate(0, 1, 0)}
	default:
		return yearSpan(i, i+2, now.Year()+off, loc)
	}
}

func unitDays(w string) int {
	switch w {
	case "day", "days":
		return 1
	case "week", "weeks":
		return 7
	case "month", "months":
		return 30
	case "year", "years":
		return 365
	}
	return 0
}

// countWords reads "3", "three", "a", "a couple of", "a few" at i: the
// number and how many tokens it took.
func countWords(toks []token, i int) (n, k int, ok bool) {
	w := toks[i].low
	if w == "a" || w == "an" {
		if has(toks, i, "a", "couple", "of") {
			return 2, 3, true
		}
		if has(toks, i, "a", "few") {
			return 3, 2, true
		}
		return 1, 1, true
	}
	if w == "few" || w == "several" {
		return 3, 1, true
	}
	if n, ok := smallNumber(w); ok {
		return n, 1, true
	}
	return 0, 0, false
}

func smallNumber(w string) (int, bool) {
	if n, err := strconv.Atoi(w); err == nil && n > 0 && n <= 1000 {
		return n, true
	}
	for n, s := range [...]string{"", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"} {
		if n > 0 && w == s {
			return n, true
		}
	}
	return 0, false
}

// dayNumber reads "8", "08", "8th", "1st", "22nd", "3rd".
func dayNumber(w string) (int, bool) {
	j := 0
	for j < len(w) && w[j] >= '0' && w[j] <= '9' {
		j++
	}
	if j == 0 || j > 2 {
		return 0, false
	}
	if rest := w[j:]; rest != "" && rest != "st" && rest != "nd" && rest != "rd" && rest != "th" {
		return 0, false
	}
	d, _ := strconv.Atoi(w[:j])
	return d, d >= 1 && d <= 31
}

func year(w string) (int, bool) {
	if len(w) != 4 {
		return 0, false
	}
	y, err := strconv.Atoi(w)
	return y, err == nil && y >= 1900 && y <= 2100
}

func validDate(y, m, d int) bool {
	if m < 1 || m > 12 || d < 1 {
		return false
	}
	return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Day() == d
}

// guessYear picks the latest year in which month m, day d is not after now.
func guessYear(m, d int, now time.Time) int {
	y := now.Year()
	if m > int(now.Month()) || m == int(now.Month()) && d > now.Day() {
		y--
	}
	return y
}

// monthAlone accepts a bare month name only where it reads as a date: after
// a preposition ("in March"), or capitalised mid-sentence for the
// unambiguous names.
func monthAlone(toks []token, i int) bool {
	if i > 0 && alt(toks[i-1].low, "in|during|since|before|after|until|till|of|early|late|mid|from|through|by|last|this|next") {
		return toks[i].low != "may" || toks[i].cap
	}
	switch toks[i].low {
	case "may", "march", "june", "august", "mar", "jun", "aug":
		return false // also a verb or a name
	}
	return toks[i].cap && !toks[i].sentStart
}

// yearAlone accepts a four-digit number as a year where it reads as one.
func yearAlone(toks []token, i int) bool {
	if i+1 < len(toks) && !toks[i+1].brk && (isUnit(toks[i+1].low) || strings.HasSuffix(toks[i+1].low, "s") && !isFunction(toks[i+1].low)) {
		return false // "2000 users"
	}
	if i > 0 && alt(toks[i-1].low, "in|during|since|before|after|until|till|of|from|through|by|early|late|mid|year|around|circa") {
		return true
	}
	return toks[i].sentStart || toks[i].nextP != 0 || i == len(toks)-1
}
