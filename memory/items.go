package memory

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Context items (seed 002): a catalogue of rules and references, set in
// configuration, that join recall's assembly inside its token budget. Each
// has an include mode:
//
//   - always: in every conversation's session context, unless removed from
//     one (RemoveContextItem);
//   - manual: in a conversation's session context once added to it
//     (AddContextItem), until removed;
//   - agent: chosen per recall by relevance to the message: the item's text
//     is cut into ~500-character chunks, the topK chunks nearest the message
//     are grouped by item, items scoring at least IncludeScore are always
//     taken and the rest fill up to TopN, none below MinScore.
//
// Any item may be added to or removed from a conversation whatever its
// mode. A conversation's additions and removals are recorded in its
// derived-decisions log (kind "context"), so restart and rebuild keep them.

// Item types.
const (
	ItemRule      = "rule"
	ItemReference = "reference"
)

// ContextItem is one entry of the catalogue.
type ContextItem struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Text        string `json:"text"`
	// Priority orders items in an assembly and decides which are trimmed
	// first: lower comes first (1 before 100). Default 100.
	Priority int `json:"priority"`
	// Include is IncludeAlways, IncludeManual or IncludeAgent.
	Include string `json:"include"`
}

// ContextSearch tunes the per-recall choice of agent items. Zero fields
// take their defaults.
type ContextSearch struct {
	// TopK is how many best chunk matches are considered (default 20).
	TopK int
	// TopN is how many agent items are included (default 5); items scoring
	// IncludeScore or more are included even beyond it.
	TopN int
	// IncludeScore: an item scoring at least this is always included
	// (default 0.7).
	IncludeScore float64
	// MinScore: an item scoring below this is never included (default 0.3).
	MinScore float64
	// Share is the fraction of a recall's budget context items may take
	// (default 0.5); memory gets the rest.
	Share float64
}

// Defaults of ContextSearch.
const (
	DefaultItemTopK         = 20
	DefaultItemTopN         = 5
	DefaultItemIncludeScore = 0.7
	DefaultItemMinScore     = 0.3
	DefaultItemShare        = 0.5
	defaultItemPriority     = 100
	maxItemNameLen          = 80
	maxItemTextBytes        = 1 << 20
)

func (o ContextSearch) withDefaults() ContextSearch {
	if o.TopK <= 0 {
		o.TopK = DefaultItemTopK
	}
	if o.TopN <= 0 {
		o.TopN = DefaultItemTopN
	}
	if o.IncludeScore <= 0 {
		o.IncludeScore = DefaultItemIncludeScore
	}
	if o.MinScore <= 0 {
		o.MinScore = DefaultItemMinScore
	}
	if o.Share <= 0 || o.Share > 1 {
		o.Share = DefaultItemShare
	}
	return o
}

var itemNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._-]*$`)

// ValidateContextItems checks a catalogue: every item needs a type (rule or
// reference), a unique name (letters, digits, space, '.', '_', '-'; at most
// 80 characters), text, a priority from 1 to 999 (0 means the default) and
// an include mode. The error names the item and what to change.
func ValidateContextItems(items []ContextItem) error {
	seen := map[string]int{}
	for i, it := range items {
		where := fmt.Sprintf("context item %d", i+1)
		if it.Name != "" {
			where = fmt.Sprintf("context item %d (%q)", i+1, it.Name)
		}
		switch {
		case it.Name == "":
			return fmt.Errorf("%w: %s: name is required", ErrInvalid, where)
		case len(it.Name) > maxItemNameLen || !itemNameRE.MatchString(it.Name) || strings.TrimSpace(it.Name) != it.Name:
			return fmt.Errorf("%w: %s: name must be 1-%d characters of letters, digits, space, '.', '_' or '-', starting with a letter or digit", ErrInvalid, where, maxItemNameLen)
		case it.Type != ItemRule && it.Type != ItemReference:
			return fmt.Errorf("%w: %s: type must be %q or %q, got %q", ErrInvalid, where, ItemRule, ItemReference, it.Type)
		case it.Include != IncludeAlways && it.Include != IncludeManual && it.Include != IncludeAgent:
			return fmt.Errorf("%w: %s: include must be %q, %q or %q, got %q", ErrInvalid, where, IncludeAlways, IncludeManual, IncludeAgent, it.Include)
		case strings.TrimSpace(it.Text) == "":
			return fmt.Errorf("%w: %s: text is empty; give text or a file with some", ErrInvalid, where)
		case len(it.Text) > maxItemTextBytes:
			return fmt.Errorf("%w: %s: text is %d bytes, at most %d", ErrInvalid, where, len(it.Text), maxItemTextBytes)
		case !utf8.ValidString(it.Text) || !utf8.ValidString(it.Description):
			return fmt.Errorf("%w: %s: text and description must be UTF-8", ErrInvalid, where)
		case it.Priority < 0 || it.Priority > 999:
			return fmt.Errorf("%w: %s: priority must be between 1 and 999 (lower comes first), got %d", ErrInvalid, where, it.Priority)
		}
		key := strings.ToLower(it.Name)
		if j, dup := seen[key]; dup {
			return fmt.Errorf("%w: %s: name already used by context item %d; names are unique (case-insensitively)", ErrInvalid, where, j+1)
		}
		seen[key] = i
	}
	return nil
}

// ValidateContextSearch checks search parameters (zero = default).
func ValidateContextSearch(o ContextSearch) error {
	switch {
	case o.TopK < 0 || o.TopK > 1000:
		return fmt.Errorf("%w: top_k must be between 1 and 1000, got %d", ErrInvalid, o.TopK)
	case o.TopN < 0 || o.TopN > 100:
		return fmt.Errorf("%w: top_n must be between 1 and 100, got %d", ErrInvalid, o.TopN)
	case o.IncludeScore < 0 || o.IncludeScore > 1:
		return fmt.Errorf("%w: include_score must be between 0 and 1, got %g", ErrInvalid, o.IncludeScore)
	case o.MinScore < 0 || o.MinScore > 1:
		return fmt.Errorf("%w: min_score must be between 0 and 1, got %g", ErrInvalid, o.MinScore)
	case o.Share < 0 || o.Share > 1:
		return fmt.Errorf("%w: share must be between 0 and 1, got %g", ErrInvalid, o.Share)
	}
	return nil
}

// chunkChars is the target size of an indexed chunk, in characters.
const chunkChars = 500

// itemContent is what an item is indexed as: "name: description\n\ntext"
// (or "name\n\ntext" without a description).
func itemContent(it ContextItem) string {
	head := it.Name
	if d := strings.TrimSpace(it.Description); d != "" {
		head += ": " + d
	}
	return head + "\n\n" + it.Text
}

// chunkText splits text for indexing: by paragraphs (blank lines) first; a
// paragraph over max characters is split into sentences, which are joined
// back up to max characters per chunk; a sentence still over max is cut
// at word boundaries (or hard, for a word longer than max). Chunks are
// trimmed and never empty.
func chunkText(text string, max int) []string {
	var out []string
	for _, para := range splitParagraphs(text) {
		if utf8.RuneCountInString(para) <= max {
			out = append(out, para)
			continue
		}
		cur := ""
		flush := func() {
			if cur != "" {
				out = append(out, cur)
				cur = ""
			}
		}
		for _, sent := range splitSentences(para) {
			for _, piece := range cutLong(sent, max) {
				switch {
				case cur == "":
					cur = piece
				case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(piece) <= max:
					cur += " " + piece
				default:
					flush()
					cur = piece
				}
			}
		}
		flush()
	}
	return out
}

func splitParagraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	var cur []string
	flush := func() {
		if p := strings.TrimSpace(strings.Join(cur, "\n")); p != "" {
			out = append(out, p)
		}
		cur = cur[:0]
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// splitSentences cuts after '.', '!' or '?' (and their full-width forms)
// followed by white space, or after a full-width stop; line breaks inside
// a paragraph also end a sentence.
func splitSentences(p string) []string {
	var out []string
	rs := []rune(p)
	start := 0
	emit := func(end int) {
		if s := strings.TrimSpace(string(rs[start:end])); s != "" {
			out = append(out, strings.Join(strings.Fields(s), " "))
		}
		start = end
	}
	for i, r := range rs {
		switch {
		case r == '\n':
			emit(i + 1)
		case r == '。' || r == '！' || r == '？':
			emit(i + 1)
		case (r == '.' || r == '!' || r == '?') && i+1 < len(rs) && unicode.IsSpace(rs[i+1]):
			emit(i + 1)
		}
	}
	emit(len(rs))
	return out
}

// cutLong splits s into pieces of at most max characters, at spaces when
// it can.
func cutLong(s string, max int) []string {
	var out []string
	for utf8.RuneCountInString(s) > max {
		rs := []rune(s)
		cut := max
		for i := max; i > max/2; i-- {
			if rs[i] == ' ' {
				cut = i
				break
			}
		}
		out = append(out, strings.TrimSpace(string(rs[:cut])))
		s = strings.TrimSpace(string(rs[cut:]))
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// catItem is a catalogue entry with what recall needs precomputed.
type catItem struct {
	ContextItem
	block  string            // rendered for an assembly
	tokens int               // cl100k tokens of block
	chunks []string          // indexed content
	terms  []map[string]bool // each chunk's analysed terms (agent items)
}

// catalogue is the store's context items, ordered by priority then name.
type catalogue struct {
	items  []*catItem
	byName map[string]*catItem // lower-cased name
	search ContextSearch
}

func newCatalogue(items []ContextItem, search ContextSearch, count func(string) int) (*catalogue, error) {
	if err := ValidateContextItems(items); err != nil {
		return nil, err
	}
	if err := ValidateContextSearch(search); err != nil {
		return nil, err
	}
	cat := &catalogue{byName: map[string]*catItem{}, search: search.withDefaults()}
	for _, it := range items {
		if it.Priority == 0 {
			it.Priority = defaultItemPriority
		}
		ci := &catItem{ContextItem: it, block: renderItemHead(it) + "\n" + strings.TrimSpace(it.Text)}
		ci.tokens = count(ci.block)
		ci.chunks = chunkText(itemContent(it), chunkChars)
		if it.Include == IncludeAgent {
			for _, ch := range ci.chunks {
				ci.terms = append(ci.terms, termSet(ch))
			}
		}
		cat.items = append(cat.items, ci)
		cat.byName[strings.ToLower(it.Name)] = ci
	}
	sort.SliceStable(cat.items, func(i, j int) bool {
		a, b := cat.items[i], cat.items[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		return a.Name < b.Name
	})
	return cat, nil
}

func renderItemHead(it ContextItem) string {
	kind := "Rule"
	if it.Type == ItemReference {
		kind = "Reference"
	}
	return fmt.Sprintf("## %s: %s", kind, it.Name)
}

// find resolves a name as a user may type it.
func (cat *catalogue) find(name string) (*catItem, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, fmt.Errorf("%w: name must not be empty", ErrInvalid)
	}
	if ci, ok := cat.byName[strings.ToLower(name)]; ok {
		return ci, nil
	}
	if len(cat.items) == 0 {
		return nil, fmt.Errorf("%w: no context item %q: none are configured (context_items in the config file)", ErrNotFound, name)
	}
	var near []string
	low := strings.ToLower(name)
	for _, ci := range cat.items {
		l := strings.ToLower(ci.Name)
		if strings.Contains(l, low) || strings.Contains(low, l) {
			near = append(near, ci.Name)
		}
	}
	hint := "list_context_items lists them"
	if len(near) > 0 {
		hint = "did you mean " + strings.Join(near, ", ") + "?"
	}
	return nil, fmt.Errorf("%w: no context item %q; %s", ErrNotFound, name, hint)
}

func (cat *catalogue) hasAgentItems() bool {
	for _, ci := range cat.items {
		if ci.Include == IncludeAgent {
			return true
		}
	}
	return false
}
