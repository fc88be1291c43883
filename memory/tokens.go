package memory

import (
	"log/slog"
	"path"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// counter counts cl100k tokens. The BPE ranks come from the offline loader
// (embedded in the binary): nothing is fetched. Building the tables takes a
// few hundred milliseconds, so it starts in the background when a store
// opens and only the first count waits for it: the MCP handshake does not.
type counter struct {
	ready chan struct{}
	enc   *tiktoken.Tiktoken // decoding, and text that is not valid UTF-8
	bpe   *bpe               // everything else (cl100k.go)
}

// capturingLoader hands tiktoken-go the offline ranks and keeps them, so
// the hand-written encoder shares the one table.
type capturingLoader struct {
	inner tiktoken.BpeLoader
	ranks map[string]int
}

func (l *capturingLoader) LoadTiktokenBpe(file string) (map[string]int, error) {
	ranks, err := l.inner.LoadTiktokenBpe(file)
	if err == nil && path.Base(file) == "cl100k_base.tiktoken" {
		l.ranks = ranks
	}
	return ranks, err
}

var (
	counterStart sync.Once
	counterVal   = &counter{ready: make(chan struct{})}
)

// cl100k returns the process-wide cl100k counter, starting its load.
func cl100k() *counter {
	counterStart.Do(func() { go counterVal.load() })
	return counterVal
}

func (c *counter) load() {
	defer close(c.ready)
	loader := &capturingLoader{inner: tiktokenloader.NewOfflineLoader()}
	tiktoken.SetBpeLoader(loader)
	enc, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		// Cannot happen with the embedded tables; if it does, counts fall
		// back to bytes, an upper bound, so budgets still hold.
		slog.Error("cl100k tables failed to load; counting bytes instead", "err", err)
		return
	}
	c.enc = enc
	if loader.ranks != nil {
		c.bpe = &bpe{ranks: loader.ranks}
	}
}

// encode returns the cl100k tokens of s (c is ready and loaded).
func (c *counter) encode(s string) []int {
	if c.bpe == nil || !utf8.ValidString(s) {
		return c.enc.EncodeOrdinary(s)
	}
	return c.bpe.encode(s)
}

// Count returns the number of cl100k tokens in s.
func (c *counter) Count(s string) int {
	if s == "" {
		return 0
	}
	<-c.ready
	if c.enc == nil {
		return len(s)
	}
	if c.bpe == nil || !utf8.ValidString(s) {
		return len(c.enc.EncodeOrdinary(s))
	}
	return c.bpe.count(s)
}

// CountChunks returns Count(s), counting s chunk by chunk and remembering
// each chunk's count in seen, so that counting a text again after lines
// were added or dropped costs only the new lines. A chunk ends after a run
// of newlines that a character other than white space follows: cl100k's
// pre-tokenizer never makes a piece across that point (a piece that takes
// newlines ends with the run), so the counts add up exactly. Where white
// space follows the run (it may join the newlines before it), the text is
// not cut.
func (c *counter) CountChunks(s string, seen map[string]int) int {
	n := 0
	for s != "" {
		end := chunkEnd(s)
		chunk := s[:end]
		k, ok := seen[chunk]
		if !ok {
			k = c.Count(chunk)
			seen[chunk] = k
		}
		n += k
		s = s[end:]
	}
	return n
}

// chunkEnd returns where the first chunk of s ends (see CountChunks).
func chunkEnd(s string) int {
	for from := 0; ; {
		i := strings.IndexByte(s[from:], '\n')
		if i < 0 {
			return len(s)
		}
		end := from + i + 1
		for end < len(s) && (s[end] == '\n' || s[end] == '\r') {
			end++
		}
		if end == len(s) {
			return end
		}
		if r, _ := utf8.DecodeRuneInString(s[end:]); !unicode.IsSpace(r) && !unicode.Is(unicode.Z, r) && r != utf8.RuneError {
			return end
		}
		from = end
	}
}

// Truncate returns the longest prefix of s (cut at a token boundary) that
// has at most n tokens.
func (c *counter) Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	<-c.ready
	if c.enc == nil {
		return clip(s, n)
	}
	toks := c.encode(s)
	if len(toks) <= n {
		return s
	}
	out := c.enc.Decode(toks[:n])
	// A cut inside a multi-byte rune decodes to U+FFFD; drop it.
	for len(out) > 0 && out[len(out)-1] >= 0x80 && !validUTF8Suffix(out) {
		out = out[:len(out)-1]
	}
	return out
}

// CountTokens counts cl100k tokens in s; it is what every budget in vc-mcp
// is measured with.
func CountTokens(s string) int { return cl100k().Count(s) }
