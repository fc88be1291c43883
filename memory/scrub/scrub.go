// Package scrub replaces credentials in text with typed placeholders such as
// "[secret:openai-key]", so that a key pasted into a chat never reaches the
// master log, the index, a tag or a summary.
//
// Detection is a documented rule table (Rules): provider key shapes, JWTs,
// PEM private keys, passwords in URLs and assignments, and high-entropy
// values under key-like names. A Scrubber is the table plus the user's extra
// rules and allow list; it is safe for concurrent use. The package is a leaf:
// it imports nothing of the project.
package scrub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
)

// Prefix starts every placeholder; placeholders never match a rule, so
// scrubbing is idempotent.
const Prefix = "[secret:"

// Placeholder is the text that replaces a secret found by rule name.
func Placeholder(name string) string { return Prefix + name + "]" }

var placeholderRE = regexp.MustCompile(`\[secret:[a-z0-9-]{1,40}\]`)

// StripPlaceholders removes placeholders from text, for consumers (tagging)
// that must not learn words from them.
func StripPlaceholders(text string) string {
	if !strings.Contains(text, Prefix) {
		return text
	}
	return placeholderRE.ReplaceAllString(text, " ")
}

// Rules returns the built-in rule table, in the order it is applied.
func Rules() []Rule {
	out := make([]Rule, len(rules))
	copy(out, rules)
	return out
}

// Extra is a user rule: Name becomes the placeholder's type, Pattern is a
// Go regular expression (a group named "secret" limits what is replaced).
type Extra struct {
	Name    string `yaml:"name" json:"name"`
	Pattern string `yaml:"pattern" json:"pattern"`
}

// Options configure New. The zero value is the built-in table.
type Options struct {
	// Extra rules run after the built-in ones.
	Extra []Extra
	// Allow lists values that are never replaced: each is a Go regular
	// expression that must match the whole candidate secret (a plain
	// literal such as a published example key works as itself).
	Allow []string
}

type compiled struct {
	name    string
	re      *regexp.Regexp
	group   int // index of the "secret" group, or 0 for the whole match
	check   func(string) bool
	need    []string // lower-case literals, one of which every match holds
	needRun int      // a run of base64 characters every match holds
}

// mayMatch is the rule's cheap pre-filter: false means no match is
// possible in text (lower is text in lower case).
func (r compiled) mayMatch(text, lower string) bool {
	if r.needRun > 0 && !hasBase64Run(text, r.needRun) {
		return false
	}
	if len(r.need) == 0 {
		return true
	}
	for _, n := range r.need {
		if strings.Contains(lower, n) {
			return true
		}
	}
	return false
}

// foldLower is text in lower case as (?i) matches it: besides
// strings.ToLower (which already maps the Kelvin sign to k), the long s
// folds to s.
func foldLower(text string) string {
	return strings.ReplaceAll(strings.ToLower(text), "ſ", "s")
}

