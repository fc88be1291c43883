package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/markdown"
)

const exportUsage = `usage:
  vc-mcp export --format markdown --out DIR [--conversation ID] [flags]

Writes memory as Markdown people can read, diff in git or open in an
editor: DIR/<conversation>/index.md lists its topics with their one-line
descriptions; DIR/<conversation>/<tag>/topic.md holds a topic's summary and
its segments; DIR/<conversation>/<tag>/s<N>.md is one compacted segment
(frontmatter with turn ids, time range, tags, summary method and model,
byte ranges into the master log; its summary; its turns verbatim);
DIR/<conversation>/active.md holds the turns not compacted yet. Each
conversation's directory is replaced whole and atomically; file names are
stable, so a re-export diffs cleanly. Without --conversation every
conversation is exported, with DIR/index.md listing them. The data
directory must not be in use by a server (its --markdown-mirror keeps such
a tree up to date instead).
`

// runExportMarkdown runs "vc-mcp export --format markdown ...".
func runExportMarkdown(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stderr, exportUsage)
		return nil
	}
	// --format, --out and --conversation are this command's; every other
	// flag is a common setting (--data-dir, --config...).
	multi, common, err := ownFlags("export", args, exportFlags)
	if err != nil {
		return err
	}
	own := lastFlags(multi)
	switch own["format"] {
	case "markdown":
	case "":
		fmt.Fprint(stderr, exportUsage)
		return fmt.Errorf("export: --format is required (markdown)")
	default:
		return fmt.Errorf("export: unknown --format %q (want markdown)", own["format"])
	}
	out := own["out"]
	if out == "" {
		fmt.Fprint(stderr, exportUsage)
		return fmt.Errorf("export: --out DIR is required")
	}
	var ids []string
	if c, ok := own["conversation"]; ok {
		if err := memory.ValidateConversationID(c); err != nil {
			return fmt.Errorf("export: --conversation: %w", err)
		}
		ids = []string{c}
	}
	cfg, err := commandConfig("export", common, stderr)
	if err != nil {
		return err
	}
	store, closeAll, err := openForCommand(ctx, "export", cfg, stderr, func(opts *memory.Options, _ *slog.Logger) (func(), error) {
		opts.Embedder = nil // reading needs no vectors
		return nil, nil
	})
	if err != nil {
		return err
	}
	defer closeAll()
	done, err := markdown.Export(ctx, store, out, ids)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(stdout, "exported %d conversations as Markdown to %s\n", len(done), out)
	return store.Close()
}
