package summarize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// Sentinel errors of Summarize.
var (
	// ErrEmpty: the input has no text to summarise.
	ErrEmpty = errors.New("nothing to summarize")
	// ErrInvalid: the input does not fit its Kind (an unknown kind, a
	// Single with several turns, a negative MaxTokens).
	ErrInvalid = errors.New("invalid summary input")
)

// Method and Version of extractive summaries.
const (
	Method  = "extractive"
	Version = "extractive-v1"
)

// ExtractiveOptions configure NewExtractive. A nil *ExtractiveOptions, and
// the zero value of every field, mean the default.
type ExtractiveOptions struct {
	// Count returns a text's size in tokens (the caller's cl100k counter).
	// Default: an estimate of 4 tokens per 3 words.
	Count func(string) int
	// SegmentTokens, TagTokens and SingleTokens are the default budgets of
	// each Kind when Input.MaxTokens is 0 (200, 300 and 200).
	SegmentTokens, TagTokens, SingleTokens int
}

// Extractive summarises without a model, by picking the sentences that
// carry names, numbers, dates, decisions, action items, preferences and
// facts, in their original order and with their speakers, within the token
// budget. It is deterministic and safe for concurrent use.
type Extractive struct {
	count               func(string) int
	seg, tag, single    int
	tagger              *tagging.Keyword
	segmentExtraTagsMax int
}

// NewExtractive returns an extractive summariser; opts may be nil.
func NewExtractive(opts *ExtractiveOptions) *Extractive {
	e := &Extractive{count: EstimateTokens, seg: 200, tag: 300, single: 200, tagger: tagging.NewKeyword(nil), segmentExtraTagsMax: 2}
	if opts == nil {
		return e
	}
	if opts.Count != nil {
		e.count = opts.Count
	}
	if opts.SegmentTokens > 0 {
		e.seg = opts.SegmentTokens
	}
	if opts.TagTokens > 0 {
		e.tag = opts.TagTokens
	}
	if opts.SingleTokens > 0 {
		e.single = opts.SingleTokens
	}
	return e
}

// EstimateTokens is the default token counter: 4 tokens per 3 words,
// rounded to the nearest.
func EstimateTokens(s string) int {
	words := 0
	for range strings.FieldsSeq(s) {
		words++
	}
	return (words*4 + 1) / 3
}

// sentence is one candidate sentence.
type sentence struct {
	text    string
	label   string // speaker label ("Caroline"), "" for none
	group   int    // the turn (or segment line) it belongs to
	pos     int    // global order
	score   float64
	tokens  int
	keep    bool     // must be kept if anything is (Single: answers the question)
	facts   []string // its numbers and names, lowercased: what a pick covers
	chosen  bool
	dateNow time.Time

	// What analyse finds in the text, once for score, extract and fit.
	words []string              // strings.Fields(text)
	terms []string              // tagging.Terms(text)
	dates []tagging.DateMention // tagging.FindDates(text, dateNow)
	cues  cueKind               // the kinds of cue phrase it holds
}

