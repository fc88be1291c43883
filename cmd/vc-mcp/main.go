package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version or "dev".
var version = ""

func main() {
	// A hang-up ends the process as SIGTERM does: calls in flight finish,
	// the store closes (and a read-only snapshot is removed).
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) { // under nohup it stays ignored
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	var ee exitError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	case errors.As(err, &ee):
		fmt.Fprintf(os.Stderr, "vc-mcp: %v\n", err)
		os.Exit(ee.code)
	default:
		fmt.Fprintf(os.Stderr, "vc-mcp: %v\n", err)
		os.Exit(1)
	}
}

// errUsage marks a command line that could not be understood; the usage has
// already been printed.
var errUsage = errors.New("usage error")

// exitError is an error with its own exit status (vc-mcp check's 3).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

const usage = `vc-mcp: persistent, token-budgeted conversation memory over MCP.

usage:
  vc-mcp [serve] [flags]     serve MCP over stdio (the default), or --http 127.0.0.1:5757
                             for Streamable HTTP at /mcp and legacy SSE at /sse
  vc-mcp proxy --upstream URL  an LLM API proxy that adds memory (OpenAI, Anthropic, Gemini)
  vc-mcp rebuild [flags]     recreate vc.db and the index from the master logs
  vc-mcp check [--conversation ID] [--json]
                             verify the logs and vc.db without changing them
  vc-mcp model ...           manage the local embedding model
  vc-mcp bench ...           run the benchmarks (locomo, scale)
  vc-mcp cost-report ...     report LLM usage and cost
  vc-mcp summaries regenerate [--conversation ID] [--tag T]
                             rebuild summaries from the master logs
  vc-mcp context-stats [--conversation ID] [--json]  summary coverage and tokens saved
  vc-mcp daemon status|stop  the shared server every stdio host of a data dir uses
  vc-mcp import [--format chatgpt|claude] FILE   import ChatGPT or Claude history
  vc-mcp import BUNDLE [--merge]   restore a vc-mcp bundle (vc-mcp export --format jsonl)
  vc-mcp export --format markdown --out DIR [--conversation ID]
                             write memory as Markdown, one directory per topic
  vc-mcp status|tags|domains [--conversation ID] [--json]
                             what memory holds: totals, tags, tags with summaries
  vc-mcp recall TAG          the stored summaries of one tag
  vc-mcp compact -i FILE     store a JSON array of messages and compact now
  vc-mcp retrieve -m TEXT    a message's tags and what recall picks for it (read-only)
  vc-mcp transform -m TEXT   the assembled context a host would get for it
  vc-mcp aliases list|suggest|add ALIAS CANONICAL
                             tag aliases; suggest finds plurals and near spellings
  vc-mcp config validate [--config FILE]   check a config file, with line numbers
  vc-mcp init PRESET [--out FILE]          write a commented starter config
  vc-mcp export --format jsonl --out FILE|- [--conversation ID]
                             write memory as a bundle that import restores (docs/bundle.md)
  vc-mcp replay FILE [--out FILE]  run prompts or a saved chat through memory; JSON per turn
  vc-mcp chat                an interactive terminal chat with memory (needs llm_provider)
  vc-mcp forget --conversation ID [--query P] [--turn t12] [--tag T] [--before TIME] [--dry-run] [--yes]
                             forget turns for good (summaries remade, tombstone kept)
  vc-mcp scan [--conversation ID] [--redact]   find (and redact) secrets already stored
  vc-mcp migrate --from DATA_DIR --to postgres://...   copy a local memory to PostgreSQL
  vc-mcp version [--json]    print the version and commit
  vc-mcp help [command]      this help; "vc-mcp serve -h" lists every flag

Settings: flags > VC_* environment > config file (--config, default
~/.config/vc-mcp/config.yaml) > preset > defaults. See the README.
`

// commandFunc is a subcommand that parses its own flags (flag.FlagSet).
type commandFunc func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

// legacyCommands are the subcommands with their own flag.FlagSet, wired
// into the command tree as they are (see legacy). A new one is one line.
var legacyCommands = []struct {
	name, short string
	run         commandFunc
}{
	{"serve", "serve MCP over stdio (the default) or HTTP", runServe},
	{"migrate", "copy a local memory to PostgreSQL", runMigrate},
	{"rebuild", "recreate vc.db and the index from the master logs", func(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
		return runRebuild(ctx, args, stderr)
	}},
	{"proxy", "an LLM API proxy that adds memory", runProxy},
	{"model", "manage the local embedding model", runModel},
	{"bench", "run the benchmarks", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runBench(ctx, args, stdout, stderr)
	}},
	{"cost-report", "report LLM usage and cost", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runCostReport(ctx, args, stdout, stderr)
	}},
	{"daemon", "the shared server of a data directory", runDaemon},
	{"summaries", "rebuild summaries from the master logs", func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runSummaries(ctx, args, stdout, stderr)
	}},
	{"context-stats", "per-message summary coverage and tokens saved", runContextStats},
	{"replay", "run a prompts file or a saved session through memory, as JSON", runReplay},
	{"chat", "a terminal chat with the configured model and memory", runChat},
	{"import", "import ChatGPT or Claude history, or a vc-mcp bundle", runImport},
	{"export", "write memory as Markdown or as a bundle", runExport},
	{"version", "print the version and commit", runVersion},
	{"forget", "forget turns for good (summaries remade, tombstone kept)", runForget},
	{"scan", "find (and redact) secrets already stored", runScan},
}

// run is the whole program; main only maps its error to an exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := newRootCommand(stdin, stdout, stderr)
	switch {
	case len(args) == 0:
		args = []string{"serve"}
	case args[0] == "--version":
		args = append([]string{"version"}, args[1:]...)
	case args[0] == "-h" || args[0] == "--help":
		args = append([]string{"help"}, args[1:]...)
	case args[0] == "" || args[0][0] == '-':
		// Flags alone: serve with them.
		args = append([]string{"serve"}, args...)
	}
	if c, _, err := root.Find(args); err != nil || c == root {
		fmt.Fprintf(stderr, "vc-mcp: unknown command %q\n\n%s", args[0], usage)
		return errUsage
	}
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// newRootCommand builds the command tree.
func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "vc-mcp",
		Short:         "persistent, token-budgeted conversation memory over MCP",
		SilenceErrors: true,
		SilenceUsage:  true,
		// The completion command would need a shell's conventions; not offered.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf(cmd, "%v", err)
	})
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	for _, lc := range legacyCommands {
		root.AddCommand(legacy(lc.name, lc.short, lc.run))
	}
	addCommands(root)
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "this help; \"vc-mcp help COMMAND\" shows a command's",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				fmt.Fprint(stdout, usage)
				return nil
			}
			c, rest, err := root.Find(args)
			if err != nil || c == root {
				fmt.Fprintf(stderr, "vc-mcp: unknown command %q\n\n%s", args[0], usage)
				return errUsage
			}
			if c.DisableFlagParsing {
				// A legacy command prints its own FlagSet's usage.
				return c.RunE(c, append(rest, "-h"))
			}
			c.SetOut(stdout)
			return c.Help()
		},
	})
	root.InitDefaultHelpCmd()
	return root
}

// legacy wires a command that parses its own flags: cobra passes every
// argument through, -h included, and the command's errors (flag.ErrHelp,
// errUsage) keep their exit codes.
func legacy(name, short string, fn commandFunc) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Short:              short,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return fn(cmd.Context(), args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
