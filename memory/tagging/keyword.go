package tagging

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
)

// KeywordOptions configure NewKeyword. A nil *KeywordOptions, and the zero
// value of every field, mean the default.
type KeywordOptions struct {
	// MaxTags bounds the tags per turn, 1..5 (default 5).
	MaxTags int
	// MinTags is how many tags a turn with that many candidates gets even
	// when the weaker ones score below the usual floor (default 1, at most
	// MaxTags).
	MinTags int
	// Aliases map alias -> canonical tag, applied on top of DefaultAliases
	// (and under each Input's own Aliases).
	Aliases map[string]string
	// NoDefaultAliases leaves DefaultAliases out.
	NoDefaultAliases bool
}

// Keyword is the deterministic tagger: it needs no model, gives the same
// Result for the same Input, and is safe for concurrent use.
//
// It builds a conversation's vocabulary as it goes. A turn that mentions a
// tag already in Input.Vocabulary (as written, by plural, stem or alias)
// reuses it, and the previous turn's primary tag stays primary while the
// conversation keeps mentioning it; otherwise new tags are minted from the
// turn's salient words and two-word phrases: names, acronyms, identifiers,
// numbers with units and noun-like words, never stop words, chit-chat or
// generic verbs. A turn with nothing topical inherits the previous turn's
// tags, or gets General.
type Keyword struct {
	maxTags int
	minTags int
	aliases map[string]string
}

var _ interface {
	Tag(context.Context, Input) (Result, error)
} = (*Keyword)(nil)

// NewKeyword returns a Keyword tagger; opts may be nil.
func NewKeyword(opts *KeywordOptions) *Keyword {
	k := &Keyword{maxTags: 5, minTags: 1}
	var o KeywordOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxTags > 0 && o.MaxTags < 5 {
		k.maxTags = o.MaxTags
	}
	if o.MinTags > 1 {
		k.minTags = min(o.MinTags, k.maxTags)
	}
	k.aliases = make(map[string]string, len(DefaultAliases)+len(o.Aliases))
	if !o.NoDefaultAliases {
		for a, c := range DefaultAliases {
			k.aliases[a] = c
		}
	}
	for a, c := range o.Aliases {
		if a, c = slug(a), Canonicalize(c, nil); a != "" && c != "" {
			k.aliases[a] = c
		}
	}
	return k
}

// Scores. A typical content word scores about 1.2, a name about 2.2.
const (
	scoreBase        = 1.0
	scoreProper      = 1.0  // capitalised mid-sentence, or an acronym
	scoreAcronym     = 0.6  // HTTP, AWS
	scoreIdent       = 0.3  // code-like token
	scoreNumberUnit  = 0.9  // "16 GB"
	scoreRepeat      = 0.35 // each further mention, up to three
	scoreVocab       = 1.5  // reuses a vocabulary tag
	scoreVocabCount  = 0.3  // times log2(1+turns carrying the tag), capped
	scorePrevious    = 0.5  // one of the previous turn's tags
	scoreSticky      = 1.5  // the previous turn's primary tag
	scoreCarry       = 1.6  // previous primary, carried by a pronoun follow-up
	minScore         = 0.8  // secondary tags need this much ...
	minRelativeScore = 0.35 // ... and this fraction of the primary's score
)

type cand struct {
	key    string
	score  float64
	first  int // token index of the first mention
	n      int // mentions
	vocab  bool
	phrase bool
	stem   string // match key, single words only
}

// Tag tags one turn. Its only error is ctx's.
func (k *Keyword) Tag(ctx context.Context, in Input) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("tagging: %w", err)
	}
	var buf [128]token
	return k.tag(tokenize(in.Text, buf[:0]), in), nil
}

// TagTokens is Tag of the text t holds (in.Text is not read), for a caller
// that has tokenized the text already.
func (k *Keyword) TagTokens(ctx context.Context, t *Tokens, in Input) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("tagging: %w", err)
	}
	in.Text = t.text
	return k.tag(t.toks, in), nil
}