// Summarize summarises in according to in.Kind. Errors wrap ErrEmpty,
// ErrInvalid or ctx's error.
func (e *Extractive) Summarize(ctx context.Context, in Input) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("summarize: %w", err)
	}
	if in.MaxTokens < 0 {
		return Result{}, fmt.Errorf("summarize: max tokens %d: %w", in.MaxTokens, ErrInvalid)
	}
	var (
		ss     []sentence
		budget = in.MaxTokens
	)
	res := Result{Method: Method, Version: Version}
	switch in.Kind {
	case Segment:
		if budget == 0 {
			budget = e.seg
		}
		for i, t := range in.Turns {
			ss = e.addTurn(ss, t, label(t), i)
		}
		res.Tags = mergeTags(in.Tag, in.Tags, e.extraTags(ctx, in))
	case Conversation:
		if budget == 0 {
			budget = e.tag
		}
		g := 0
		if prev := strings.TrimSpace(in.Previous); prev != "" {
			// The earlier note's lines compete like any other sentence.
			for line := range strings.SplitSeq(prev, "\n") {
				l, text := splitLabel(strings.TrimSpace(line))
				ss = e.addTurn(ss, Turn{Text: text}, l, g)
				g++
			}
		}
		for _, t := range in.Turns {
			ss = e.addTurn(ss, t, label(t), g)
			g++
		}
		res.Tags = mergeTags(in.Tag, in.Tags, nil)
	case Tag:
		if budget == 0 {
			budget = e.tag
		}
		g := 0
		for _, seg := range in.Segments {
			for line := range strings.SplitSeq(seg, "\n") {
				l, text := splitLabel(strings.TrimSpace(line))
				ss = e.addTurn(ss, Turn{Text: text}, l, g)
				g++
			}
		}
		res.Tags = mergeTags(in.Tag, in.Tags, nil)
	case Single:
		if len(in.Turns) > 1 {
			return Result{}, fmt.Errorf("summarize: a single-turn summary of %d turns: %w", len(in.Turns), ErrInvalid)
		}
		if budget == 0 {
			budget = e.single
		}
		if len(in.Turns) == 1 {
			ss = e.addTurn(ss, in.Turns[0], "", 0)
			// Condense: at most 40% of the turn, but never below 40 tokens.
			if whole := e.count(in.Turns[0].Text); whole > 0 {
				budget = min(budget, max(whole*2/5, 40))
			}
		}
		res.Tags = mergeTags(in.Tag, in.Tags, nil)
	default:
		return Result{}, fmt.Errorf("summarize: kind %q: %w", in.Kind, ErrInvalid)
	}
	if len(ss) == 0 {
		return Result{}, fmt.Errorf("summarize: %s %q: %w", in.Kind, in.Tag, ErrEmpty)
	}
	var topics *topicTally
	if in.Kind == Tag {
		topics = newTopicTally(in.Tag)
	}
	e.analyse(ss, topics)
	e.score(ss, in)
	e.extract(ss, &res)
	for _, t := range in.Turns {
		if t.Speaker != "" && !contains(res.Entities, t.Speaker) && len(res.Entities) < 20 {
			res.Entities = append(res.Entities, t.Speaker)
		}
	}
	if in.Kind == Tag {
		res.Description = topics.describe(res.Entities, len(in.Segments))
	}
	sum, err := e.fit(ss, budget, in.Kind != Single)
	if err != nil {
		return Result{}, err
	}
	res.Summary = sum
	return res, nil
}

func label(t Turn) string {
	if t.Speaker != "" {
		return t.Speaker
	}
	if t.Role == "" {
		return ""
	}
	r, n := utf8.DecodeRuneInString(t.Role)
	return string(unicode.ToUpper(r)) + t.Role[n:]
}

func (e *Extractive) addTurn(ss []sentence, t Turn, lbl string, group int) []sentence {
	for _, s := range splitSentences(t.Text) {
		ss = append(ss, sentence{text: s, label: lbl, group: group, pos: len(ss), tokens: e.count(s), dateNow: t.Time})
	}
	return ss
}

