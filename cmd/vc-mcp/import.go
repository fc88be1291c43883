package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/vc-mcp/vc-mcp/memory"
)

const importUsage = `usage:
  vc-mcp import [--format chatgpt|claude|bundle] FILE [--merge] [flags]

Imports another assistant's history into the memory: each conversation
becomes one conversation id (source:title-slug-id, stable), timestamps are
kept, secrets are scrubbed as for live messages, and re-running the same
import stores nothing twice.

  --format chatgpt   ChatGPT's conversations.json (Settings > Data controls > Export)
  --format claude    Claude's conversations.json (Settings > Privacy > Export data)
  --format bundle    a vc-mcp bundle (vc-mcp export --format jsonl; docs/bundle.md):
                     restored exactly, messages byte for byte, decisions replayed,
                     no model called. The whole file is verified first: a damaged,
                     truncated or newer-version bundle is refused and nothing is written.
  --merge            (bundle) accept conversations the data directory already
                     holds and add only the records they lack; without it, any
                     such conversation refuses the import

Without --format the file's shape decides. A shared server using the data
directory pauses meanwhile. Every other flag is a setting (vc-mcp serve -h).
`

// runImport runs "vc-mcp import".
func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	args, merge, err := takeFlag(args, "merge")
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	format, file, common, err := importArgs(args)
	if err != nil {
		fmt.Fprint(stderr, importUsage)
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	cfg, extra, err := loadConfig("import", common, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		if file != "" {
			return fmt.Errorf("import: unexpected argument %q (one FILE per run)", extra[0])
		}
		file, extra = extra[0], extra[1:]
		if len(extra) > 0 {
			return fmt.Errorf("import: unexpected argument %q (one FILE per run)", extra[0])
		}
	}
	if file == "" {
		fmt.Fprint(stderr, importUsage)
		return fmt.Errorf("import: no FILE given")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if format == "" && memory.IsBundle(data) {
		format = "bundle"
	}
	if format == "" {
		if format = detectFormat(data); format == "" {
			return fmt.Errorf("import: cannot tell the format of %s; pass --format chatgpt, claude or bundle", file)
		}
	}
	if merge && format != "bundle" {
		return fmt.Errorf("import: --merge applies to bundles (a %s import already stores nothing twice)", format)
	}
	var convs []memory.ImportedConversation
	switch format {
	case "bundle":
		return importBundle(ctx, cfg, file, data, merge, stdout, stderr)
	case "chatgpt":
		convs, err = memory.ParseChatGPT(bytes.NewReader(data))
	case "claude":
		convs, err = memory.ParseClaude(bytes.NewReader(data))
	default:
		return fmt.Errorf("import: unknown --format %q (chatgpt, claude or bundle)", format)
	}
	if err != nil {
		return fmt.Errorf("import %s: %w", file, err)
	}
	data = nil

	store, closeAll, err := openForCommand(ctx, "import", cfg, stderr, importPrep(cfg))
	if err != nil {
		return err
	}
	defer closeAll()
	bar := progressbar.NewOptions(len(convs),
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("importing "+format),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }),
	)
	res, err := store.Import(ctx, convs, func(done, _ int, _ string) { bar.Set(done) })
	for _, c := range convs {
		if c.Problem != "" {
			fmt.Fprintf(stderr, "vc-mcp: import: %s (%q): %s\n", c.ID, c.Title, c.Problem)
		}
	}
	if cerr := store.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close %s: %w", cfg.DataDir, cerr))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "imported %d conversation(s) from %s: %d message(s) stored, %d already there, %d secret(s) redacted\n",
		res.Conversations, file, res.Stored, res.Duplicates, res.Redacted)
	return nil
}

var errHelp = errors.New("help")

// importPrep sets up an import's store with the configured secret rules:
// imports are scrubbed like every write.
func importPrep(cfg settings) func(*memory.Options, *slog.Logger) (func(), error) {
	return func(opts *memory.Options, _ *slog.Logger) (func(), error) {
		var err error
		opts.Scrubber, err = scrubberFor(cfg)
		return nil, err
	}
}

// importArgs splits --format and FILE from the common settings' flags.
func importArgs(args []string) (format, file string, common []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "--help" || a == "help":
			return "", "", nil, errHelp
		case a == "--format" || a == "-format":
			if i+1 >= len(args) {
				return "", "", nil, fmt.Errorf("import: --format needs a value (chatgpt, claude or bundle)")
			}
			i++
			format = args[i]
		case strings.HasPrefix(a, "--format=") || strings.HasPrefix(a, "-format="):
			format = a[strings.Index(a, "=")+1:]
		case file == "" && !strings.HasPrefix(a, "-") && (i == 0 || !flagTakesValue(args[i-1])):
			file = a
		default:
			common = append(common, a)
		}
	}
	return format, file, common, nil
}

// flagTakesValue reports whether a (a common setting's flag without "=")
// consumes the next argument.
func flagTakesValue(a string) bool {
	if !strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
		return false
	}
	name := strings.TrimLeft(a, "-")
	for _, k := range settingKeys {
		if k.flag == name {
			return !k.isBool
		}
	}
	return false
}

// detectFormat tells an export's format from its first bytes: whichever
// key comes first, ChatGPT's "mapping" or Claude's "chat_messages".
func detectFormat(data []byte) string {
	head := data[:min(len(data), 1<<16)]
	g, c := bytes.Index(head, []byte(`"mapping"`)), bytes.Index(head, []byte(`"chat_messages"`))
	switch {
	case g >= 0 && (c < 0 || g < c):
		return "chatgpt"
	case c >= 0:
		return "claude"
	}
	return ""
}
