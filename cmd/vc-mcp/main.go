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
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version or "dev".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "vc-mcp: %v\n", err)
		os.Exit(1)
	}
}

// errUsage marks a command line that could not be understood; the usage has
// already been printed.
var errUsage = errors.New("usage error")

const usage = `vc-mcp: persistent, token-budgeted conversation memory over MCP.

usage:
  vc-mcp [serve] [flags]     serve MCP over stdio (the default), or --http 127.0.0.1:5757
                             for Streamable HTTP at /mcp and legacy SSE at /sse
  vc-mcp proxy --upstream URL  an LLM API proxy that adds memory (OpenAI, Anthropic, Gemini)
  vc-mcp rebuild [flags]     recreate vc.db and the index from the master logs
  vc-mcp model ...           manage the local embedding model
  vc-mcp bench ...           run the benchmarks (locomo, scale)
  vc-mcp cost-report ...     report LLM usage and cost
  vc-mcp summaries regenerate [--conversation ID] [--tag T]
                             rebuild summaries from the master logs
  vc-mcp daemon status|stop  the shared server every stdio host of a data dir uses
  vc-mcp import [--format chatgpt|claude] FILE   import ChatGPT or Claude history
  vc-mcp export --format markdown --out DIR [--conversation ID]
                             write memory as Markdown, one directory per topic
  vc-mcp migrate --from DATA_DIR --to postgres://...   copy a local memory to PostgreSQL
  vc-mcp version [--json]    print the version and commit
  vc-mcp help [command]      this help; "vc-mcp serve -h" lists every flag

Settings: flags > VC_* environment > config file (--config, default
~/.config/vc-mcp/config.yaml) > preset > defaults. See the README.
`

// run is the whole program; main only maps its error to an exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && (len(args[0]) == 0 || args[0][0] != '-') {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, stdin, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, args, stdin, stdout, stderr)
	case "rebuild":
		return runRebuild(ctx, args, stderr)
	case "proxy":
		return runProxy(ctx, args, stdin, stdout, stderr)
	case "model":
		return runModel(ctx, args, stdin, stdout, stderr)
	case "bench":
		return runBench(ctx, args, stdout, stderr)
	case "cost-report":
		return runCostReport(ctx, args, stdout, stderr)
	case "daemon":
		return runDaemon(ctx, args, stdin, stdout, stderr)
	case "summaries":
		return runSummaries(ctx, args, stdout, stderr)
	case "import":
		return runImport(ctx, args, stdin, stdout, stderr)
	case "export":
		return runExportMarkdown(ctx, args, stdin, stdout, stderr)
	case "version", "--version":
		return runVersion(ctx, args, stdin, stdout, stderr)
	case "help", "-h", "--help":
		if len(args) > 0 {
			return run(ctx, []string{args[0], "-h"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "vc-mcp: unknown command %q\n\n%s", cmd, usage)
		return errUsage
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
