package tokens

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// reference returns tiktoken-go's own cl100k tokens for s.
func reference(t testing.TB, s string) []int {
	t.Helper()
	c := Cl100k()
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	if c.tiktoken() == nil {
		t.Fatal("tiktoken-go's cl100k_base encoding could not be made")
	}
	return c.enc.EncodeOrdinary(s)
}

func checkParity(t *testing.T, s string) bool {
	t.Helper()
	want := reference(t, s)
	c := Cl100k()
	got := c.bpe.encode(s)
	if !slices.Equal(got, want) {
		t.Errorf("tokens of %q:\n got %v\nwant %v", s, got, want)
		return false
	}
	if n := c.bpe.count(s); n != len(want) {
		t.Errorf("count of %q = %d, want %d", s, n, len(want))
		return false
	}
	return true
}

// TestCl100kParity checks the hand-written pre-tokenizer and encoder against
// tiktoken-go on hand-picked edge cases, real conversation text and random
// strings over an alphabet chosen to hit every alternative of the pattern.
func TestCl100kParity(t *testing.T) {
	cases := []string{
		"", "a", " ", "  ", "\n", "\r\n", " \n ", "a  b", "a   ", "   a", "\t\tx",
		"don't", "DON'T", "we're", "They'LL", "I'm", "'s", "'sa", "''s", "x'Re'vE",
		"hello world", "Hello, world!", "  hello", "a\n\nb", "a \n b", "a\r\n\r\nb",
		"1234567", "12a34", "x²³⁴5", "Ⅻ and ٣٤٥", "3.14159", "$100,000.00",
		"foo()\n", "if (x) {\n\treturn y;\n}\n", " ??\n\n", "--\r\n--", "a\u00a0b", "a\u2028b",
		"日本語のテキスト", "emoji 😀😀 ok", "e\u0301cole", "\u0301abc", "ſt 'ſ", "K'K 'k",
		"İstanbul 'İ", "a\u3000\u3000b", "trailing   ", "\u00a0\u00a0x", "x\u0085y",
		"https://example.com/path?q=1&r=2", "user@example.com", "C++ and C#", "«quoted»",
		"tab\there", "mixed \t \n\t x", "   \n\n   \n", "a\n \n", "'", "'\n", " '", "'' ''",
	}
	for _, s := range cases {
		checkParity(t, s)
	}

	// Real conversation text: every turn of the LoCoMo dev split.
	raw, err := os.ReadFile("../../../shared/bench/locomo/locomo-dev.json")
	if err != nil {
		t.Fatalf("the LoCoMo dev split is the test's real text: %v", err)
	}
	var texts []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		case string:
			texts = append(texts, x)
		}
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc)
	if len(texts) < 1000 {
		t.Fatalf("only %d strings in the LoCoMo dev split", len(texts))
	}
	// Whole strings, then runs of them joined as a turn list would be.
	for i, s := range texts {
		if i%7 == 0 && !checkParity(t, s) {
			break
		}
	}
	for i := 0; i+20 < len(texts); i += 400 {
		if !checkParity(t, strings.Join(texts[i:i+20], "\n")) {
			break
		}
	}

	// Random strings.
	alphabet := []string{
		"a", "B", "z", "é", "ß", "Ω", "ж", "日", "ſ", "K", "İ", "\u0301", "1", "9", "²", "٣", "Ⅻ",
		" ", " ", "  ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u2028", "\u3000", "\u0085",
		"'", "'s", "'T", "'re", "'VE", "'m", "'ll", "'d", ".", ",", "!", "?", "-", "(", ")",
		"{", "}", "\"", "/", "#", "😀", "€", "_", "*", "the", " the", "ing", "don", "tion",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fails := 0
	for range 8000 {
		var b strings.Builder
		for n := rng.IntN(24); n >= 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		if !checkParity(t, b.String()) {
			if fails++; fails > 5 {
				t.Fatal("too many mismatches")
			}
		}
	}

	// Every 53rd rune of the code space, alone and between letters, spaces,
	// digits and line breaks: the character classes agree.
	for r := rune(0); r <= utf8.MaxRune; r += 53 {
		if !utf8.ValidRune(r) {
			continue
		}
		c := string(r)
		if !checkParity(t, "a"+c+"b "+c+c+" 1"+c+"\n"+c+" \n"+c+"'"+c) {
			if fails++; fails > 5 {
				t.Fatal("too many mismatches")
			}
		}
	}
}

