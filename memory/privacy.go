package memory

import (
	"path/filepath"
	"strings"
	"sync"

	"github.com/vc-mcp/vc-mcp/memory/scrub"
)

// Scrubber replaces secrets with typed placeholders ("[secret:openai-key]")
// before a message is stored. Scrub works on plain text, JSON on a JSON
// value (every string inside it, other bytes untouched); both return how
// many secrets they replaced. *scrub.Scrubber implements it.
type Scrubber interface {
	Scrub(text string) (string, int)
	JSON(raw []byte) ([]byte, int)
}

var _ Scrubber = (*scrub.Scrubber)(nil)

var defaultScrubber = sync.OnceValue(scrub.Default)

// scrubber is Options.Scrubber, or the built-in rule table when it is nil.
func (s *Store) scrubber() Scrubber {
	if s.opts.Scrubber != nil {
		return s.opts.Scrubber
	}
	return defaultScrubber()
}

// scrubMessages returns msgs with every secret in their content and tool
// calls replaced, and the number replaced. It runs before validation and
// hashing, so nothing downstream (log, index, tags, summaries, vectors,
// duplicate detection) ever sees the secret; scrubbing is idempotent, so a
// message resent with its secret is still recognised as a duplicate.
func (s *Store) scrubMessages(msgs []Message) ([]Message, int) {
	sc := s.scrubber()
	out := make([]Message, len(msgs))
	total := 0
	for i, m := range msgs {
		var n1, n2 int
		m.Content, n1 = sc.JSON(m.Content)
		m.ToolCalls, n2 = sc.JSON(m.ToolCalls)
		out[i], total = m, total+n1+n2
	}
	return out, total
}

// tagText is what the tagger sees of a turn: its text without secret
// placeholders, so "[secret:aws-access-key-id]" never becomes a tag.
func tagText(text string) string { return scrub.StripPlaceholders(text) }

// refPath is a master log's path as answers show it: relative to the data
// directory, so no answer reveals where (or under which user) it lives.
func (s *Store) refPath(path string) string {
	if rel, err := filepath.Rel(s.opts.Dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(path)
}
