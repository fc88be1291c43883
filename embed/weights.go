package embed

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nlpodyssey/cybertron/pkg/converter/pytorch"
)

// File names in a Hugging Face model directory, and ours.
const (
	configFile      = "config.json"
	pytorchFile     = "pytorch_model.bin"
	safetensorsFile = "model.safetensors"
	// ConvertedFile is the converted weights file Load writes next to the
	// checkpoint (or reads on its own, when it is all a directory has).
	ConvertedFile = "model.vcmcp.bin"
)

const convertedMagic = "VCMCPEMB\x01"

// bertConfig is the part of config.json the encoder needs.
type bertConfig struct {
	ModelType             string  `json:"model_type"`
	HiddenSize            int     `json:"hidden_size"`
	NumHiddenLayers       int     `json:"num_hidden_layers"`
	NumAttentionHeads     int     `json:"num_attention_heads"`
	IntermediateSize      int     `json:"intermediate_size"`
	HiddenAct             string  `json:"hidden_act"`
	LayerNormEps          float64 `json:"layer_norm_eps"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	TypeVocabSize         int     `json:"type_vocab_size"`
	VocabSize             int     `json:"vocab_size"`
	PositionEmbeddingType string  `json:"position_embedding_type"`
}

func readConfig(dir string, name ...string) (bertConfig, error) {
	var c bertConfig
	file := configFile
	if len(name) > 0 {
		file = name[0]
	}
	if err := readJSON(filepath.Join(dir, file), &c); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return c, fmt.Errorf("embed: %s: %w", dir, ErrNoModel)
		}
		return c, err
	}
	return c.validate()
}

// validate fills defaults and rejects configurations the encoder cannot run.
func (c bertConfig) validate() (bertConfig, error) {
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-12
	}
	if c.HiddenAct == "" {
		c.HiddenAct = "gelu"
	}
	if c.TypeVocabSize == 0 {
		c.TypeVocabSize = 2
	}
	switch {
	case c.ModelType != "" && c.ModelType != "bert":
		return c, fmt.Errorf("embed: model_type %q is not bert: %w", c.ModelType, ErrCorrupt)
	case c.PositionEmbeddingType != "" && c.PositionEmbeddingType != "absolute":
		return c, fmt.Errorf("embed: position_embedding_type %q unsupported: %w", c.PositionEmbeddingType, ErrCorrupt)
	case c.HiddenSize <= 0 || c.NumHiddenLayers <= 0 || c.NumAttentionHeads <= 0 || c.IntermediateSize <= 0 ||
		c.VocabSize <= 0 || c.MaxPositionEmbeddings <= 0 || c.HiddenSize%c.NumAttentionHeads != 0 ||
		c.HiddenSize > 1<<14 || c.IntermediateSize > 1<<16 || c.VocabSize > 1<<22 || c.NumHiddenLayers > 128 ||
		c.MaxPositionEmbeddings > 1<<16 || c.TypeVocabSize > 16:
		return c, fmt.Errorf("embed: config.json has an impossible shape: %w", ErrCorrupt)
	}
	switch c.HiddenAct {
	case "gelu", "gelu_new", "gelu_pytorch_tanh", "relu":
	default:
		return c, fmt.Errorf("embed: hidden_act %q unsupported: %w", c.HiddenAct, ErrCorrupt)
	}
	return c, nil
}

// shapes lists every tensor the encoder needs with its element count.
func (c bertConfig) shapes() map[string]int {
	H, F := c.HiddenSize, c.IntermediateSize
	m := map[string]int{
		"embeddings.word_embeddings.weight":       c.VocabSize * H,
		"embeddings.position_embeddings.weight":   c.MaxPositionEmbeddings * H,
		"embeddings.token_type_embeddings.weight": c.TypeVocabSize * H,
		"embeddings.LayerNorm.weight":             H,
		"embeddings.LayerNorm.bias":               H,
	}
	for i := 0; i < c.NumHiddenLayers; i++ {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		for _, n := range []string{"query", "key", "value"} {
			m[p+"attention.self."+n+".weight"] = H * H
			m[p+"attention.self."+n+".bias"] = H
		}
		m[p+"attention.output.dense.weight"] = H * H
		m[p+"attention.output.dense.bias"] = H
		m[p+"attention.output.LayerNorm.weight"] = H
		m[p+"attention.output.LayerNorm.bias"] = H
		m[p+"intermediate.dense.weight"] = F * H
		m[p+"intermediate.dense.bias"] = F
		m[p+"output.dense.weight"] = H * F
		m[p+"output.dense.bias"] = H
		m[p+"output.LayerNorm.weight"] = H
		m[p+"output.LayerNorm.bias"] = H
	}
	return m
}

// canonicalName maps checkpoint names onto BertModel's ("bert." prefixes of
// task heads, TF-era gamma/beta).
func canonicalName(name string) string {
	name = strings.TrimPrefix(name, "bert.")
	if strings.HasSuffix(name, "LayerNorm.gamma") {
		name = strings.TrimSuffix(name, "gamma") + "weight"
	} else if strings.HasSuffix(name, "LayerNorm.beta") {
		name = strings.TrimSuffix(name, "beta") + "bias"
	}
	return name
}

// tensors are the named float32 weights of the encoder.
type tensors map[string][]float32

// check keeps the tensors the encoder uses and verifies their sizes.
func (t tensors) check(c bertConfig) (tensors, error) {
	out := make(tensors)
	for name, size := range c.shapes() {
		v, ok := t[name]
		if !ok {
			return nil, fmt.Errorf("embed: weights lack %s: %w", name, ErrCorrupt)
		}
		if len(v) != size {
			return nil, fmt.Errorf("embed: %s has %d values, config.json implies %d: %w", name, len(v), size, ErrCorrupt)
		}
		out[name] = v
	}
	return out, nil
}

// readPytorch reads pytorch_model.bin with cybertron's PyTorch reader.
func readPytorch(path string) (ts tensors, err error) {
	defer func() {
		// The pickle reader panics on some malformed input.
		if r := recover(); r != nil {
			ts, err = nil, fmt.Errorf("embed: read %s: %v: %w", path, r, ErrCorrupt)
		}
	}()
	p := pytorch.NewParamsProvider[float32]().
		WithNameMapping(canonicalName).
		WithPreProcessing(func(*pytorch.ParamsProvider[float32]) error { return nil })
	if err := p.Load(path); err != nil {
		return nil, fmt.Errorf("embed: read %s: %v: %w", path, err, ErrCorrupt)
	}
	ts = make(tensors)
	err = p.Iterate(func(name string, data []float32) error {
		ts[name] = data
		return nil
	})
	return ts, err
}

// readSafetensors reads a model.safetensors file (F32, F16 or BF16 tensors).
func readSafetensors(path string) (tensors, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	bad := func(why string) error { return fmt.Errorf("embed: %s: %s: %w", path, why, ErrCorrupt) }
	if len(b) < 8 {
		return nil, bad("too short")
	}
	hl := binary.LittleEndian.Uint64(b)
	if hl > uint64(len(b)-8) {
		return nil, bad("header length out of range")
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+hl], &header); err != nil {
		return nil, bad("header: " + err.Error())
	}
	data := b[8+hl:]
	ts := make(tensors)
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var info struct {
			Dtype   string   `json:"dtype"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			return nil, bad(name + ": " + err.Error())
		}
		lo, hi := info.Offsets[0], info.Offsets[1]
		if lo < 0 || hi < lo || hi > int64(len(data)) {
			return nil, bad(name + ": offsets out of range")
		}
		src := data[lo:hi]
		var v []float32
		switch info.Dtype {
		case "F32":
			v = make([]float32, len(src)/4)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			}
		case "F16":
			v = make([]float32, len(src)/2)
			for i := range v {
				v[i] = f16to32(binary.LittleEndian.Uint16(src[2*i:]))
			}
		case "BF16":
			v = make([]float32, len(src)/2)
			for i := range v {
				v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
			}
		default:
			continue // integer buffers such as position_ids
		}
		ts[canonicalName(name)] = v
	}
	return ts, nil
}

