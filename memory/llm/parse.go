package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// errNoJSON: the answer holds no JSON object at all.
var errNoJSON = errors.New("no JSON object in the answer")

// extractJSON finds the JSON object in a model's answer. It drops
// <think>...</think> reasoning, prefers the content of a ``` code fence,
// skips prose before and after the object, and removes trailing commas.
// It returns the first candidate object that is valid JSON.
func extractJSON(s string) ([]byte, error) {
	s = stripThinking(s)
	var candidates []string
	if fenced := fencedBlocks(s); len(fenced) > 0 {
		candidates = append(candidates, fenced...)
	}
	candidates = append(candidates, s)
	var firstErr error
	for _, c := range candidates {
		for start := strings.IndexByte(c, '{'); start >= 0; {
			obj, end := balancedObject(c[start:])
			if end > 0 {
				fixed := removeTrailingCommas(obj)
				if json.Valid([]byte(fixed)) {
					return []byte(fixed), nil
				}
				if firstErr == nil {
					var v any
					firstErr = json.Unmarshal([]byte(fixed), &v)
				}
			} else if firstErr == nil {
				firstErr = errors.New("unterminated JSON object (answer cut off?)")
			}
			next := strings.IndexByte(c[start+1:], '{')
			if next < 0 {
				break
			}
			start += 1 + next
		}
	}
	if firstErr != nil {
		return nil, fmt.Errorf("%w: %v", errNoJSON, firstErr)
	}
	return nil, errNoJSON
}

// stripThinking removes reasoning blocks some models (DeepSeek R1, Qwen)
// print before the answer. An unclosed block at the start is all
// thinking: the answer never came.
func stripThinking(s string) string {
	for _, tag := range []string{"think", "thinking", "reasoning"} {
		open, close := "<"+tag+">", "</"+tag+">"
		for {
			i := strings.Index(s, open)
			if i < 0 {
				break
			}
			j := strings.Index(s[i:], close)
			if j < 0 {
				s = s[:i]
				break
			}
			s = s[:i] + s[i+j+len(close):]
		}
		// A stray closing tag: everything before it was reasoning.
		if j := strings.LastIndex(s, close); j >= 0 {
			s = s[j+len(close):]
		}
	}
	return s
}

// fencedBlocks returns the contents of ``` fences, in order.
func fencedBlocks(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "```")
		if i < 0 {
			return out
		}
		rest := s[i+3:]
		// Skip the info string ("json") up to the end of the line.
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 && !strings.Contains(rest[:nl], "{") {
			rest = rest[nl+1:]
		}
		j := strings.Index(rest, "```")
		if j < 0 {
			return append(out, rest) // unterminated fence: take the rest
		}
		out = append(out, rest[:j])
		s = rest[j+3:]
	}
}

// balancedObject returns the object starting at s[0] == '{' and the index
// just past it, or end 0 when it never closes. Braces inside strings do
// not count.
func balancedObject(s string) (string, int) {
	depth, inStr, esc := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return s[:i+1], i + 1
			}
			if depth < 0 {
				return "", 0
			}
		}
	}
	return "", 0
}

// removeTrailingCommas drops commas that directly precede } or ] (outside
// strings), a common slip of small models.
func removeTrailingCommas(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	inStr, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			b.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
		}
		if c == ',' {
			j := i + 1
			for j < len(s) && (s[j] == ' ' || s[j] == '\n' || s[j] == '\r' || s[j] == '\t') {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// stringList decodes a JSON array of strings, a single string (split on
// commas) or null. Non-string array items are kept as their JSON text.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var arr []json.RawMessage
	if err := json.Unmarshal(b, &arr); err == nil {
		out := make([]string, 0, len(arr))
		for _, raw := range arr {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				out = append(out, s)
				continue
			}
			out = append(out, strings.TrimSpace(string(raw)))
		}
		*l = out
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		var out []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		*l = out
		return nil
	}
	if string(b) == "null" {
		*l = nil
		return nil
	}
	return fmt.Errorf("want a list of strings, got %.40s", b)
}

// flexBool decodes true/false, "true"/"false", "yes"/"no", 1/0 and null.
type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	switch strings.ToLower(strings.Trim(string(b), `"`)) {
	case "true", "yes", "1":
		*f = true
	case "false", "no", "0", "null", "":
		*f = false
	default:
		return fmt.Errorf("want a boolean, got %.40s", b)
	}
	return nil
}

var (
	kebab     = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	separator = regexp.MustCompile(`[\s_/.:]+`)
)

// maxTagLen bounds a tag's length in bytes.
const maxTagLen = 48

// normalizeTag canonicalises a model's tag spelling: case, surrounding
// quotes and '#', spaces and underscores become hyphens. It returns false
// when the result is still not kebab-case. tagging.General passes as is.
func normalizeTag(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == tagging.General {
		return s, true
	}
	s = strings.Trim(s, "\"'`#* ")
	s = strings.ToLower(s)
	s = separator.ReplaceAllString(s, "-")
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "-")
	}
	s = strings.Trim(s, "-")
	if s == "" || len(s) > maxTagLen || !kebab.MatchString(s) {
		return s, false
	}
	return s, true
}

// canonical maps a valid tag through the alias table.
func canonical(tag string, aliases map[string]string) string {
	if c, ok := aliases[tag]; ok && c != "" {
		return c
	}
	return tag
}

// truncateWords keeps the first n words of s.
func truncateWords(s string, n int) string {
	words := strings.Fields(s)
	if len(words) <= n {
		return strings.Join(words, " ")
	}
	return strings.Join(words[:n], " ")
}
