package embed

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func embedOne(t *testing.T, m *Model, text string) []float32 {
	t.Helper()
	v, err := m.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

// writeSafetensors writes ts as an F32 safetensors file.
func writeSafetensors(t *testing.T, path string, ts tensors) {
	t.Helper()
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, n := range names {
		start := len(data)
		for _, v := range ts[n] {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
		header[n] = map[string]any{"dtype": "F32", "shape": []int{len(ts[n])}, "data_offsets": []int{start, len(data)}}
	}
	header["embeddings.position_ids"] = map[string]any{"dtype": "I64", "shape": []int{0}, "data_offsets": []int{len(data), len(data)}}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(append(out, h...), data...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadFormats(t *testing.T) {
	ctx := context.Background()
	base := copyTiny(t)
	ref, err := Load(ctx, base, &Options{CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	const text = "that caching trick for the feed"
	want := embedOne(t, ref, text)
	if _, err := os.Stat(filepath.Join(base, ConvertedFile)); err != nil {
		t.Fatalf("got no converted file after the first load: %v", err)
	}
	ts, err := readPytorch(filepath.Join(base, pytorchFile))
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"converted file only", func(t *testing.T, dir string) {
			copyFile(t, filepath.Join(base, ConvertedFile), filepath.Join(dir, ConvertedFile))
			os.Remove(filepath.Join(dir, pytorchFile))
		}},
		{"corrupt converted file is rebuilt from the checkpoint", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(base, ConvertedFile))
			b[len(b)/2] ^= 0x40
			os.WriteFile(filepath.Join(dir, ConvertedFile), b, 0o644)
		}},
		{"stale converted file is rebuilt", func(t *testing.T, dir string) {
			other := copyTiny(t)
			os.WriteFile(filepath.Join(other, "config.json"), []byte(`{"model_type":"bert","hidden_size":32,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":64,"vocab_size":30522,"max_position_embeddings":512}`), 0o644)
			os.Rename(filepath.Join(other, pytorchFile), filepath.Join(other, "x"))
			one := tensors{}
			for k, v := range ts {
				if !strings.HasPrefix(k, "encoder.layer.1.") {
					one[k] = v
				}
			}
			writeConverted(filepath.Join(dir, ConvertedFile), one, sourceStamp{Name: pytorchFile, Size: 1})
		}},
		{"safetensors", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, pytorchFile))
			prefixed := tensors{}
			for k, v := range ts {
				prefixed["bert."+k] = v // task-head checkpoints prefix names
			}
			writeSafetensors(t, filepath.Join(dir, safetensorsFile), prefixed)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyTiny(t)
			tt.setup(t, dir)
			m, err := Load(ctx, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(embedOne(t, m, text), want); d > 1e-7 {
				t.Errorf("got max diff %g from the reference load, want identical", d)
			}
			if _, _, err := readConverted(filepath.Join(dir, ConvertedFile)); err != nil {
				t.Errorf("converted file after load: %v", err)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadBroken(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(t *testing.T, dir string)
		wantErr    error
		wantReason string
	}{
		{"empty dir", func(t *testing.T, dir string) {
			for _, n := range []string{"config.json", "vocab.txt", "tokenizer_config.json", pytorchFile} {
				os.Remove(filepath.Join(dir, n))
			}
		}, ErrNoModel, "no model at"},
		{"no weights", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, pytorchFile))
		}, ErrNoModel, "run `vc-mcp model pull`"},
		{"truncated checkpoint", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, pytorchFile), 100000)
		}, ErrCorrupt, "model corrupt"},
		{"garbage checkpoint", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, pytorchFile), []byte("not a pickle at all"), 0o644)
		}, ErrCorrupt, "model corrupt"},
		{"corrupt converted file, no checkpoint", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ConvertedFile), []byte(convertedMagic+"garbage garbage garbage garbage garbage"), 0o644)
			os.Remove(filepath.Join(dir, pytorchFile))
		}, ErrCorrupt, "model corrupt"},
		{"config does not match weights", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(b), `"intermediate_size": 64`, `"intermediate_size": 128`, 1)), 0o644)
		}, ErrCorrupt, "model corrupt"},
		{"bad config json", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte("{"), 0o644)
		}, ErrCorrupt, "model corrupt"},
		{"not bert", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"gpt2"}`), 0o644)
		}, ErrCorrupt, "model corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyTiny(t)
			tt.setup(t, dir)
			_, err := Load(context.Background(), dir, &Options{ConvertedPath: filepath.Join(dir, ConvertedFile)})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			l := NewLazy(dir, &Options{ConvertedPath: filepath.Join(dir, ConvertedFile)})
			if ok, reason := l.Ready(); ok || reason != "not started" {
				t.Errorf("before Start: got %v %q, want false \"not started\"", ok, reason)
			}
			l.Start(context.Background())
			if _, err := l.Wait(context.Background()); !errors.Is(err, ErrNotReady) {
				t.Errorf("Wait: got %v, want ErrNotReady", err)
			}
			ok, reason := l.Ready()
			if ok || !strings.Contains(reason, tt.wantReason) {
				t.Errorf("got %v %q, want not ready with %q", ok, reason, tt.wantReason)
			}
			if _, err := l.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrNotReady) {
				t.Errorf("Embed: got %v, want ErrNotReady", err)
			}
			if st := Inspect(context.Background(), dir, nil); st.Ready || st.Reason == "" {
				t.Errorf("Inspect: got %+v, want not ready with a reason", st)
			}
		})
	}
}

func TestLazyLoads(t *testing.T) {
	dir := copyTiny(t)
	l := NewLazy(dir, nil)
	if _, err := l.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrNotReady) {
		t.Fatalf("before Start: got %v, want ErrNotReady", err)
	}
	l.Start(context.Background())
	l.Start(context.Background()) // a second Start is a no-op
	m, err := l.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ok, reason := l.Ready(); !ok || reason != "ready" {
		t.Errorf("got %v %q, want true \"ready\"", ok, reason)
	}
	if l.Dim() != 32 || m.Dim() != 32 {
		t.Errorf("got dim %d/%d, want 32", l.Dim(), m.Dim())
	}
	v, err := l.Embed(context.Background(), []string{"hello"})
	if err != nil || len(v[0]) != 32 {
		t.Errorf("got %v, %v; want one 32-d vector", v, err)
	}
}

func FuzzTokenizer(f *testing.F) {
	tok, err := LoadTokenizer(tinyDir)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"Hello, world!", "Café 東京 😀", "[SEP][CLS]x", "\x00\ufffd", "ΟΔΥΣΣΕΥΣ", strings.Repeat("ab", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		if len(ids) < 2 || len(ids) > tok.MaxTokens() || ids[0] != tok.clsID || ids[len(ids)-1] != tok.sepID {
			t.Fatalf("Encode(%q) = %v: want [CLS] ... [SEP] within %d", s, ids, tok.MaxTokens())
		}
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("id %d outside the vocabulary", id)
			}
		}
		if utf8.ValidString(s) && strings.TrimSpace(s) == "" && len(ids) != 2 {
			t.Fatalf("blank %q gave %v, want [CLS] [SEP]", s, ids)
		}
	})
}

func FuzzSafetensors(f *testing.F) {
	f.Add([]byte("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}\x00\x00\x80?"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "m.safetensors")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readSafetensors(p); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("got %v, want nil or ErrCorrupt", err)
		}
	})
}
