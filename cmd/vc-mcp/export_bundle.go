package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/vc-mcp/vc-mcp/memory"
)

const exportBundleUsage = `usage:
  vc-mcp export --format jsonl --out FILE [--conversation ID]... [flags]

Writes memory as a vc-mcp bundle (docs/bundle.md): one JSON Lines file
holding, per conversation, every message verbatim as its master log holds
it and every derived decision (tags, compaction boundaries, summaries with
their method and model, splits, aliases, working-set changes), by kind.
"vc-mcp import FILE" restores it exactly into another data directory.
--out - writes to stdout. Without --format, an --out ending in .jsonl
means jsonl. --conversation (repeatable) limits the export to those
conversations. A shared server using the data directory pauses meanwhile.
`

// runExport runs "vc-mcp export": --format picks the writer (markdown, or
// jsonl for the interchange bundle).
func runExport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	own, _, err := ownFlags("export", args, exportFlags)
	if err == nil && isBundleFormat(own) {
		return runExportBundle(ctx, args, stdin, stdout, stderr)
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stderr, exportUsage)
		fmt.Fprint(stderr, "\n"+exportBundleUsage)
		return nil
	}
	switch f := lastFlag(own, "format"); {
	case err != nil || f == "markdown":
	case f == "":
		fmt.Fprint(stderr, exportUsage)
		fmt.Fprint(stderr, "\n"+exportBundleUsage)
		return fmt.Errorf("export: --format is required (markdown, or jsonl for a bundle; an --out ending in .jsonl means jsonl)")
	default:
		return fmt.Errorf("export: unknown --format %q (want markdown or jsonl)", f)
	}
	return runExportMarkdown(ctx, args, stdin, stdout, stderr)
}

// isBundleFormat: --format jsonl (or bundle), or no --format and an --out
// that is stdout or ends in .jsonl.
func isBundleFormat(own map[string][]string) bool {
	switch lastFlag(own, "format") {
	case "jsonl", "bundle":
		return true
	case "":
		out := lastFlag(own, "out")
		return out == "-" || strings.HasSuffix(strings.ToLower(out), ".jsonl")
	}
	return false
}

// exportFlags are export's own flags (each takes a value).
var exportFlags = map[string]bool{"format": true, "out": true, "conversation": true}

// runExportBundle runs "vc-mcp export --format jsonl ...".
func runExportBundle(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			fmt.Fprint(stderr, exportBundleUsage)
			return nil
		}
	}
	own, common, err := ownFlags("export", args, exportFlags)
	if err != nil {
		return err
	}
	out := lastFlag(own, "out")
	if out == "" {
		fmt.Fprint(stderr, exportBundleUsage)
		return fmt.Errorf("export: --out FILE is required (--out - for stdout)")
	}
	var ids []string
	for _, c := range own["conversation"] {
		if err := memory.ValidateConversationID(c); err != nil {
			return fmt.Errorf("export: --conversation: %w", err)
		}
		ids = append(ids, c)
	}
	cfg, err := commandConfig("export", common, stderr)
	if err != nil {
		return err
	}
	store, closeAll, err := openForCommand(ctx, "export", cfg, stderr, func(opts *memory.Options, _ *slog.Logger) (func(), error) {
		opts.Embedder = nil // the bundle holds no vectors
		return nil, nil
	})
	if err != nil {
		return err
	}
	defer closeAll()
	eopts := memory.BundleExportOptions{Conversations: ids, VCMCPVersion: buildVersion()}
	var st memory.BundleStats
	if out == "-" {
		st, err = store.ExportBundle(ctx, stdout, eopts)
	} else {
		err = writeFileAtomic(out, func(w io.Writer) error {
			var werr error
			st, werr = store.ExportBundle(ctx, w, eopts)
			return werr
		})
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("close %s: %w", cfg.DataDir, err)
	}
	report := stdout
	if out == "-" {
		report = stderr
	}
	fmt.Fprintf(report, "exported %d conversation(s) to %s: %d message(s), %d decision(s)\n", st.Conversations, out, st.Messages, st.Decisions)
	return nil
}

// writeFileAtomic writes path through a temporary file beside it, fsync'd
// and renamed into place, so a failed export never leaves half a bundle.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// takeFlag removes a boolean flag (--name, -name, --name=true|false) from
// args and reports whether it was set.
func takeFlag(args []string, name string) ([]string, bool, error) {
	var rest []string
	set := false
	for _, a := range args {
		n, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || n != name {
			rest = append(rest, a)
			continue
		}
		switch {
		case !hasValue || v == "true":
			set = true
		case v == "false":
			set = false
		default:
			return nil, false, fmt.Errorf("--%s takes no value (or =true, =false), got %q", name, v)
		}
	}
	return rest, set, nil
}

// importBundle restores a bundle (vc-mcp import FILE, detected from its
// header, or --format bundle). Everything is verified before anything is
// written.
func importBundle(ctx context.Context, cfg settings, file string, data []byte, merge bool, stdout, stderr io.Writer) error {
	b, err := memory.ReadBundle(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("import %s: %w; nothing was imported", file, err)
	}
	store, closeAll, err := openForCommand(ctx, "import", cfg, stderr, func(opts *memory.Options, log *slog.Logger) (func(), error) {
		opts.Embedder = nil // vectors are derived: whoever serves the data directory next computes them
		return importPrep(cfg)(opts, log)
	})
	if err != nil {
		return err
	}
	defer closeAll()
	bar := progressbar.NewOptions(len(b.Conversations),
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("importing bundle"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }),
	)
	res, err := store.ImportBundle(ctx, b, memory.BundleImportOptions{Merge: merge}, func(done, _ int, _ string) { bar.Set(done) })
	if err == nil {
		err = store.WaitIndexed(ctx)
	}
	if cerr := store.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close %s: %w", cfg.DataDir, cerr))
	}
	switch {
	case errors.Is(err, memory.ErrExists):
		return fmt.Errorf("import %s: %w (vc-mcp import --merge adds only what they lack)", file, err)
	case err != nil:
		return fmt.Errorf("import %s: %w", file, err)
	}
	fmt.Fprintf(stdout, "imported %d conversation(s) from %s: %d restored, %d extended, %d already there; %d message(s) and %d decision(s) written\n",
		res.Conversations, file, res.Restored, res.Extended, res.Unchanged, res.Messages, res.Decisions)
	return nil
}
