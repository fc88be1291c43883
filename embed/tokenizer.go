package embed

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// DefaultMaxTokens is where sentence-transformers truncates all-MiniLM-L6-v2
// input: 256 word pieces including [CLS] and [SEP].
const DefaultMaxTokens = 256

// maxCharsPerWord is WordPiece's limit: longer words become [UNK] whole.
const maxCharsPerWord = 100

// Tokenizer is a BERT tokenizer that gives the same ids as Hugging Face's
// BertTokenizer / tokenizer.json (BertNormalizer + BertPreTokenizer +
// WordPiece) for the same vocabulary and configuration. It is safe for
// concurrent use.
type Tokenizer struct {
	vocab     map[string]int
	unkID     int
	clsID     int
	sepID     int
	lower     bool
	strip     bool
	chinese   bool
	maxTokens int
	// specials are the added tokens matched verbatim in the raw text before
	// normalisation, longest first.
	specials []string
}

// tokenizerConfig is the part of tokenizer_config.json the tokenizer uses.
type tokenizerConfig struct {
	DoLowerCase          *bool  `json:"do_lower_case"`
	StripAccents         *bool  `json:"strip_accents"`
	TokenizeChineseChars *bool  `json:"tokenize_chinese_chars"`
	UnkToken             string `json:"unk_token"`
	ClsToken             string `json:"cls_token"`
	SepToken             string `json:"sep_token"`
	PadToken             string `json:"pad_token"`
	MaskToken            string `json:"mask_token"`
}

// sentenceBertConfig is sentence-transformers' sentence_bert_config.json.
type sentenceBertConfig struct {
	MaxSeqLength int `json:"max_seq_length"`
}

// LoadTokenizer reads vocab.txt and, when present, tokenizer_config.json and
// sentence_bert_config.json from dir. Without a config it assumes an uncased
// BERT (lower-casing, accent stripping, CJK splitting).
func LoadTokenizer(dir string) (*Tokenizer, error) {
	cfg := tokenizerConfig{UnkToken: "[UNK]", ClsToken: "[CLS]", SepToken: "[SEP]", PadToken: "[PAD]", MaskToken: "[MASK]"}
	if err := readJSON(filepath.Join(dir, "tokenizer_config.json"), &cfg); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	maxTokens := DefaultMaxTokens
	var sb sentenceBertConfig
	if err := readJSON(filepath.Join(dir, "sentence_bert_config.json"), &sb); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if sb.MaxSeqLength > 2 {
		maxTokens = sb.MaxSeqLength
	}
	vocab, err := readVocab(filepath.Join(dir, "vocab.txt"))
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{vocab: vocab, lower: true, chinese: true, maxTokens: maxTokens}
	if cfg.DoLowerCase != nil {
		t.lower = *cfg.DoLowerCase
	}
	// strip_accents null follows lower-casing, as in Hugging Face.
	t.strip = t.lower
	if cfg.StripAccents != nil {
		t.strip = *cfg.StripAccents
	}
	if cfg.TokenizeChineseChars != nil {
		t.chinese = *cfg.TokenizeChineseChars
	}
	ids := map[string]*int{cfg.UnkToken: &t.unkID, cfg.ClsToken: &t.clsID, cfg.SepToken: &t.sepID}
	for tok, dst := range ids {
		id, ok := vocab[tok]
		if !ok {
			return nil, fmt.Errorf("embed: vocab.txt in %s lacks special token %q: %w", dir, tok, ErrCorrupt)
		}
		*dst = id
	}
	for _, tok := range []string{cfg.ClsToken, cfg.SepToken, cfg.UnkToken, cfg.PadToken, cfg.MaskToken} {
		if _, ok := vocab[tok]; ok && tok != "" {
			t.specials = append(t.specials, tok)
		}
	}
	return t, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("embed: parse %s: %v: %w", path, err, ErrCorrupt)
	}
	return nil
}