// TestTruncateMatchesTiktoken: Truncate, which decodes with the ranks it
// loaded, cuts where tiktoken-go's own encode and decode cut, for every
// budget up to past the whole text, on random strings heavy in multi-byte
// runes (a cut inside one drops it), and on text that is not valid UTF-8.
func TestTruncateMatchesTiktoken(t *testing.T) {
	c := Cl100k()
	<-c.ready
	want := func(s string, n int) string {
		toks := reference(t, s)
		if len(toks) <= n {
			return s
		}
		return dropPartialRune(c.tiktoken().Decode(toks[:n]))
	}
	texts := []string{
		"Hello, world! This is a sentence that will be cut.",
		"日本語のテキストを途中で切る", "emoji 😀😀😀 in a row 🎉 and more", "e\u0301cole e\u0301te\u0301",
		"Ünïcödé wörds ànd ßpecial çharacters €100", "a\xffb\xfe done here", "ok \xc3( done \xe2\x82 x",
	}
	alphabet := []string{"a", "é", "日", "😀", "ж", " ", "\n", "'s", "1", ".", "€", "\u0301", "the"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		var b strings.Builder
		for n := rng.IntN(30); n >= 0; n-- {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		for n := 1; n <= len(reference(t, s))+1; n++ {
			if got, want := c.Truncate(s, n), want(s, n); got != want {
				t.Fatalf("Truncate(%q, %d) = %q, tiktoken-go cuts at %q", s, n, got, want)
			}
		}
	}
}

// TestCountInvalidUTF8 checks that text that is not valid UTF-8 is counted
// as tiktoken-go counts it.
func TestCountInvalidUTF8(t *testing.T) {
	for _, s := range []string{"a\xffb", "\xe2\x82", "ok \xc3( done"} {
		if got, want := Count(s), len(reference(t, s)); got != want {
			t.Errorf("Count(%q) = %d, want %d", s, got, want)
		}
	}
}

// BenchmarkCountTokens times counting a LoCoMo-like turn list with the
// hand-written encoder beside tiktoken-go's regexp2 one, in the same run.
func BenchmarkCountTokens(b *testing.B) {
	text := strings.Repeat("Caroline: I went to the LGBTQ support group yesterday and it was so powerful! "+
		"Melanie: That's great to hear - what did you learn there? It's 3:45 pm, I'll call you back.\n", 40)
	c := Cl100k()
	<-c.ready
	c.tiktoken()
	b.Run("vc-mcp", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			c.bpe.count(text)
		}
	})
	b.Run("tiktoken-go", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			c.enc.EncodeOrdinary(text)
		}
	})
}

// BenchmarkCl100kLoad times what a process does before its first count:
// the ranks and the decode table ("ranks"), beside also making tiktoken-go's
// encoding from them, as every start did before it was made on first use
// ("ranks+tiktoken-go").
func BenchmarkCl100kLoad(b *testing.B) {
	b.Run("ranks", func(b *testing.B) {
		for b.Loop() {
			c := newCounter()
			c.load()
			if c.bpe == nil {
				b.Fatal("no ranks")
			}
		}
	})
	b.Run("ranks+tiktoken-go", func(b *testing.B) {
		for b.Loop() {
			c := newCounter()
			c.load()
			if c.bpe == nil || c.tiktoken() == nil {
				b.Fatal("no encoding")
			}
		}
	})
}

// TestCountChunksExact: counting a text chunk by chunk (cut after runs of
// newlines) gives tiktoken's own count of the whole, for random texts
// heavy in what joins pieces (spaces, punctuation, newlines, digits) and
// for rendered assemblies, with the chunk counts remembered across texts.
func TestCountChunksExact(t *testing.T) {
	c := Cl100k()
	seen := map[string]int{}
	alphabet := []string{"a", "b", "Z", " ", "  ", "\t", "\n", "\n\n", "\r\n", "\r", ".", ",", "!", "'s", "'", "[", "]", ":", "-", "1", "23", "4567", "é", "東", "🚀", "\u00a0", "\u2028"}
	rng := rand.New(rand.NewPCG(5, 11))
	texts := []string{
		"# Recalled memory\n\n## Session 3 (2 Jan 2024)\n[09:00] user: the cache failed.\n[09:01] assistant: Rotate the token!\n\n### cache\nSummary line.\n",
		"\n\nleading newlines\n  indented line\n\ttabbed\n.\n..\n \n",
		"",
		"no newline at all",
	}
	for range 8000 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, s := range texts {
		want := len(reference(t, s))
		if got := c.CountChunks(s, seen); got != want {
			t.Fatalf("CountChunks(%q) = %d, tiktoken counts %d", s, got, want)
		}
	}
}