func f16to32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		f := float32(frac) / 1024 / 16384
		if sign != 0 {
			f = -f
		}
		return f
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// sourceStamp identifies the checkpoint a converted file came from.
type sourceStamp struct {
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
	// SHA256 is set for an imported ONNX file.
	SHA256 string `json:"sha256,omitempty"`
}

func stampOf(path string) (sourceStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return sourceStamp{}, err
	}
	return sourceStamp{Name: filepath.Base(path), Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, nil
}

// convertedHeader is the JSON header of model.vcmcp.bin.
type convertedHeader struct {
	Source  sourceStamp      `json:"source"`
	Tensors []convertedEntry `json:"tensors"`
}

type convertedEntry struct {
	Name string `json:"name"`
	Len  int    `json:"len"`
}

// writeConverted writes the tensors atomically: magic, header length,
// JSON header, little-endian float32 data in header order, then the sha256
// of everything before it.
func writeConverted(path string, ts tensors, src sourceStamp) error {
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	h := convertedHeader{Source: src}
	for _, n := range names {
		h.Tensors = append(h.Tensors, convertedEntry{Name: n, Len: len(ts[n])})
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	return writeFileAtomic(path, func(w io.Writer) error {
		sum := sha256.New()
		bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<20)
		bw.WriteString(convertedMagic)
		binary.Write(bw, binary.LittleEndian, uint32(len(hdr)))
		bw.Write(hdr)
		var buf [4]byte
		for _, n := range names {
			for _, v := range ts[n] {
				binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
				bw.Write(buf[:])
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		_, err := w.Write(sum.Sum(nil))
		return err
	})
}

// readConverted reads model.vcmcp.bin and verifies its checksum.
func readConverted(path string) (tensors, sourceStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, sourceStamp{}, fmt.Errorf("embed: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, sourceStamp{}, fmt.Errorf("embed: %w", err)
	}
	bad := func(why string) error { return fmt.Errorf("embed: %s: %s: %w", path, why, ErrCorrupt) }
	if fi.Size() < int64(len(convertedMagic)+4+sha256.Size) {
		return nil, sourceStamp{}, bad("too short")
	}
	sum := sha256.New()
	r := &hashReader{r: bufio.NewReaderSize(io.LimitReader(f, fi.Size()-sha256.Size), 1<<20), h: sum}
	magic := make([]byte, len(convertedMagic))
	var hl uint32
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != convertedMagic {
		return nil, sourceStamp{}, bad("not a converted model file")
	}
	if err := binary.Read(r, binary.LittleEndian, &hl); err != nil || int64(hl) > fi.Size() {
		return nil, sourceStamp{}, bad("bad header length")
	}
	hdr := make([]byte, hl)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, sourceStamp{}, bad("truncated header")
	}
	var h convertedHeader
	if err := json.Unmarshal(hdr, &h); err != nil {
		return nil, sourceStamp{}, bad("header: " + err.Error())
	}
	total := int64(0)
	for _, e := range h.Tensors {
		if e.Len < 0 {
			return nil, sourceStamp{}, bad("negative tensor length")
		}
		total += int64(e.Len) * 4
	}
	if total != fi.Size()-sha256.Size-int64(len(convertedMagic))-4-int64(hl) {
		return nil, sourceStamp{}, bad("size does not match header")
	}
	ts := make(tensors, len(h.Tensors))
	buf := make([]byte, 1<<16)
	for _, e := range h.Tensors {
		v := make([]float32, e.Len)
		for off := 0; off < len(v); {
			n := min(len(buf)/4, len(v)-off)
			if _, err := io.ReadFull(r, buf[:n*4]); err != nil {
				return nil, sourceStamp{}, bad("truncated data")
			}
			for i := 0; i < n; i++ {
				v[off+i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
			}
			off += n
		}
		ts[e.Name] = v
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, want); err != nil {
		return nil, sourceStamp{}, bad("missing checksum")
	}
	if string(sum.Sum(nil)) != string(want) {
		return nil, sourceStamp{}, bad("checksum mismatch")
	}
	return ts, h.Source, nil
}

type hashReader struct {
	r io.Reader
	h hash.Hash
}

func (h *hashReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	return n, err
}

// writeFileAtomic writes path through a temporary file in the same
// directory, fsyncs it and renames it into place.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return fmt.Errorf("embed: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("embed: sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("embed: close %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil // not every platform can open a directory
	}
	defer d.Close()
	d.Sync() // best effort: some filesystems refuse fsync on directories
	return nil
}
