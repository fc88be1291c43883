package embed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ImportOptions say what ImportONNX reads and where it puts the result.
type ImportOptions struct {
	// ONNX is the model file (an export of a BERT sentence encoder whose
	// output is last_hidden_state, e.g. sentence-transformers'
	// all-MiniLM-L6-v2 as onnx/model.onnx).
	ONNX string
	// Tokenizer is tokenizer.json or vocab.txt (default: whichever is next
	// to the ONNX file or in its parent directory, tokenizer.json first).
	Tokenizer string
	// Config is the model's config.json (default: next to the ONNX file or
	// in its parent; without one, the configuration is read off the graph).
	Config string
	// Dir receives the model (default DefaultDir()).
	Dir string
	// SHA256, when set, is the hex checksum the ONNX file must have.
	SHA256 string
}

// ImportResult describes an imported model.
type ImportResult struct {
	Dir    string `json:"dir"`
	SHA256 string `json:"sha256"`
	// ConfigFrom is the config.json used, or "graph" when it was inferred.
	ConfigFrom string `json:"config_from"`
	Layers     int    `json:"layers"`
	Dim        int    `json:"dim"`
	Heads      int    `json:"heads"`
}

// ImportONNX converts the weights of an ONNX export into a model directory
// that Load reads (config.json, vocab.txt, tokenizer_config.json and
// model.vcmcp.bin), checking the file's sha256 when one is given, then
// loads the result once to prove it works. Errors wrap ErrChecksum,
// ErrCorrupt or ErrNoModel.
func ImportONNX(ctx context.Context, o ImportOptions) (*ImportResult, error) {
	if o.ONNX == "" {
		return nil, errors.New("embed: import: no ONNX file given")
	}
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	sum, size, err := fileSHA256(o.ONNX)
	if err != nil {
		return nil, fmt.Errorf("embed: import: %w", err)
	}
	if o.SHA256 != "" && !strings.EqualFold(o.SHA256, sum) {
		return nil, fmt.Errorf("embed: import: %s has sha256 %s, expected %s: %w", o.ONNX, sum, o.SHA256, ErrChecksum)
	}
	for _, name := range []string{safetensorsFile, pytorchFile} {
		if _, err := os.Stat(filepath.Join(o.Dir, name)); err == nil {
			return nil, fmt.Errorf("embed: import: %s already holds %s, which Load would prefer: import into another directory", o.Dir, name)
		}
	}
	near := []string{filepath.Dir(o.ONNX), filepath.Dir(filepath.Dir(o.ONNX))}
	if o.Tokenizer == "" {
		o.Tokenizer = findNear(near, "tokenizer.json", "vocab.txt")
		if o.Tokenizer == "" {
			return nil, fmt.Errorf("embed: import: no tokenizer.json or vocab.txt next to %s: pass one: %w", o.ONNX, ErrNoModel)
		}
	}
	if o.Config == "" {
		o.Config = findNear(near, configFile)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ts, cfg, err := readONNX(o.ONNX)
	if err != nil {
		return nil, err
	}
	if cfg, err = cfg.validate(); err != nil {
		return nil, fmt.Errorf("embed: import: configuration read off %s: %w", o.ONNX, err)
	}
	res := &ImportResult{Dir: o.Dir, SHA256: sum, ConfigFrom: "graph"}
	if o.Config != "" {
		if cfg, err = readConfig(filepath.Dir(o.Config), filepath.Base(o.Config)); err != nil {
			return nil, err
		}
		res.ConfigFrom = o.Config
	}
	if ts, err = ts.check(cfg); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("embed: import: %w", err)
	}
	if err := importTokenizer(o.Tokenizer, o.Dir); err != nil {
		return nil, err
	}
	cj, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(o.Dir, configFile), func(w io.Writer) error {
		_, err := w.Write(append(cj, '\n'))
		return err
	}); err != nil {
		return nil, err
	}
	stamp := sourceStamp{Name: filepath.Base(o.ONNX), Size: size, SHA256: sum}
	if err := writeConverted(filepath.Join(o.Dir, ConvertedFile), ts, stamp); err != nil {
		return nil, err
	}
	ts = nil
	m, err := Load(ctx, o.Dir, &Options{CacheSize: -1, ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("embed: import wrote %s but it does not load: %w", o.Dir, err)
	}
	res.Layers, res.Dim, res.Heads = cfg.NumHiddenLayers, m.Dim(), cfg.NumAttentionHeads
	return res, nil
}

