package memory

import (
	"crypto/sha256"
	"encoding/hex"
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

// scrubMessages returns msgs with every secret in their content, tool
// calls, speaker names and tool call ids replaced, and the number
// replaced. It runs before validation and hashing, so nothing downstream
// (log, index, tags, summaries, vectors, duplicate detection) ever sees
// the secret; scrubbing is idempotent, so a message resent with its
// secret is still recognised as a duplicate. A message id holding a
// secret is replaced by a digest of it (redactedID) rather than a
// placeholder: ids tell messages apart, and two ids that differ only in
// their secrets must stay apart.
func (s *Store) scrubMessages(msgs []Message) ([]Message, int) {
	sc := s.scrubber()
	out := make([]Message, len(msgs))
	total := 0
	for i, m := range msgs {
		var n [5]int
		m.Content, n[0] = sc.JSON(m.Content)
		m.ToolCalls, n[1] = sc.JSON(m.ToolCalls)
		m.Name, n[2] = sc.Scrub(m.Name)
		// The same placeholder as in the tool call it answers, whose id
		// sc.JSON scrubbed: the two still match.
		m.ToolCallID, n[3] = sc.Scrub(m.ToolCallID)
		if _, n[4] = sc.Scrub(m.ID); n[4] > 0 {
			m.ID = redactedID(m.ID)
		}
		out[i], total = m, total+n[0]+n[1]+n[2]+n[3]+n[4]
	}
	return out, total
}

// redactedID stands for a message id that holds a secret: the same id
// always gives the same one (a resend is still recognised), and the
// secret cannot be read back from it.
func redactedID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "redacted-" + hex.EncodeToString(sum[:16])
}

// RedactSecretsJSON is RedactSecrets for a JSON value: every string in
// it (a request body an adapter keeps to show).
func RedactSecretsJSON(raw []byte) []byte {
	out, _ := defaultScrubber().JSON(raw)
	return out
}

// RedactSecrets replaces the secrets in s by typed placeholders with the
// built-in rules, for text an adapter logs or keeps outside a store (a
// client's name): Options.Scrubber covers what a store stores.
func RedactSecrets(s string) string {
	out, _ := defaultScrubber().Scrub(s)
	return out
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
