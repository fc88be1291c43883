package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

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
	own := map[string]string{}
	var common []string
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || (name != "format" && name != "out" && name != "conversation") {
			common = append(common, args[i])
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return fmt.Errorf("export: --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		own[name] = value
	}
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
	cfg, extra, err := loadConfig("export", common, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("export: unexpected argument %q", extra[0])
	}
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	opts := memoryOptions(cfg, log)
	opts.Embedder = nil // reading needs no vectors
	// A shared server holding the data directory hands it over for the
	// export; its hosts wait and reconnect.
	release, err := exclusive(ctx, cfg, &opts)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer release()
	store, err := memory.Open(ctx, opts)
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.DataDir, err)
	}
	defer store.Close()
	done, err := markdown.Export(ctx, store, out, ids)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(stdout, "exported %d conversations as Markdown to %s\n", len(done), out)
	return store.Close()
}