func readVocab(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	defer f.Close()
	vocab := make(map[string]int, 32000)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for i := 0; sc.Scan(); i++ {
		tok := strings.TrimRight(sc.Text(), "\r")
		if _, dup := vocab[tok]; !dup {
			vocab[tok] = i
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("embed: read %s: %w", path, err)
	}
	if len(vocab) == 0 {
		return nil, fmt.Errorf("embed: %s is empty: %w", path, ErrCorrupt)
	}
	return vocab, nil
}

// VocabSize is the number of distinct entries in the vocabulary.
func (t *Tokenizer) VocabSize() int { return len(t.vocab) }

// MaxTokens is the truncation length, special tokens included.
func (t *Tokenizer) MaxTokens() int { return t.maxTokens }

// Encode returns the ids of [CLS] text [SEP], truncated to MaxTokens word
// pieces in all. Special tokens written literally in text ("[SEP]") map to
// their ids, as in Hugging Face tokenizers.
func (t *Tokenizer) Encode(text string) []int {
	ids := []int{t.clsID}
	limit := t.maxTokens - 1
	t.encodeInto(text, &ids, limit)
	return append(ids, t.sepID)
}

// encodeInto appends word piece ids to ids until len(*ids) reaches limit.
func (t *Tokenizer) encodeInto(text string, ids *[]int, limit int) {
	for text != "" && len(*ids) < limit {
		pos, tok := t.nextSpecial(text)
		seg := text
		if pos >= 0 {
			seg = text[:pos]
		}
		t.encodeSegment(seg, ids, limit)
		if pos < 0 {
			return
		}
		if len(*ids) < limit {
			*ids = append(*ids, t.vocab[tok])
		}
		text = text[pos+len(tok):]
	}
}

// nextSpecial finds the leftmost special token in s (the longest at that
// position), or -1.
func (t *Tokenizer) nextSpecial(s string) (int, string) {
	best, bestTok := -1, ""
	for _, tok := range t.specials {
		i := strings.Index(s, tok)
		if i >= 0 && (best < 0 || i < best || (i == best && len(tok) > len(bestTok))) {
			best, bestTok = i, tok
		}
	}
	return best, bestTok
}

func (t *Tokenizer) encodeSegment(seg string, ids *[]int, limit int) {
	norm := t.normalize(seg)
	var word strings.Builder
	flush := func() bool {
		if word.Len() == 0 {
			return len(*ids) < limit
		}
		t.wordPiece(word.String(), ids, limit)
		word.Reset()
		return len(*ids) < limit
	}
	for _, r := range norm {
		switch {
		case isSplitSpace(r):
			if !flush() {
				return
			}
		case isPunct(r):
			if !flush() {
				return
			}
			word.WriteRune(r)
			if !flush() {
				return
			}
		default:
			word.WriteRune(r)
		}
	}
	flush()
}

// normalize is BertNormalizer: clean control characters and whitespace,
// space out CJK ideographs, lower-case, strip accents.
func (t *Tokenizer) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		if r == 0 || r == utf8.RuneError || isControl(r) {
			continue
		}
		switch {
		case isCleanSpace(r):
			b.WriteByte(' ')
		case t.chinese && isCJK(r):
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	out := b.String()
	if t.lower {
		out = lowerFull(out)
	}
	if t.strip {
		out = stripAccents(out)
	}
	return out
}

// wordPiece appends the greedy longest-match pieces of word, or [UNK] when
// the word is too long or any part of it cannot be matched.
func (t *Tokenizer) wordPiece(word string, ids *[]int, limit int) {
	if utf8.RuneCountInString(word) > maxCharsPerWord {
		*ids = append(*ids, t.unkID)
		return
	}
	start := len(*ids)
	var buf []byte
	for pos := 0; pos < len(word); {
		end := len(word)
		found := -1
		for end > pos {
			buf = buf[:0]
			if pos > 0 {
				buf = append(buf, "##"...)
			}
			buf = append(buf, word[pos:end]...)
			if id, ok := t.vocab[string(buf)]; ok {
				found = id
				break
			}
			_, size := utf8.DecodeLastRuneInString(word[pos:end])
			end -= size
		}
		if found < 0 {
			*ids = append((*ids)[:start], t.unkID)
			return
		}
		*ids = append(*ids, found)
		pos = end
	}
	if len(*ids) > limit {
		*ids = (*ids)[:limit]
	}
}

// isControl follows tokenizers' BertNormalizer: tab, newline and carriage
// return are whitespace, other Cc, Cf, Co and Cs characters are dropped.
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// isCleanSpace is what the normaliser turns into a plain space.
func isCleanSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\u2028', '\u2029':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// isSplitSpace is what the pre-tokenizer splits on (Unicode White_Space).
func isSplitSpace(r rune) bool {
	return unicode.Is(unicode.White_Space, r)
}

// isPunct is BERT's punctuation: every ASCII non-alphanumeric symbol
// (so "$", "+", "^" and "`" count) and every Unicode P* character.
func isPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

// isCJK covers the CJK Unified Ideographs blocks BERT spaces out (not
// Hiragana, Katakana or Hangul, which are written with spaces or not split).
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}

// stripAccents decomposes (NFD) and drops nonspacing marks.
func stripAccents(s string) string {
	d := norm.NFD.String(s)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lowerFull lower-cases as Hugging Face's tokenizers (Rust) BertNormalizer
// does, which is what sentence-transformers feeds the model: each rune on
// its own through char::to_lowercase, so U+0130 becomes "i\u0307" (which
// Go's strings.ToLower lacks) and a capital sigma is always σ, never the
// word-final ς of Python's str.lower and JavaScript's toLowerCase
// (onnxruntime parity on the real model showed the difference).
func lowerFull(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == '\u0130' {
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
