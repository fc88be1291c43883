package embed

import (
	"context"
	"os"
	"path/filepath"
	"time"
)

// Status describes a model directory.
type Status struct {
	Dir string `json:"dir"`
	// Files maps each model file present to its size in bytes.
	Files map[string]int64 `json:"files"`
	// Tokenizer is true when the tokenizer files load (enough for
	// `vc-mcp model tokenize`).
	Tokenizer bool `json:"tokenizer"`
	// Ready is true when the whole model loads.
	Ready bool `json:"ready"`
	// Reason says why the model is not ready ("" when it is).
	Reason string `json:"reason,omitempty"`
	// Dim, Layers and Vocab describe a loaded model.
	Dim    int `json:"dim,omitempty"`
	Layers int `json:"layers,omitempty"`
	Vocab  int `json:"vocab,omitempty"`
	// LoadTime is how long the load took (converting included, if needed).
	LoadTime time.Duration `json:"load_time_ns,omitempty"`
}

// Inspect loads the model in dir, as Lazy would, and reports what is there
// and whether it works. It converts the weights if they were never
// converted, and never touches the network.
func Inspect(ctx context.Context, dir string, opts *Options) Status {
	st := Status{Dir: dir, Files: map[string]int64{}}
	for _, name := range []string{configFile, "vocab.txt", "tokenizer_config.json", "tokenizer.json",
		"sentence_bert_config.json", safetensorsFile, pytorchFile, ConvertedFile} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() {
			st.Files[name] = fi.Size()
		}
	}
	if _, err := LoadTokenizer(dir); err == nil {
		st.Tokenizer = true
	}
	o := Options{CacheSize: -1}
	if opts != nil {
		o = *opts
	}
	start := time.Now()
	m, err := Load(ctx, dir, &o)
	if err != nil {
		st.Reason = reasonFor(dir, err)
		return st
	}
	st.LoadTime = time.Since(start)
	st.Ready = true
	st.Dim = m.Dim()
	st.Layers = m.enc.cfg.NumHiddenLayers
	st.Vocab = m.enc.cfg.VocabSize
	return st
}
