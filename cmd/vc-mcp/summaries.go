package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

const summariesUsage = `usage:
  vc-mcp summaries regenerate [--conversation ID] [--tag TAG] [flags]

Rebuilds segment (Layer 1) and tag (Layer 2) summaries from the master log
with the configured summariser (an LLM when one is set up, extractive
otherwise), replacing the old ones atomically per conversation. A shared
server using the data directory is stopped meanwhile; its hosts wait and
reconnect afterwards.
`

// runSummaries runs "vc-mcp summaries ...".
func runSummaries(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, summariesUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	if args[0] != "regenerate" {
		fmt.Fprint(stderr, summariesUsage)
		return fmt.Errorf("summaries: unknown subcommand %q (want regenerate)", args[0])
	}
	// --conversation and --tag are this command's; every other flag is a
	// common setting (--data-dir, --config, LLM settings...).
	var conv, tag string
	var common []string
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(rest[i], "-"), "=")
		if name != "conversation" && name != "tag" || !strings.HasPrefix(rest[i], "-") {
			common = append(common, rest[i])
			continue
		}
		if !hasValue {
			if i+1 >= len(rest) {
				return fmt.Errorf("summaries regenerate: --%s needs a value", name)
			}
			i++
			value = rest[i]
		}
		if name == "conversation" {
			conv = value
		} else {
			tag = value
		}
	}
	cfg, extra, err := loadConfig("summaries regenerate", common, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("summaries regenerate: unexpected argument %q", extra[0])
	}
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	opts := memoryOptions(cfg, log)
	sm, err := wireSeams(ctx, cfg, &opts, log)
	if err != nil {
		return err
	}
	defer sm.close()
	opts.Embedder = nil // regenerating summaries needs no vectors
	release, err := exclusive(ctx, cfg, &opts)
	if err != nil {
		return fmt.Errorf("summaries regenerate: %w", err)
	}
	defer release()
	store, err := memory.Open(ctx, opts)
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.DataDir, err)
	}
	defer store.Close()
	start := time.Now()
	last := time.Time{}
	res, err := store.RegenerateSummaries(ctx, memory.RegenerateRequest{
		ConversationID: conv, Tag: tag,
		Progress: func(done, total int, message string) {
			if time.Since(last) >= 500*time.Millisecond || done == total {
				last = time.Now()
				fmt.Fprintf(stderr, "summaries: %d/%d %s\n", done, total, message)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("summaries regenerate: %w", err)
	}
	fmt.Fprintf(stdout, "regenerated %d segment and %d tag summaries in %d conversations (%s)\n",
		res.Segments, res.Tags, res.Conversations, time.Since(start).Round(time.Millisecond))
	return store.Close()
}
