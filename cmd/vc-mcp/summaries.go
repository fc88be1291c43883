package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

const summariesUsage = `usage:
  vc-mcp summaries regenerate [--conversation ID] [--tag TAG] [flags]
  vc-mcp summaries regenerate --from TURN [--missing] [--conversation ID] [flags]
  vc-mcp summaries clear [--conversation ID] [flags]

regenerate rebuilds segment (Layer 1) and tag (Layer 2) summaries from the
master log with the configured summariser (an LLM when one is set up,
extractive otherwise), replacing the old ones atomically per conversation.

regenerate --from TURN (t12 or 12) makes the per-message summaries instead:
every turn from TURN on that is long enough gets a summary written with the
previous and the next message in view, replacing any it had (--missing: only
turns without one). They are recorded in the decisions log, so rebuild keeps
them without calling a model.

clear deletes every per-message summary (of one conversation, or all); the
clear is recorded too, so rebuild does not bring them back.

A shared server using the data directory is stopped meanwhile; its hosts
wait and reconnect afterwards.
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
	sub := args[0]
	if sub != "regenerate" && sub != "clear" {
		fmt.Fprint(stderr, summariesUsage)
		return fmt.Errorf("summaries: unknown subcommand %q (want regenerate or clear)", sub)
	}
	name := "summaries " + sub
	own := map[string]bool{"conversation": true} // name -> takes a value
	if sub == "regenerate" {
		own["tag"], own["from"], own["missing"] = true, true, false
	}
	multi, common, err := ownFlags(name, args[1:], own)
	vals := lastFlags(multi)
	if err != nil {
		return err
	}
	if vals["from"] == "" && vals["missing"] != "" {
		return fmt.Errorf("%s: --missing goes with --from TURN", name)
	}
	if vals["from"] != "" && vals["tag"] != "" {
		return fmt.Errorf("%s: --from (per-message summaries) and --tag (segment summaries) do not combine; run them separately", name)
	}
	store, _, done, err := openMaintenance(ctx, name, common, stderr)
	if err != nil {
		return err
	}
	defer done()
	start := time.Now()
	last := time.Time{}
	var mu sync.Mutex // summaries are made several at a time
	progress := func(n, total int, message string) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) >= 500*time.Millisecond || n == total {
			last = time.Now()
			fmt.Fprintf(stderr, "summaries: %d/%d %s\n", n, total, message)
		}
	}
	switch {
	case sub == "clear":
		n, err := store.ClearTurnSummaries(ctx, vals["conversation"])
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(stdout, "cleared %d per-message summaries\n", n)
	case vals["from"] != "":
		res, err := store.SummarizeTurns(ctx, memory.TurnSummaryRequest{ConversationID: vals["conversation"], From: vals["from"],
			Missing: vals["missing"] == "true", Progress: progress})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(stdout, "summarised %d messages in %d conversations (%d too short to need one) (%s)\n",
			res.Summarised, res.Conversations, res.Short, time.Since(start).Round(time.Millisecond))
	default:
		res, err := store.RegenerateSummaries(ctx, memory.RegenerateRequest{
			ConversationID: vals["conversation"], Tag: vals["tag"], Progress: progress})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(stdout, "regenerated %d segment and %d tag summaries in %d conversations (%s)\n",
			res.Segments, res.Tags, res.Conversations, time.Since(start).Round(time.Millisecond))
	}
	return store.Close()
}