// hasBase64Run reports whether text holds n characters of [A-Za-z0-9/+]
// in a row.
func hasBase64Run(text string, n int) bool {
	run := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '+' {
			if run++; run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// Scrubber replaces secrets. A nil *Scrubber replaces nothing.
type Scrubber struct {
	rules []compiled
	allow []*regexp.Regexp
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// New compiles the built-in table plus opts. A bad extra rule or allow
// entry is an error naming it.
func New(opts Options) (*Scrubber, error) {
	s := &Scrubber{}
	for _, r := range rules {
		c := compile(r.Name, regexp.MustCompile(r.Pattern), r.check)
		c.need, c.needRun = r.need, r.needRun
		s.rules = append(s.rules, c)
	}
	for i, e := range opts.Extra {
		if !nameRE.MatchString(e.Name) {
			return nil, fmt.Errorf("scrub extra rule %d: name %q must be lowercase letters, digits and dashes (at most 40)", i+1, e.Name)
		}
		re, err := regexp.Compile(e.Pattern)
		if err != nil {
			return nil, fmt.Errorf("scrub extra rule %q: %w", e.Name, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("scrub extra rule %q: pattern %q matches empty text", e.Name, e.Pattern)
		}
		s.rules = append(s.rules, compile(e.Name, re, nil))
	}
	for _, a := range opts.Allow {
		if a == "" {
			continue
		}
		re, err := regexp.Compile(`^(?:` + a + `)$`)
		if err != nil {
			return nil, fmt.Errorf("scrub allow entry %q: %w", a, err)
		}
		s.allow = append(s.allow, re)
	}
	return s, nil
}

// Default is the built-in table with no options.
func Default() *Scrubber {
	s, err := New(Options{})
	if err != nil {
		panic(err) // the built-in table is fixed at compile time
	}
	return s
}

func compile(name string, re *regexp.Regexp, check func(string) bool) compiled {
	c := compiled{name: name, re: re, check: check}
	if i := re.SubexpIndex("secret"); i > 0 {
		c.group = i
	}
	return c
}

// Scrub returns text with every secret replaced by its placeholder, and how
// many were replaced.
func (s *Scrubber) Scrub(text string) (string, int) {
	if s == nil || len(text) < 8 {
		return text, 0
	}
	total := 0
	lower := foldLower(text)
	for _, r := range s.rules {
		if !r.mayMatch(text, lower) {
			continue
		}
		var n int
		text, n = s.apply(r, text)
		if n > 0 {
			lower = foldLower(text)
		}
		total += n
	}
	return text, total
}

func (s *Scrubber) apply(r compiled, text string) (string, int) {
	locs := r.re.FindAllStringSubmatchIndex(text, -1)
	if len(locs) == 0 {
		return text, 0
	}
	var b strings.Builder
	last, n := 0, 0
	for _, loc := range locs {
		lo, hi := loc[2*r.group], loc[2*r.group+1]
		if lo < 0 || lo < last {
			continue
		}
		secret := text[lo:hi]
		if strings.Contains(secret, Prefix) || (r.check != nil && !r.check(secret)) || s.allowed(secret) {
			continue
		}
		b.WriteString(text[last:lo])
		b.WriteString(Placeholder(r.name))
		last, n = hi, n+1
	}
	if n == 0 {
		return text, 0
	}
	b.WriteString(text[last:])
	return b.String(), n
}

func (s *Scrubber) allowed(secret string) bool {
	for _, a := range s.allow {
		if a.MatchString(secret) {
			return true
		}
	}
	return false
}

// JSON scrubs every string inside a JSON value (content blocks, tool call
// arguments, tool results), leaving every other byte as it was: a value
// without secrets comes back identical. Invalid JSON is returned unchanged
// (the caller's validation reports it).
//
// A string that itself holds JSON (OpenAI tool call arguments are a JSON
// document inside a string) is scrubbed as JSON, so its escaped quotes do
// not hide a "password": "..." pair.
func (s *Scrubber) JSON(raw []byte) ([]byte, int) { return s.json(raw, 0) }

const maxJSONDepth = 4

func (s *Scrubber) json(raw []byte, depth int) ([]byte, int) {
	if s == nil || len(s.rules) == 0 || len(raw) < 8 {
		return raw, 0
	}
	var out []byte
	total, last := 0, 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		end := stringEnd(raw, i)
		if end < 0 {
			return raw, 0
		}
		lit := raw[i : end+1]
		i = end
		if len(lit) < 10 {
			continue
		}
		var str string
		if err := json.Unmarshal(lit, &str); err != nil {
			return raw, 0
		}
		clean, n := s.Scrub(str)
		if t := strings.TrimSpace(clean); depth < maxJSONDepth && len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
			inner, m := s.json([]byte(clean), depth+1)
			clean, n = string(inner), n+m
		}
		if n == 0 {
			continue
		}
		enc, err := marshalString(clean)
		if err != nil {
			return raw, 0
		}
		out = append(out, raw[last:i-len(lit)+1]...)
		out = append(out, enc...)
		last, total = end+1, total+n
	}
	if total == 0 {
		return raw, 0
	}
	return append(out, raw[last:]...), total
}

// stringEnd returns the index of the quote closing the JSON string that
// opens at raw[start], or -1.
func stringEnd(raw []byte, start int) int {
	for j := start + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

func marshalString(s string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// --- checks that keep context rules off ordinary text ---

// entropy is the Shannon entropy of s in bits per character.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

func classes(s string) (lower, upper, digit, other bool) {
	for _, r := range s {
		switch {
		case unicode.IsLower(r):
			lower = true
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsDigit(r):
			digit = true
		default:
			other = true
		}
	}
	return
}

// mixed: letters and digits both, as generated keys have (keeps words like
// "sk-learn-tutorial-for-beginners" out).
func mixed(s string) bool {
	l, u, d, _ := classes(s)
	return d && (l || u)
}

// highEntropy: a generated-looking value, not a word, an identifier or a
// path.
func highEntropy(s string) bool {
	s = strings.TrimRight(s, "=")
	if len(s) < 16 || codeLike(s) {
		return false
	}
	return mixed(s) && entropy(s) >= 3.0
}

// awsSecretShape: 40 characters with upper, lower, digits and a / or +.
// Hex digests (git SHAs, SHA-1) have neither case mix nor symbols.
func awsSecretShape(s string) bool {
	l, u, d, _ := classes(s)
	return l && u && d && strings.ContainsAny(s, "/+") && entropy(s) >= 4.0
}

// notTemplate: a URL password that is a real value, not ${VAR} or <pass>.
func notTemplate(s string) bool {
	return !strings.ContainsAny(s, "${}<>%") && !placeholderWord(s)
}

var placeholderWords = map[string]bool{
	"password": true, "passwd": true, "pass": true, "secret": true, "string": true, "str": true,
	"none": true, "null": true, "nil": true, "true": true, "false": true, "required": true,
	"optional": true, "undefined": true, "xxx": true, "xxxx": true, "****": true, "redacted": true,
	"your_password": true, "yourpassword": true, "mypassword": true, "example": true, "changeme": false,
	"hidden": true, "empty": true, "text": true, "field": true, "input": true, "type": true,
	"prompt": true, "bool": true, "boolean": true, "int": true, "char": true, "bytes": true,
}

func placeholderWord(s string) bool {
	low := strings.ToLower(strings.Trim(s, "*.`"))
	return placeholderWords[low] || low == "" || strings.Trim(s, "*x•.") == ""
}

// codeLike: a value that is an expression, a path or a reference rather
// than a literal secret: os.Getenv("X"), process.env.X, self.password,
// ${VAR}, <password>, getpass(), a file path.
func codeLike(s string) bool {
	if strings.ContainsAny(s, "()[]{}<>$%") {
		return true
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "~") {
		return true
	}
	// dotted identifiers: request.form, config.db.password, settings.SECRET
	if strings.Contains(s, ".") {
		allIdent := true
		for _, part := range strings.Split(s, ".") {
			if !identifier(part) {
				allIdent = false
				break
			}
		}
		if allIdent {
			return true
		}
	}
	return false
}

func identifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r)) {
			continue
		}
		return false
	}
	return true
}

// passwordValue: after an unquoted "password:", anything but code, type
// names, placeholders and variable names (hashedPassword, pass_hash).
func passwordValue(s string) bool {
	s = strings.TrimRight(s, ".)")
	if len(s) < 4 || codeLike(s) || placeholderWord(s) {
		return false
	}
	if identifier(s) {
		low := strings.ToLower(s)
		for _, w := range []string{"pass", "pwd", "secret", "hash", "cred"} {
			if strings.Contains(low, w) {
				return false
			}
		}
	}
	return true
}

// prosePassword: "my password is X" only when X has a digit or symbol.
func prosePassword(s string) bool {
	s = strings.TrimRight(s, ".!?)")
	if len(s) < 4 || placeholderWord(s) || codeLike(s) {
		return false
	}
	_, _, d, o := classes(s)
	return d || o
}

// Off returns a Scrubber that replaces nothing (scrubbing switched off).
func Off() *Scrubber { return &Scrubber{} }
