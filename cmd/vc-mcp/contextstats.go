package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

const contextStatsUsage = `usage:
  vc-mcp context-stats [--conversation ID] [--json] [flags]

Shows how much of memory per-message and segment summaries cover: turns and
tokens, turns long enough to summarise and how many have a summary
(coverage), the tokens the summaries save, and the summaries by model and
prompt version. --json prints the same as one JSON object.
`

// runContextStats runs "vc-mcp context-stats".
func runContextStats(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "help" {
			fmt.Fprint(stderr, contextStatsUsage)
			return nil
		}
	}
	multi, common, err := ownFlags("context-stats", args, map[string]bool{"conversation": true, "json": false})
	vals := lastFlags(multi)
	if err != nil {
		return err
	}
	store, _, done, err := openMaintenance(ctx, "context-stats", common, stderr)
	if err != nil {
		return err
	}
	defer done()
	st, err := store.ContextStats(ctx, vals["conversation"])
	if err != nil {
		return fmt.Errorf("context-stats: %w", err)
	}
	if vals["json"] == "true" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	scope := "all conversations"
	if st.ConversationID != "" {
		scope = "conversation " + st.ConversationID
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "%s (%d)\n", scope, st.Conversations)
	fmt.Fprintf(w, "turns\t%d\t(%d tokens)\n", st.Turns, st.Tokens)
	fmt.Fprintf(w, "per-message summaries\t%d of %d\t(%.0f%% coverage; shorter turns need none)\n", st.Summarised, st.Summarisable, 100*st.Coverage)
	fmt.Fprintf(w, "tokens saved\t%d\t(%d tokens of turns in %d tokens of summaries)\n", st.TokensSaved, st.SummarisedTokens, st.SummaryTokens)
	fmt.Fprintf(w, "segment summaries\t%d\t(%d turns compacted)\n", st.Segments, st.CompactedTurns)
	for _, m := range st.ByModel {
		fmt.Fprintf(w, "  by %s\t%d\t(%s)\n", m.Model, m.Count, m.Version)
	}
	return w.Flush()
}