// tag tags the turn in.Text, tokenized as toks.
func (k *Keyword) tag(toks []token, in Input) Result {
	res := Result{Source: "keyword"}
	res.Temporal = detectOrder(toks) != ""
	res.Rule = detectRule(toks)

	cs := k.candidates(toks, in)
	// As in ClassifyQuery, an overview request that names a topic is not broad.
	res.Broad = len(cs) == 0 && detectBroad(toks)
	if len(cs) == 0 {
		return inherit(res, in.Previous, k.maxTags)
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.score != b.score {
			return cmp.Compare(b.score, a.score)
		}
		if a.first != b.first {
			return cmp.Compare(a.first, b.first)
		}
		return strings.Compare(a.key, b.key)
	})
	top := cs[0].score
	floor := math.Max(minScore, minRelativeScore*top)
	res.Tags = make([]string, 0, k.maxTags)
	rest := 0
	for i := range cs {
		if len(res.Tags) < k.maxTags && (len(res.Tags) < k.minTags || cs[i].score >= floor) {
			res.Tags = append(res.Tags, cs[i].key)
			continue
		}
		// Related: what was left out, vocabulary tags first, at most 3.
		if rest < 3 && cs[i].score >= 0.25*top && cs[i].vocab {
			res.Related = append(res.Related, cs[i].key)
			rest++
		}
	}
	for i := range cs {
		if rest < 3 && i >= len(res.Tags) && cs[i].score >= 0.25*top && !cs[i].vocab && !contains(res.Tags, cs[i].key) {
			res.Related = append(res.Related, cs[i].key)
			rest++
		}
	}
	res.Primary = res.Tags[0]
	return res
}