// mergeTags keeps every input tag, in order, then adds extras.
func mergeTags(primary string, tags, extra []string) []string {
	out := make([]string, 0, len(tags)+len(extra)+1)
	add := func(t string) {
		if t != "" && !contains(out, t) {
			out = append(out, t)
		}
	}
	add(primary)
	for _, t := range tags {
		add(t)
	}
	for _, t := range extra {
		add(t)
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// extraTags are tags the keyword tagger gives to at least a third of the
// segment's turns (and at least two) that the segment does not carry yet.
func (e *Extractive) extraTags(ctx context.Context, in Input) []string {
	vocab := make(map[string]int, len(in.Tags)+1)
	for _, t := range in.Tags {
		vocab[t]++
	}
	if in.Tag != "" {
		vocab[in.Tag]++
	}
	counts := map[string]int{}
	var order []string
	for _, t := range in.Turns {
		r, err := e.tagger.Tag(ctx, tagging.Input{Text: t.Text, Vocabulary: vocab})
		if err != nil {
			return nil
		}
		for _, tag := range r.Tags {
			if tag == tagging.General || vocab[tag] > 0 {
				continue
			}
			if counts[tag] == 0 {
				order = append(order, tag)
			}
			counts[tag]++
		}
	}
	need := max(2, (len(in.Turns)+2)/3)
	var out []string
	for _, t := range order {
		if counts[t] >= need {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return counts[out[i]] > counts[out[j]] })
	if len(out) > e.segmentExtraTagsMax {
		out = out[:e.segmentExtraTagsMax]
	}
	return out
}

// Cue phrases, matched in the lowercased sentence with spaces around.
var (
	decisionCues = []string{" we decided", " decided to ", " decided on ", " decision ", " let's go with ", " lets go with ",
		" go with ", " going with ", " agreed", " agree ", " settled on ", " we chose ", " i chose ", " opted ", " the plan is ",
		" we'll use ", " we will use ", " final answer", " approved "}
	actionCues = []string{" i'll ", " i will ", " we'll ", " we will ", " todo", " to-do", " action item", " next step",
		" need to ", " needs to ", " going to ", " plan to ", " planning to ", " have to ", " has to ", " must ", " remember to ", " follow up", " deadline", " by tomorrow", " by monday",
		" by friday", " by the end of "}
	preferenceCues = []string{" i prefer", " i like ", " i love ", " i hate ", " i don't like", " i dislike", " i enjoy",
		" my favorite", " my favourite", " i'd rather", " i want ", " i'm allergic", " i am allergic", " i'm vegetarian",
		" i am vegetarian", " prefers ", " likes ", " loves ", " hates "}
	factCues = []string{" i am ", " i'm ", " i have ", " i've ", " my ", " i work", " i live", " we have ", " our ", " is a ",
		" was born", " moved to ", " named ", " called "}
	chitChat = []string{"thanks", "thank", "ok", "okay", "sure", "great", "cool", "nice", "awesome", "lol", "haha", "yes",
		"yeah", "no", "hi", "hey", "hello", "sounds", "perfect", "wow", "oh", "good", "glad", "aw", "aww"}
)

// cueKind is a set of kinds of cue phrase.
type cueKind uint8

const (
	cueDecision cueKind = 1 << iota
	cueAction
	cuePreference
	cueFact
)

type cuePhrase struct {
	text string
	kind cueKind
}

// cueIndex lists the cue phrases by their second byte, the one after the
// space every cue phrase starts with.
var cueIndex = func() *[256][]cuePhrase {
	var idx [256][]cuePhrase
	for _, l := range []struct {
		cues []string
		kind cueKind
	}{{decisionCues, cueDecision}, {actionCues, cueAction}, {preferenceCues, cuePreference}, {factCues, cueFact}} {
		for _, c := range l.cues {
			if len(c) < 3 || c[0] != ' ' {
				panic("summarize: cue phrase " + strconv.Quote(c) + " is not a space and two bytes or more")
			}
			idx[c[1]] = append(idx[c[1]], cuePhrase{c, l.kind})
		}
	}
	return &idx
}()

// findCues returns the kinds of cue phrase that text holds: those of which
// a phrase is in " " + strings.ToLower(text) + " ". As every phrase starts
// with a space, it tries only the phrases indexed under the byte after each
// space, and compares the whole phrase only when the next byte matches too.
func findCues(text string) cueKind {
	low := " " + strings.ToLower(text) + " "
	var found cueKind
	for i := 0; i+2 < len(low); i++ { // a phrase has 3 bytes or more
		if low[i] != ' ' {
			continue
		}
		for _, c := range cueIndex[low[i+1]] {
			if found&c.kind == 0 && c.text[2] == low[i+2] && strings.HasPrefix(low[i:], c.text) {
				found |= c.kind
			}
		}
	}
	return found
}

// analyse finds what score, extract and fit use of each sentence's text
// (its words, terms, dates and cue phrases), tokenizing it once; with
// topics, it also tallies the sentences' keyword tags.
func (e *Extractive) analyse(ss []sentence, topics *topicTally) {
	var toks tagging.Tokens
	for i := range ss {
		s := &ss[i]
		toks.Reset(s.text)
		s.words = strings.Fields(s.text)
		s.terms = toks.Terms()
		s.dates = toks.FindDates(s.dateNow)
		s.cues = findCues(s.text)
		if topics != nil {
			topics.add(e.tagger, &toks)
		}
	}
}

// score rates every sentence, as analyse has analysed it.
func (e *Extractive) score(ss []sentence, in Input) {
	var tagWords []string
	for _, t := range append([]string{in.Tag}, in.Tags...) {
		for w := range strings.SplitSeq(t, "-") {
			if len(w) > 2 {
				tagWords = append(tagWords, w)
			}
		}
	}
	var around map[string]bool
	answers := false
	if in.Kind == Single {
		around = map[string]bool{}
		for _, w := range tagging.Terms(in.Previous + " " + in.Next) {
			around[w] = true
		}
		answers = strings.Contains(in.Previous, "?")
	}
	for i := range ss {
		s := &ss[i]
		words := s.words
		sc := 0.5
		nums, names, alpha := 0, 0, 0
		s.facts = s.facts[:0]
		for k, w := range words {
			w = wordPunct.trim(w)
			if w == "" {
				continue
			}
			if hasDigit(w) {
				nums++
				s.facts = append(s.facts, strings.ToLower(w))
			}
			if k > 0 && isName(w) {
				names++
				s.facts = append(s.facts, strings.ToLower(w))
			}
			if len(w) > 1 && strings.IndexFunc(w, unicode.IsLetter) >= 0 {
				alpha++
			}
		}
		if alpha < 3 && names == 0 {
			sc -= 3 // a fragment of tool output ("(1 row)", "-----+---")
		}
		sc += 1.5 * float64(min(nums, 3))
		sc += 1.2 * float64(min(names, 3))
		if len(s.dates) > 0 {
			sc += 2.5
		}
		switch {
		case s.cues&cueDecision != 0:
			sc += 6
		case s.cues&cueAction != 0:
			sc += 3
		}
		if s.cues&cuePreference != 0 {
			sc += 2.5
		} else if s.cues&cueFact != 0 {
			sc += 1
		}
		hits := 0
		for _, w := range s.terms {
			if len(tagWords) > 0 && (contains(tagWords, w) || contains(tagWords, tagging.Canonicalize(w, nil))) {
				hits++
			}
			if around[w] {
				sc += 0.3
			}
		}
		sc += math.Min(2, float64(hits))
		if strings.HasSuffix(s.text, "?") {
			sc -= 0.5
		}
		if len(words) > 0 && contains(chitChat, strings.Trim(strings.ToLower(words[0]), ".,!?")) {
			sc -= 1.5
		}
		if len(words) < 5 && nums == 0 && names == 0 {
			sc -= 3
		}
		if len(words) > 45 {
			sc -= 1
		}
		if answers && s.pos == 0 {
			s.keep = true
		}
		s.score = sc
	}
}

// isName: a capitalised word that is not "I" or a sentence opener, or an
// identifier-looking token.
func isName(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	if !unicode.IsUpper(r) {
		return isIdent(w)
	}
	switch w {
	case "I", "I'm", "I'll", "I've", "I'd", "OK", "Ok":
		return false
	}
	return true
}

// isIdent: code-ish tokens (snake_case, dotted.names, camelCase, v1.2).
func isIdent(w string) bool {
	upperInside, letters, digits := false, false, false
	dot := -1 // the first '.'
	for i, r := range w {
		switch {
		case r == '_' || r == '(' && strings.HasPrefix(w[i+1:], ")"):
			return true
		case r == '.':
			if dot < 0 {
				dot = i
			}
		case unicode.IsUpper(r):
			if i > 0 {
				upperInside = true
			}
			letters = true
		case unicode.IsLetter(r):
			letters = true
		case unicode.IsDigit(r):
			digits = true
		}
	}
	if dot > 0 && dot < len(w)-1 && letters {
		return true
	}
	return upperInside || letters && digits
}

// hasDigit is strings.ContainsAny(w, "0123456789").
func hasDigit(w string) bool {
	for i := 0; i < len(w); i++ {
		if '0' <= w[i] && w[i] <= '9' {
			return true
		}
	}
	return false
}

// A cutset is a set of ASCII bytes to trim.
type cutset [utf8.RuneSelf]bool

func newCutset(chars string) *cutset {
	var c cutset
	for i := 0; i < len(chars); i++ {
		c[chars[i]] = true
	}
	return &c
}

// trim is strings.Trim(s, chars) of the chars c was made from, without
// making the set again on every call.
func (c *cutset) trim(s string) string {
	for len(s) > 0 && s[0] < utf8.RuneSelf && c[s[0]] {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] < utf8.RuneSelf && c[s[len(s)-1]] {
		s = s[:len(s)-1]
	}
	return s
}

// The punctuation trimmed off words: wordPunct to find numbers and names,
// namePunct to find entities (whose `quoted` code stays quoted).
var (
	wordPunct = newCutset(".,;:!?()[]\"'`*")
	namePunct = newCutset(".,;:!?()[]\"'*")
)

// extract fills Entities, Decisions, ActionItems and Dates from every
// sentence, as analyse has analysed it.
func (e *Extractive) extract(ss []sentence, res *Result) {
	type entity struct {
		name string
		n    int // mentions
	}
	var ents []entity         // in order of first mention
	entAt := map[string]int{} // name -> index in ents
	var run []string          // consecutive capitalised words make one name
	flush := func() {
		if len(run) == 0 {
			return
		}
		w := strings.Join(run, " ")
		run = run[:0]
		if j, ok := entAt[w]; ok {
			ents[j].n++
			return
		}
		entAt[w] = len(ents)
		ents = append(ents, entity{name: w, n: 1})
	}
	dates := map[string]bool{}
	for i := range ss {
		s := &ss[i]
		words := s.words
		for k, raw := range words {
			w := namePunct.trim(raw)
			w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
			bt := strings.HasPrefix(w, "`") || strings.HasSuffix(w, "`")
			w = strings.Trim(w, "`")
			initialName := k == 0 && k+1 < len(words) && isName(w) && !opener(w) && isName(wordPunct.trim(words[1]))
			ident := isIdent(w)
			if len(w) < 2 || !(bt || ident || (k > 0 || initialName) && isName(w) && !monthOrDay(w)) {
				flush()
				continue
			}
			run = append(run, w)
			if bt || ident || strings.IndexByte(".,;:!?)", raw[len(raw)-1]) >= 0 {
				flush()
			}
		}
		flush()
		for _, d := range s.dates {
			if !dates[d.Text] {
				dates[d.Text] = true
				res.Dates = append(res.Dates, d.Text)
			}
		}
		if s.cues&(cueDecision|cueAction) == 0 {
			continue
		}
		item := s.text
		if s.label != "" {
			item = s.label + ": " + s.text
		}
		switch {
		case s.cues&cueDecision != 0 && len(res.Decisions) < 10 && !contains(res.Decisions, item):
			res.Decisions = append(res.Decisions, item)
		case s.cues&cueAction != 0 && len(res.ActionItems) < 10 && !strings.HasSuffix(s.text, "?") && !contains(res.ActionItems, item):
			res.ActionItems = append(res.ActionItems, item)
		}
	}
	slices.SortStableFunc(ents, func(a, b entity) int { return cmp.Compare(b.n, a.n) })
	for _, x := range ents[:min(len(ents), 20)] {
		res.Entities = append(res.Entities, x.name)
	}
	if len(res.Dates) > 20 {
		res.Dates = res.Dates[:20]
	}
}

// opener: capitalised only because it starts the sentence.
func opener(w string) bool {
	switch strings.ToLower(w) {
	case "the", "a", "an", "this", "that", "these", "those", "my", "our", "your", "his", "her", "their", "its",
		"we", "it", "he", "she", "they", "you", "i", "in", "on", "at", "if", "when", "so", "but", "and", "for",
		"with", "from", "to", "yes", "no", "hey", "hi", "thanks", "wow", "ok", "okay", "what", "how", "why", "who",
		"where", "is", "are", "was", "did", "do", "does", "can", "could", "should", "would", "will", "let's":
		return true
	}
	return false
}

func monthOrDay(w string) bool {
	switch strings.ToLower(w) {
	case "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
		"november", "december", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday":
		return true
	}
	return false
}

// fit picks sentences by score, in budget, and renders them in their
// original order; labelled says whether to prefix each turn's line with
// its speaker.
func (e *Extractive) fit(ss []sentence, budget int, labelled bool) (string, error) {
	byScore := make([]int, len(ss))
	for i := range byScore {
		byScore[i] = i
	}
	slices.SortStableFunc(byScore, func(a, b int) int {
		sa, sb := &ss[a], &ss[b]
		switch {
		case sa.keep != sb.keep:
			if sa.keep {
				return -1
			}
			return 1
		case sa.score > sb.score:
			return -1
		case sa.score < sb.score:
			return 1
		}
		return 0
	})
	top := byScore[0]
	used := 0
	labels := map[int]bool{}
	var picked []*sentence
	covered := map[string]bool{}
	// Greedy by marginal value: a sentence's score less what the picked
	// ones already say (its numbers and names already covered), so a
	// summary carries more distinct facts instead of one fact twice.
	value := make([]float64, len(ss)) // by sentence, valid while valued
	valued := false
	for len(byScore) > 0 {
		if !valued {
			for _, i := range byScore {
				s := &ss[i]
				value[i] = s.score - coverPenalty*float64(coveredFacts(s, covered))
				if s.keep {
					value[i] = math.Inf(1)
				}
			}
			valued = true // until a pick covers another fact
		}
		best, bestV := 0, math.Inf(-1)
		for j, i := range byScore {
			if value[i] > bestV {
				best, bestV = j, value[i]
			}
		}
		i := byScore[best]
		byScore = append(byScore[:best], byScore[best+1:]...)
		s := &ss[i]
		if bestV < 0.5 && !s.keep && len(picked) > 0 {
			break
		}
		cost := s.tokens + 1
		if labelled && s.label != "" && !labels[s.group] {
			cost += e.count(s.label+":") + 1
		}
		if used+cost > budget {
			continue
		}
		if dup(picked, s) {
			continue
		}
		used += cost
		if labelled && s.label != "" {
			labels[s.group] = true
		}
		s.chosen = true
		picked = append(picked, s)
		for _, f := range s.facts {
			if !covered[f] {
				covered[f] = true
				valued = false
			}
		}
	}
	// The estimate may be off for a real tokenizer: drop the weakest until
	// the rendering fits.
	for len(picked) > 0 {
		out := render(ss, labelled)
		if e.count(out) <= budget {
			return out, nil
		}
		weakest := picked[len(picked)-1]
		weakest.chosen = false
		picked = picked[:len(picked)-1]
	}
	// Nothing fits whole: cut the best sentence to the budget.
	best := &ss[top]
	if labelled && best.label != "" {
		if out, ok := e.cut(best.label+": ", best.text, budget); ok {
			return out, nil
		}
	}
	if out, ok := e.cut("", best.text, budget); ok {
		return out, nil
	}
	return "", fmt.Errorf("summarize: nothing fits in %d tokens: %w", budget, ErrInvalid)
}

// coverPenalty is what each already-covered fact takes off a sentence's
// score when the next one is picked.
const coverPenalty = 1.2

func coveredFacts(s *sentence, covered map[string]bool) int {
	n := 0
	for _, f := range s.facts {
		if covered[f] {
			n++
		}
	}
	return n
}

// dup reports a near-repeat of an already picked sentence (tag rollups
// repeat facts across segments).
func dup(picked []*sentence, s *sentence) bool {
	if len(s.terms) == 0 {
		return false
	}
	for _, p := range picked {
		if len(p.terms) == 0 {
			continue
		}
		common := 0
		for _, w := range s.terms {
			if contains(p.terms, w) {
				common++
			}
		}
		union := len(s.terms) + len(p.terms) - common
		if float64(common) >= 0.7*float64(union) {
			return true
		}
	}
	return false
}

// render writes the chosen sentences in order, one line per turn.
func render(ss []sentence, labelled bool) string {
	var b strings.Builder
	group := -1
	for i := range ss {
		s := &ss[i]
		if !s.chosen {
			continue
		}
		if s.group != group {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			if labelled && s.label != "" {
				b.WriteString(s.label)
				b.WriteString(": ")
			}
			group = s.group
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(s.text)
	}
	return b.String()
}

// cut returns prefix+text cut to the most words that fit in budget, with
// an ellipsis; a single word too long is cut by runes.
func (e *Extractive) cut(prefix, text string, budget int) (string, bool) {
	words := strings.Fields(text)
	lo, hi := 0, len(words) // largest n with fits(n)
	fits := func(n int) bool { return e.count(prefix+strings.Join(words[:n], " ")+" …") <= budget }
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo > 0 {
		return prefix + strings.Join(words[:lo], " ") + " …", true
	}
	if prefix != "" || len(words) == 0 {
		return "", false
	}
	rs := []rune(words[0])
	for n := len(rs); n > 0; n-- {
		if s := string(rs[:n]); e.count(s) <= budget {
			return s, true
		}
	}
	return "", false
}

// topicTally counts the keyword tags of a tag's sentences, in order, for
// the tag's description.
type topicTally struct {
	tag    string
	skip   map[string]bool
	vocab  map[string]int
	counts map[string]int
	order  []string
}

func newTopicTally(tag string) *topicTally {
	t := &topicTally{tag: tag, skip: map[string]bool{}, vocab: map[string]int{}, counts: map[string]int{}}
	for w := range strings.SplitSeq(tag, "-") {
		t.skip[w] = true
	}
	return t
}

// add tallies the tags of the next sentence, tokenized as toks.
func (t *topicTally) add(tagger *tagging.Keyword, toks *tagging.Tokens) {
	r, err := tagger.TagTokens(context.Background(), toks, tagging.Input{Vocabulary: t.vocab})
	if err != nil || r.Source != "keyword" {
		return
	}
	for _, w := range r.Tags {
		t.vocab[w]++
		if t.skip[w] || w == t.tag || len(w) < 3 {
			continue
		}
		if t.counts[w] == 0 {
			t.order = append(t.order, w)
		}
		t.counts[w]++
	}
}

// describe writes the one-line description of the tag: what it covers.
func (t *topicTally) describe(entities []string, segments int) string {
	order := t.order
	sort.SliceStable(order, func(i, j int) bool { return t.counts[order[i]] > t.counts[order[j]] })
	if len(order) > 8 {
		order = order[:8]
	}
	name := strings.ReplaceAll(t.tag, "-", " ")
	if name == "" {
		name = "This topic"
	}
	var b strings.Builder
	b.WriteString(name)
	if len(order) > 0 {
		b.WriteString(": covers ")
		b.WriteString(strings.ReplaceAll(strings.Join(order, ", "), "-", " "))
	}
	if n := min(len(entities), 5); n > 0 {
		b.WriteString("; mentions ")
		b.WriteString(strings.Join(entities[:n], ", "))
	}
	fmt.Fprintf(&b, " (%d segment", segments)
	if segments != 1 {
		b.WriteByte('s')
	}
	b.WriteString(").")
	d := strings.Fields(b.String())
	if len(d) > 80 {
		d = d[:80]
	}
	return strings.Join(d, " ")
}