// TestBytesWithoutRanks: a counter whose ranks failed to load counts bytes
// and cuts by bytes, never inside a rune, so a cut text fits the budget it
// was cut to, and Err says why.
func TestBytesWithoutRanks(t *testing.T) {
	c := newCounter()
	c.err = errors.New("no tables")
	close(c.ready)
	if err := c.Err(); err == nil {
		t.Fatal("Err() = nil for a counter without ranks")
	}
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello world", 5, "hello"},
		{"hello", 9, "hello"},
		{"日本語", 4, "日"},
		{"日本語", 2, ""},
		{"a\xffb", 2, "a\xff"},
		{"anything", 0, ""},
	} {
		if got := c.Truncate(tt.s, tt.n); got != tt.want || c.Count(got) > max(tt.n, 0) {
			t.Errorf("Truncate(%q, %d) = %q (%d bytes), want %q", tt.s, tt.n, got, c.Count(got), tt.want)
		}
		if got := c.Count(tt.s); got != len(tt.s) {
			t.Errorf("Count(%q) = %d, want its %d bytes", tt.s, got, len(tt.s))
		}
	}
}

// TestMergeLongIsMerge: the heap merge of long pieces makes the same
// tokens as the plain scan, on pieces built to tie and overlap (runs of
// one letter, of two, DNA, repeats of words, bytes of scripts with few
// merges), and as tiktoken-go on a few.
func TestMergeLongIsMerge(t *testing.T) {
	c := Cl100k()
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	from := func(alphabet []string, n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	pieces := map[string]string{
		"one letter":     strings.Repeat("a", 3000),
		"two letters":    strings.Repeat("ab", 1500),
		"dna":            from([]string{"A", "C", "G", "T"}, 4000),
		"dna lower":      from([]string{"a", "c", "g", "t"}, 4000),
		"words":          from([]string{"the", "mer", "ge", "token", "ization", "x", "qu"}, 4000),
		"hex":            from(strings.Split("0123456789abcdef", ""), 3000),
		"cyrillic bytes": from([]string{"ж", "щ", "ю", "я", "ё"}, 3000),
		"han":            from([]string{"語", "言", "模", "型", "記", "憶"}, 3000),
		"just long":      from([]string{"b", "c", "d"}, longPiece),
	}
	// And random ones: letters of a random small alphabet, any length.
	letters := strings.Split("aeiourstlnmkbzxyqAEOST", "")
	for i := range 60 {
		k := 1 + rng.IntN(6)
		alphabet := make([]string, k)
		for j := range alphabet {
			alphabet[j] = letters[rng.IntN(len(letters))]
		}
		pieces[fmt.Sprintf("random %d", i)] = from(alphabet, longPiece+rng.IntN(1500))
	}
	for name, piece := range pieces {
		t.Run(name, func(t *testing.T) {
			want := c.bpe.mergeShort(piece, nil)
			got := c.bpe.mergeLong(piece, nil)
			if !slices.Equal(got, want) {
				t.Fatalf("%d bytes: heap merge gives %d tokens, the scan %d; first difference at token %d",
					len(piece), len(got), len(want), firstDiff(got, want))
			}
			if len(piece) <= 3000 {
				checkParity(t, piece)
			}
		})
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkCountLongRun counts a run of DNA letters (one piece) with the
// heap merge and with the plain scan, in the same run.
func BenchmarkCountLongRun(b *testing.B) {
	c := Cl100k()
	if err := c.Err(); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for range 16 << 10 {
		sb.WriteByte("ACGT"[rng.IntN(4)])
	}
	piece := sb.String()
	b.Run("heap", func(b *testing.B) {
		for b.Loop() {
			c.bpe.mergeLong(piece, nil)
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			c.bpe.mergeShort(piece, nil)
		}
	})
}