// inherit tags a turn with no topical content: the previous turn's tags if
// there are any, General otherwise.
func inherit(res Result, prev []string, max int) Result {
	for _, t := range prev {
		if t == "" || contains(res.Tags, t) {
			continue
		}
		if len(res.Tags) == max {
			break
		}
		res.Tags = append(res.Tags, t)
	}
	if len(res.Tags) == 0 {
		res.Tags = []string{General}
		res.Source = "fallback"
	} else {
		res.Source = "inherited"
	}
	res.Primary = res.Tags[0]
	return res
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// canon is Canonicalize with two alias maps (the turn's, then the tagger's);
// proper nouns are not plural-folded ("Jenkins", "Paris").
func (k *Keyword) canon(w string, in *Input, fold bool) string {
	s := clip(slug(w))
	if s == "" {
		return ""
	}
	if a, ok := k.alias(s, in); ok {
		return a
	}
	if fold {
		if f := foldLast(s); f != s {
			if a, ok := k.alias(f, in); ok {
				return a
			}
			s = f
		}
	}
	return s
}

func (k *Keyword) alias(s string, in *Input) (string, bool) {
	if a, ok := in.Aliases[s]; ok {
		if a = clip(slug(a)); a != "" {
			return a, true
		}
	}
	if a, ok := k.aliases[s]; ok {
		return a, true
	}
	return "", false
}

// candidates scores every possible tag of the turn.
func (k *Keyword) candidates(toks []token, in Input) []cand {
	cs := make([]cand, 0, 16)
	idx := make(map[string]int, 16)
	add := func(key string, score float64, first int, phrase bool) int {
		if j, ok := idx[key]; ok {
			c := &cs[j]
			c.n++
			if c.n <= 4 {
				c.score = math.Max(c.score, score) + scoreRepeat
			}
			return j
		}
		idx[key] = len(cs)
		cs = append(cs, cand{key: key, score: score, first: first, n: 1, phrase: phrase})
		return len(cs) - 1
	}

	keys := make([]int, len(toks)) // token -> candidate index + 1, 0 if none
	shift := false                 // the turn announces a change of topic
	greeted := -1                  // sentence start of the last greeting seen
	sent := 0
	for i := range toks {
		t := &toks[i]
		if t.sentStart {
			sent = i
		}
		if t.lex&fGreeting != 0 {
			greeted = sent
		}
		if t.lex&tShift != 0 && isShift(toks, i) {
			shift = true
		}
		if t.code {
			continue
		}
		score, fold, ok := k.wordScore(toks, i, in.Speaker, greeted == sent)
		if !ok {
			continue
		}
		var key string
		if score < 0 { // a number with its unit
			key = numberUnitKey(toks, i)
			score = scoreNumberUnit
		} else {
			key = k.canon(t.low, &in, fold)
		}
		if key == "" {
			continue
		}
		keys[i] = add(key, score, i, false) + 1
	}
	// Two-word phrases: adjacent candidates in one clause.
	for i := 0; i+1 < len(toks); i++ {
		a, b := keys[i], keys[i+1]
		if a == 0 || b == 0 || toks[i+1].brk || toks[i].digit && !toks[i].alpha {
			continue
		}
		ca, cb := cs[a-1], cs[b-1]
		if ca.key == cb.key || strings.IndexByte(ca.key, '-') >= 0 || strings.IndexByte(cb.key, '-') >= 0 {
			continue
		}
		sa, sb := wordBase(toks[i]), wordBase(toks[i+1])
		if ca.score < 0.75*sa || len(toks[i].low) > 4 && strings.HasSuffix(toks[i].low, "ed") {
			continue // "monitor replication", "prescribed carprofen": a verb and its object
		}
		if isProper(toks[i+1]) && !isProper(toks[i]) {
			continue // "my dog Rex": the name alone is the topic
		}
		key := clip(ca.key + "-" + cb.key)
		add(key, 0.5*(sa+sb)+0.1, i, true)
	}
	if len(cs) == 0 {
		return cs
	}

	// Reuse the vocabulary: a candidate whose stem matches a vocabulary tag
	// takes the tag's name.
	matched := false
	if len(in.Vocabulary) > 0 {
		stems := make(map[string]int, len(cs))
		for j := range cs {
			if !cs[j].phrase {
				cs[j].stem = stem(cs[j].key)
				if _, dup := stems[cs[j].stem]; !dup {
					stems[cs[j].stem] = j
				}
			}
		}
		type match struct {
			tag   string
			count int
		}
		best := make(map[int]match, 4)
		better := func(j int, tag string, count int) {
			m, ok := best[j]
			if !ok || count > m.count || count == m.count && tag < m.tag {
				best[j] = match{tag, count}
			}
		}
		consider := func(tag string, count int) {
			if tag == "" || tag == General {
				return
			}
			if j, ok := idx[tag]; ok {
				better(j, tag, count) // as written (phrases too)
				return
			}
			if strings.IndexByte(tag, '-') < 0 {
				if j, ok := stems[stem(tag)]; ok {
					better(j, tag, count)
				}
				return
			}
			// A vocabulary phrase: all its words mentioned, the last (the
			// head noun) checked first as it rules out most.
			if _, ok := stems[stem(tag[strings.LastIndexByte(tag, '-')+1:])]; !ok {
				return
			}
			all, head := true, -1
			for p := range strings.SplitSeq(tag, "-") {
				j, ok := stems[stem(p)]
				if !ok {
					all = false
					break
				}
				head = j
			}
			if all && head >= 0 {
				j := add(tag, cs[head].score+0.1, cs[head].first, true)
				better(j, tag, count)
			}
		}
		if len(in.Vocabulary) <= vocabScan {
			for tag, count := range in.Vocabulary {
				consider(tag, count)
			}
		} else {
			// A large vocabulary: look up the forms each candidate could
			// take rather than scan it. Vocabulary phrases are then found
			// only when the turn says them as a phrase.
			var b [MaxTagLen + 8]byte
			for j, n := 0, len(cs); j < n; j++ {
				if count, ok := in.Vocabulary[cs[j].key]; ok {
					consider(cs[j].key, count)
				}
				if cs[j].phrase {
					continue
				}
				st := cs[j].stem
				for _, suf := range variantSuffixes {
					v := append(append(b[:0], st...), suf...)
					if suf == "*ing" || suf == "*ed" {
						v = append(append(b[:0], st...), st[len(st)-1])
						v = append(v, suf[1:]...)
					}
					if count, ok := in.Vocabulary[string(v)]; ok {
						if tag := string(v); stem(tag) == st {
							consider(tag, count)
						}
					}
				}
			}
		}
		// Apply in candidate order, so the result does not depend on map order.
		for j := range cs {
			m, ok := best[j]
			if !ok {
				continue
			}
			matched = true
			cs[j].vocab = true
			cs[j].score += scoreVocab + math.Min(1.5, scoreVocabCount*math.Log2(1+float64(m.count)))
			cs[j].key = m.tag
		}
	}
	cs = merge(cs)

	// Continuity with the previous turn.
	if len(in.Previous) > 0 && !shift {
		for j := range cs {
			switch {
			case cs[j].key == in.Previous[0] && in.Previous[0] != General:
				cs[j].score += scoreSticky
			case contains(in.Previous[1:], cs[j].key):
				cs[j].score += scorePrevious
			}
		}
		cs = k.carry(toks, in, matched, cs)
	}
	return cs
}

// carry keeps the previous turn's primary tag on a turn that continues its
// topic without naming it: the turn re-mentions another of the previous
// turn's tags (the primary then ranks just above it), or, reusing no
// vocabulary at all, refers back with a pronoun ("He chewed my shoes").
func (k *Keyword) carry(toks []token, in Input, matched bool, cs []cand) []cand {
	p := in.Previous[0]
	if p == General || p == "" {
		return cs
	}
	best := -1.0
	for j := range cs {
		if cs[j].key == p {
			return cs
		}
		if contains(in.Previous[1:], cs[j].key) && cs[j].score > best {
			best = cs[j].score
		}
	}
	if best > 0 {
		return append(cs, cand{key: p, score: best + 0.1, first: len(toks), n: 1, vocab: true})
	}
	if matched {
		return cs
	}
	for i := 0; i < len(toks) && i < 4; i++ {
		if i > 0 && toks[i].sentStart {
			break
		}
		if has(toks, i, "what|how", "about") || alt(toks[i].low, "it|he|she|they|them|him|her|his|its|their|this|that|these|those") {
			return append(cs, cand{key: p, score: scoreCarry, first: len(toks), n: 1})
		}
	}
	return cs
}

// vocabScan is the vocabulary size up to which Tag scans the vocabulary
// for stem matches; above it, it looks up each candidate's likely forms.
const vocabScan = 256

// variantSuffixes rebuild, from a stem, the forms a vocabulary tag may
// take ("*" doubles the stem's last letter: run -> running).
var variantSuffixes = [...]string{"", "e", "ion", "ation", "ate", "ing", "ment", "ed", "*ing", "*ed", "s", "es"}

// merge folds candidates that ended up with the same key.
func merge(cs []cand) []cand {
	out := cs[:0]
	pos := make(map[string]int, len(cs))
	for _, c := range cs {
		if j, ok := pos[c.key]; ok {
			o := &out[j]
			o.score = math.Max(o.score, c.score) + scoreRepeat
			o.first = min(o.first, c.first)
			o.vocab = o.vocab || c.vocab
			continue
		}
		pos[c.key] = len(out)
		out = append(out, c)
	}
	return out
}

// wordScore decides whether token i can be a tag and how salient it is.
// A negative score marks a number followed by its unit. fold says whether
// plurals may be folded (not for names).
func (k *Keyword) wordScore(toks []token, i int, speaker string, greeted bool) (score float64, fold, ok bool) {
	t := &toks[i]
	w := t.low
	if !t.alpha {
		if i+1 < len(toks) && !toks[i+1].brk && isUnit(toks[i+1].low) && toks[i+1].alpha {
			return -1, false, true
		}
		return 0, false, false
	}
	if t.digit && unitSuffix(w) {
		return -1, false, true
	}
	if t.digit && isOrdinal(w) {
		return 0, false, false // "27th": a date's day, never a topic
	}
	if t.lex&(fMonth|fWeekday|fFunction) != 0 || t.lex&fUnit != 0 && i > 0 && toks[i-1].digit {
		return 0, false, false
	}
	proper := t.cap && !t.sentStart || t.allCaps
	if proper && t.text == "I" {
		return 0, false, false
	}
	if t.lex&fGeneric != 0 && !(t.cap && !t.sentStart && !t.allCaps) && !t.ident {
		// A common word counts only as a capitalised name mid-sentence
		// ("the Go service"), not shouted ("OK", "LOL").
		return 0, false, false
	}
	if len(w) < 3 && !(t.allCaps || t.ident || proper) || len(w) < 2 {
		return 0, false, false
	}
	if speaker != "" && isSpeaker(t.text, speaker) {
		return 0, false, false
	}
	if t.cap && !t.allCaps && isVocative(toks, i, greeted) {
		return 0, false, false
	}
	if !proper && !t.ident && len(w) > 4 && strings.HasSuffix(w, "ly") {
		return 0, false, false // adverbs
	}
	score = wordBase(*t)
	// Cheap part-of-speech hints from the previous word.
	if i > 0 && !t.brk && !proper {
		switch toks[i-1].low {
		case "to", "we", "i", "you", "they", "will", "would", "should", "could", "can", "must",
			"might", "didn't", "don't", "won't", "can't", "we'll", "i'll", "let's", "please":
			score *= 0.5 // likely a verb
		case "the", "a", "an", "my", "our", "your", "his", "her", "their", "this", "that", "these", "those", "its":
			score += 0.2 // likely a noun
		}
	}
	return score, !proper || t.sentStart, true
}

// isSpeaker reports whether w is the speaker's name or one of its words
// ("Caroline" of "Caroline Smith").
func isSpeaker(w, speaker string) bool {
	if strings.EqualFold(w, speaker) {
		return true
	}
	for part := range strings.FieldsSeq(speaker) {
		if len(part) > 2 && strings.EqualFold(w, part) {
			return true
		}
	}
	return false
}

// wordBase is a word's salience on its own.
func wordBase(t token) float64 {
	w := t.low
	s := scoreBase
	proper := isProper(t)
	switch {
	case t.allCaps:
		s += scoreAcronym
	case proper:
		s += scoreProper
	}
	if t.ident {
		s += scoreIdent
		if strings.IndexByte(w, '.') >= 0 {
			s *= 0.7 // file names and selectors: salient, rarely the topic
		}
	}
	if !proper && !t.ident {
		switch {
		case hasAnySuffix(w, "ful", "ous", "ive", "able", "ible", "less", "ish", "est"):
			s *= 0.5
		case len(w) > 4 && strings.HasSuffix(w, "ed"):
			s *= 0.4
		case len(w) > 5 && strings.HasSuffix(w, "ing"):
			s *= 0.85
		case hasAnySuffix(w, "tion", "sion", "ment", "ness", "ity", "ism", "ist", "ogy", "ure", "ance", "ence", "ship", "age", "ery", "er", "or", "ics"):
			s += 0.25
		}
	}
	s += 0.04 * float64(min(max(len(w)-3, 0), 7))
	return s
}

func isProper(t token) bool { return t.cap && !t.sentStart || t.allCaps }

func hasAnySuffix(w string, sufs ...string) bool {
	for _, s := range sufs {
		if len(w) > len(s)+2 && strings.HasSuffix(w, s) {
			return true
		}
	}
	return false
}

// isVocative reports a name used to address someone: after a greeting
// ("Hey Mel!", "Thanks, Caroline"), or a speaker label ("Caroline: ...").
func isVocative(toks []token, i int, greeted bool) bool {
	t := &toks[i]
	if t.sentStart && t.nextP == ':' {
		return true
	}
	if greeted {
		if i > 0 && isGreeting(toks[i-1].low) {
			return true
		}
		if t.prevP == ',' && (t.nextP == '!' || t.nextP == '.' || t.nextP == ',' || t.nextP == '?' || i == len(toks)-1 || i+1 < len(toks) && toks[i+1].sentStart) {
			return true
		}
		if i > 1 && toks[i-1].low == "you" && isGreeting(toks[i-2].low) {
			return true
		}
	}
	return false
}

// isShift reports a phrase announcing a new topic at token i.
func isShift(toks []token, i int) bool {
	switch toks[i].low {
	case "anyway", "anyways", "btw", "unrelated", "meanwhile":
		return true
	case "by":
		return i+2 < len(toks) && toks[i+1].low == "the" && toks[i+2].low == "way"
	case "switching", "changing":
		return i+1 < len(toks) && (toks[i+1].low == "gears" || toks[i+1].low == "topics" || toks[i+1].low == "subject")
	case "different", "another", "new":
		return i+1 < len(toks) && (toks[i+1].low == "topic" || toks[i+1].low == "subject" || toks[i+1].low == "question")
	}
	return false
}

// numberUnitKey joins a number and its unit: "16 GB" -> "16-gb", "200ms" -> "200ms".
func numberUnitKey(toks []token, i int) string {
	t := toks[i]
	if t.alpha {
		return clip(slug(t.low))
	}
	return clip(slug(t.low + "-" + toks[i+1].low))
}

// isOrdinal reports a number written as an ordinal: 1st, 22nd, 3rd, 27th.
func isOrdinal(w string) bool {
	j := 0
	for j < len(w) && w[j] >= '0' && w[j] <= '9' {
		j++
	}
	switch w[j:] {
	case "st", "nd", "rd", "th":
		return j > 0
	}
	return false
}

// unitSuffix reports a token like "16gb" or "200ms": digits then a unit.
func unitSuffix(w string) bool {
	j := 0
	for j < len(w) && (w[j] >= '0' && w[j] <= '9' || w[j] == '.') {
		j++
	}
	return j > 0 && j < len(w) && isUnit(w[j:])
}

// stem reduces a canonical word to a key shared by its inflections and
// common derivations (migrate, migrating, migration -> "migr"). It is used
// only to match words against the vocabulary, never as a tag.
func stem(w string) string {
	if w == "" {
		return w
	}
	var sufs []string
	switch w[len(w)-1] {
	case 's':
		sufs = stemS
	case 'n':
		sufs = stemN
	case 'g':
		sufs = stemG
	case 'd':
		sufs = stemD
	case 'e':
		sufs = stemE
	case 't':
		sufs = stemT
	default:
		return w
	}
	for _, suf := range sufs {
		if len(w)-len(suf) >= 3 && strings.HasSuffix(w, suf) {
			if (suf == "ion" || suf == "ions" || suf == "ation" || suf == "ations") && len(w)-len(suf) < 4 {
				continue
			}
			w = w[:len(w)-len(suf)]
			break
		}
	}
	if n := len(w); n >= 4 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	if n := len(w); n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiou", rune(w[n-1])) {
		w = w[:n-1]
	}
	return w
}

// Suffixes stem strips, longest first, by last letter.
var (
	stemS = []string{"ations", "ates", "ions", "ments", "ings", "es", "s"}
	stemN = []string{"ation", "ion"}
	stemG = []string{"ating", "ing"}
	stemD = []string{"ated", "ed"}
	stemE = []string{"ate"}
	stemT = []string{"ment"}
)
