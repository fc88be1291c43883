package tagging

import "strings"

// MaxTagLen bounds a canonical tag's length in bytes.
const MaxTagLen = 64

// Canonicalize returns tag's canonical form: lowercase, every run of
// characters outside [a-z0-9] replaced by one '-', leading and trailing '-'
// trimmed, the last word's plural folded conservatively (databases ->
// database, queries -> query, boxes -> box; news, status, analysis, glass,
// kubernetes and words of three letters or fewer are left alone), then
// mapped through aliases (alias -> canonical; looked up before and after
// folding). The result is at most MaxTagLen bytes; a tag with no letters or
// digits gives "".
func Canonicalize(tag string, aliases map[string]string) string {
	s := clip(slug(tag))
	if s == "" {
		return ""
	}
	if a, ok := aliases[s]; ok {
		return clip(slug(a))
	}
	f := foldLast(s)
	if f != s {
		if a, ok := aliases[f]; ok {
			return clip(slug(a))
		}
	}
	return f
}

// Slug is the form tags take before folding and aliases (see slug): a
// caller can find a tag in a text by looking for it in Slug(text).
func Slug(s string) string { return slug(s) }

// slug lowercases s and turns every run of characters outside [a-z0-9] into
// a single '-', trimming '-' at both ends. It returns s itself when s is
// already a slug.
func slug(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			clean = false
			break
		}
		if c == '-' && (i == 0 || i == len(s)-1 || s[i-1] == '-') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	dash := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
			fallthrough
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteByte(c)
		default:
			dash = true
		}
	}
	return b.String()
}

// clip bounds a slug to MaxTagLen bytes without leaving a trailing '-'.
func clip(s string) string {
	if len(s) > MaxTagLen {
		s = s[:MaxTagLen]
	}
	return strings.Trim(s, "-")
}

// foldLast folds the plural of the last '-'-separated word of a slug: in
// English compounds only the head noun takes the plural.
func foldLast(s string) string {
	i := strings.LastIndexByte(s, '-')
	w := s[i+1:]
	f := foldPlural(w)
	if f == w {
		return s
	}
	return s[:i+1] + f
}

// keepPlural are words ending in s that are not plurals to fold, or whose
// folding would be wrong.
var keepPlural = set(`
news series species physics kubernetes aws ios macos chaos kudos ethos pathos cosmos thermos
gas lens is was has does goes this his hers ours yours theirs its always perhaps whereas
besides sometimes afterwards towards upwards downwards nevertheless thanks congrats
means innings headquarters crossroads diabetes herpes measles mumps rabies scissors pants jeans
trousers shorts clothes sales savings earnings belongings surroundings outskirts premises goods
odds alms texas atlas canvas alias bias christmas vegas kansas arkansas pancreas las
james charles thomas lucas nicholas jones williams wales athens brussels mercedes hermes adidas
mathematics maths economics politics statistics analytics graphics electronics ethics genetics
linguistics logistics athletics aerobics gymnastics robotics semantics dynamics mechanics
acoustics optics aesthetics ergonomics forensics informatics bioinformatics diagnostics
pediatrics paediatrics orthodontics thermodynamics aeronautics avionics
chromeos ipados watchos tvos centos redis postgres jenkins
`)

// pluralMap holds irregular or ambiguous plurals folded explicitly.
var pluralMap = map[string]string{
	"analyses": "analysis", "crises": "crisis", "theses": "thesis", "hypotheses": "hypothesis",
	"diagnoses": "diagnosis", "parentheses": "parenthesis", "synopses": "synopsis",
	"emphases": "emphasis", "oases": "oasis",
	"aliases": "alias", "biases": "bias", "canvases": "canvas", "atlases": "atlas", "gases": "gas",
	"buses": "bus", "viruses": "virus", "statuses": "status", "bonuses": "bonus", "campuses": "campus",
	"censuses": "census", "choruses": "chorus", "circuses": "circus", "geniuses": "genius",
	"octopuses": "octopus", "radiuses": "radius", "syllabuses": "syllabus", "walruses": "walrus",
	"cactuses": "cactus", "corpuses": "corpus", "nexuses": "nexus", "surpluses": "surplus",
	"apparatuses": "apparatus", "minuses": "minus", "pluses": "plus", "sinuses": "sinus",
	"consensuses": "consensus", "lenses": "lens",
	"gpus": "gpu", "cpus": "cpu", "tpus": "tpu", "menus": "menu", "gurus": "guru", "haikus": "haiku",
	"skus": "sku", "emus": "emu", "tofus": "tofu", "sudokus": "sudoku",
	"quizzes": "quiz", "heroes": "hero", "potatoes": "potato", "tomatoes": "tomato",
	"echoes": "echo", "vetoes": "veto", "torpedoes": "torpedo", "volcanoes": "volcano",
	"mosquitoes": "mosquito", "dominoes": "domino", "buffaloes": "buffalo",
	"knives": "knife", "lives": "life", "wives": "wife", "leaves": "leaf", "wolves": "wolf",
	"halves": "half", "shelves": "shelf", "selves": "self", "thieves": "thief", "loaves": "loaf",
	"calves": "calf", "elves": "elf",
	"children": "child", "women": "woman", "men": "man", "mice": "mouse",
	"movies": "movie", "cookies": "cookie", "zombies": "zombie", "rookies": "rookie",
	"calories": "calorie", "selfies": "selfie", "smoothies": "smoothie", "brownies": "brownie",
	"hoodies": "hoodie", "newbies": "newbie", "freebies": "freebie", "goodies": "goodie",
	"magpies": "magpie", "pixies": "pixie", "sweeties": "sweetie", "techies": "techie",
	"veggies": "veggie", "hippies": "hippie", "aunties": "auntie", "genies": "genie",
	"prairies": "prairie", "ties": "tie", "pies": "pie", "lies": "lie", "dies": "die",
	"birdies": "birdie", "foodies": "foodie", "indies": "indie", "lassies": "lassie",
	"collies": "collie", "budgies": "budgie", "eyries": "eyrie",
}

// cheSingulars are singular nouns ending in "che", whose plural drops only the s.
var cheSingulars = set(`cache ache headache niche avalanche moustache mustache cliche quiche creche psyche microfiche douche tranche attache`)

// foldPlural returns the singular of one lowercase word, or the word itself
// when it is not clearly a regular plural.
func foldPlural(w string) string {
	n := len(w)
	if n <= 3 || w[n-1] != 's' {
		return w
	}
	if f, ok := pluralMap[w]; ok {
		return f
	}
	if _, ok := keepPlural[w]; ok {
		return w
	}
	for i := 0; i < n; i++ {
		if w[i] >= '0' && w[i] <= '9' {
			return w // k8s, s3s: identifiers, not plurals
		}
	}
	if !hasVowel(w[:n-1]) {
		return w // dns, sms, gps, https
	}
	switch {
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"),
		strings.HasSuffix(w, "js"), strings.HasSuffix(w, "ics"):
		if strings.HasSuffix(w, "ics") && !strings.HasSuffix(w, "sics") {
			// topics, clinics, metrics fold; the field names are in keepPlural.
			return w[:n-1]
		}
		return w
	case strings.HasSuffix(w, "ies") && n > 4:
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "shes"),
		strings.HasSuffix(w, "zzes"):
		return w[:n-2]
	case strings.HasSuffix(w, "ches"):
		if _, ok := cheSingulars[w[:n-1]]; ok {
			return w[:n-1]
		}
		return w[:n-2]
	}
	return w[:n-1]
}

func hasVowel(s string) bool {
	return strings.ContainsAny(s, "aeiouy")
}