func findNear(dirs []string, names ...string) string {
	for _, name := range names {
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p
			}
		}
	}
	return ""
}

func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// hfTokenizer is the part of a Hugging Face tokenizer.json that a BERT
// WordPiece tokenizer is described by.
type hfTokenizer struct {
	Normalizer *struct {
		Type               string `json:"type"`
		Lowercase          *bool  `json:"lowercase"`
		StripAccents       *bool  `json:"strip_accents"`
		HandleChineseChars *bool  `json:"handle_chinese_chars"`
	} `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	Model struct {
		Type                    string         `json:"type"`
		UnkToken                string         `json:"unk_token"`
		ContinuingSubwordPrefix string         `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int            `json:"max_input_chars_per_word"`
		Vocab                   map[string]int `json:"vocab"`
	} `json:"model"`
}

// importTokenizer writes vocab.txt and tokenizer_config.json into dir from
// a tokenizer.json, or copies a vocab.txt (with the tokenizer_config.json
// and sentence_bert_config.json beside it, if any).
func importTokenizer(src, dir string) error {
	bad := func(why string) error { return fmt.Errorf("embed: import: %s: %s: %w", src, why, ErrCorrupt) }
	if !strings.HasSuffix(src, ".json") {
		for _, name := range []string{"vocab.txt", "tokenizer_config.json", "sentence_bert_config.json"} {
			from := filepath.Join(filepath.Dir(src), name)
			if name == "vocab.txt" {
				from = src
			}
			b, err := os.ReadFile(from)
			if errors.Is(err, fs.ErrNotExist) && name != "vocab.txt" {
				continue
			}
			if err != nil {
				return fmt.Errorf("embed: import: %w", err)
			}
			if err := writeFileAtomic(filepath.Join(dir, name), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
				return err
			}
		}
		return nil
	}
	raw, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("embed: import: %w", err)
	}
	var t hfTokenizer
	if err := json.Unmarshal(raw, &t); err != nil {
		return bad(err.Error())
	}
	switch {
	case t.Model.Type != "WordPiece":
		return bad(fmt.Sprintf("model type %q: only WordPiece (BERT) tokenizers are supported", t.Model.Type))
	case t.Normalizer == nil || t.Normalizer.Type != "BertNormalizer":
		return bad("only the BertNormalizer is supported")
	case t.PreTokenizer == nil || t.PreTokenizer.Type != "BertPreTokenizer":
		return bad("only the BertPreTokenizer is supported")
	case t.Model.ContinuingSubwordPrefix != "" && t.Model.ContinuingSubwordPrefix != "##":
		return bad("continuing_subword_prefix is not ##")
	case t.Model.MaxInputCharsPerWord != 0 && t.Model.MaxInputCharsPerWord != maxCharsPerWord:
		return bad(fmt.Sprintf("max_input_chars_per_word %d, not %d", t.Model.MaxInputCharsPerWord, maxCharsPerWord))
	}
	words := make([]string, len(t.Model.Vocab))
	for w, id := range t.Model.Vocab {
		if id < 0 || id >= len(words) || words[id] != "" {
			return bad(fmt.Sprintf("vocabulary ids are not 0..%d, each once", len(words)-1))
		}
		if strings.ContainsAny(w, "\n\r") {
			return bad(fmt.Sprintf("vocabulary entry %q holds a line break", w))
		}
		words[id] = w
	}
	var vocab bytes.Buffer
	for _, w := range words {
		vocab.WriteString(w)
		vocab.WriteByte('\n')
	}
	unk := t.Model.UnkToken
	if unk == "" {
		unk = "[UNK]"
	}
	tc := tokenizerConfig{DoLowerCase: t.Normalizer.Lowercase, StripAccents: t.Normalizer.StripAccents,
		TokenizeChineseChars: t.Normalizer.HandleChineseChars, UnkToken: unk,
		ClsToken: "[CLS]", SepToken: "[SEP]", PadToken: "[PAD]", MaskToken: "[MASK]"}
	tj, err := json.MarshalIndent(tc, "", "  ")
	if err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	for name, b := range map[string][]byte{"vocab.txt": vocab.Bytes(), "tokenizer_config.json": append(tj, '\n'), "tokenizer.json": raw} {
		if err := writeFileAtomic(filepath.Join(dir, name), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
			return err
		}
	}
	return nil
}
