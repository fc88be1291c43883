package tokens

import (
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Counter counts cl100k tokens. The BPE ranks come from the offline loader
// (embedded in the binary): nothing is fetched. Loading them takes tens of
// milliseconds, so it starts in the background on the first call to
// Cl100k (a store's open) and only the first count waits for it: the MCP
// handshake does not. A Counter is safe for concurrent use.
type Counter struct {
	ready chan struct{}
	err   error    // why the ranks failed to load (set before ready closes)
	bpe   *bpe     // everything valid UTF-8 (cl100k.go); nil when the tables failed to load
	dec   []string // dec[rank]: the bytes of the token, for Truncate

	// tiktoken-go's own encoding serves text that is not valid UTF-8. It
	// is made from the same ranks on first use: making it costs more than
	// the ranks do, and a first recall after a start waited for it.
	encOnce sync.Once
	enc     *tiktoken.Tiktoken
}

// cl100kFile is the name tiktoken-go asks its loader for; the offline
// loader serves it from the binary.
const cl100kFile = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"

// ranksLoader hands tiktoken-go the ranks already loaded for cl100k, and
// other encodings' from the offline loader.
type ranksLoader struct {
	inner tiktoken.BpeLoader
	ranks map[string]int
}

func (l ranksLoader) LoadTiktokenBpe(file string) (map[string]int, error) {
	if path.Base(file) == path.Base(cl100kFile) {
		return l.ranks, nil
	}
	return l.inner.LoadTiktokenBpe(file)
}

var (
	counterStart sync.Once
	counterVal   = newCounter()
)

// Cl100k returns the process-wide cl100k counter, starting the load of its
// ranks in the background the first time.
func Cl100k() *Counter {
	counterStart.Do(func() { go counterVal.load() })
	return counterVal
}

// Count counts cl100k tokens in s with the process-wide counter; it is
// what every budget in vc-mcp is measured with.
func Count(s string) int { return Cl100k().Count(s) }

// newCounter returns a counter whose ranks are not loaded yet: load loads
// them.
func newCounter() *Counter {
	return &Counter{ready: make(chan struct{})}
}

func (c *Counter) load() {
	defer close(c.ready)
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(cl100kFile)
	if err != nil {
		// Cannot happen with the embedded tables; if it does, counts fall
		// back to bytes, an upper bound, so budgets still hold.
		c.err = fmt.Errorf("load the cl100k ranks from the offline loader: %w", err)
		slog.Error("cl100k tables failed to load; counting bytes instead", "err", c.err)
		return
	}
	top := 0
	for _, r := range ranks {
		top = max(top, r)
	}
	c.dec = make([]string, top+1)
	for piece, r := range ranks {
		c.dec[r] = piece
	}
	c.bpe = &bpe{ranks: ranks}
}

// Err waits for the ranks to load and returns why they could not be
// loaded, or nil. While it is not nil, Count counts bytes (an upper bound)
// and Truncate cuts by bytes: a caller that needs exact counts, as a
// benchmark does, checks it first.
func (c *Counter) Err() error {
	<-c.ready
	return c.err
}

// tiktoken returns tiktoken-go's cl100k encoding (c is ready and loaded),
// or nil if it cannot be made.
func (c *Counter) tiktoken() *tiktoken.Tiktoken {
	c.encOnce.Do(func() {
		tiktoken.SetBpeLoader(ranksLoader{inner: tiktokenloader.NewOfflineLoader(), ranks: c.bpe.ranks})
		enc, err := tiktoken.GetEncoding("cl100k_base")
		if err != nil {
			slog.Error("cl100k encoding failed to load; text that is not UTF-8 is counted in bytes",
				"err", fmt.Errorf("make tiktoken-go's cl100k_base encoding: %w", err))
			return
		}
		c.enc = enc
	})
	return c.enc
}

// Count returns the number of cl100k tokens in s; text that looks like a
// special token ("<|endoftext|>") counts as ordinary text.
func (c *Counter) Count(s string) int {
	if s == "" {
		return 0
	}
	<-c.ready
	switch {
	case c.bpe == nil:
		return len(s)
	case utf8.ValidString(s):
		return c.bpe.count(s)
	}
	if enc := c.tiktoken(); enc != nil {
		return len(enc.EncodeOrdinary(s))
	}
	return len(s)
}

// CountChunks returns Count(s), counting s chunk by chunk and remembering
// each chunk's count in seen, so that counting a text again after lines
// were added or dropped costs only the new lines. A chunk ends after a run
// of newlines that a character other than white space follows: cl100k's
// pre-tokenizer never makes a piece across that point (a piece that takes
// newlines ends with the run), so the counts add up exactly. Where white
// space follows the run (it may join the newlines before it), the text is
// not cut.
func (c *Counter) CountChunks(s string, seen map[string]int) int {
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
func (c *Counter) Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	<-c.ready
	if c.bpe == nil {
		return bytePrefix(s, n)
	}
	var out string
	if utf8.ValidString(s) {
		toks := c.bpe.encode(s)
		if len(toks) <= n {
			return s
		}
		var b strings.Builder
		for _, t := range toks[:n] {
			b.WriteString(c.dec[t])
		}
		out = b.String()
	} else {
		enc := c.tiktoken()
		if enc == nil {
			return bytePrefix(s, n)
		}
		toks := enc.EncodeOrdinary(s)
		if len(toks) <= n {
			return s
		}
		out = enc.Decode(toks[:n])
	}
	return dropPartialRune(out)
}

// dropPartialRune drops the end of a rune that a cut inside it left.
func dropPartialRune(s string) string {
	for len(s) > 0 && s[len(s)-1] >= 0x80 && !validUTF8Suffix(s) {
		s = s[:len(s)-1]
	}
	return s
}

func validUTF8Suffix(s string) bool {
	r, size := utf8.DecodeLastRuneInString(s)
	return !(r == utf8.RuneError && size <= 1)
}

// bytePrefix is Truncate when counts are bytes: the longest prefix of s of
// at most n bytes that does not end inside a rune.
func bytePrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
