package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/vc-mcp/vc-mcp/memory"
)

const scanUsage = `usage: vc-mcp scan [--conversation ID] [--redact] [settings flags]

Runs the current secret scrubber (the scrub, scrub_allow and scrub_rules
settings) over the stored master logs and summaries: messages stored before
scrubbing existed, or before a rule was added. Findings are reported by rule
and turn, never the secret: in the text, tool calls, speaker names, tool call
ids and message ids. --redact rewrites each turn holding a secret with the
placeholder ([secret:rule]) in its place (a message id: a digest of it),
keeping the turn, and remakes what was derived from it (index, summaries). Every conversation is scanned
unless --conversation is given. A shared server using the data directory
pauses while it runs.
`

func runScan(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "help" {
			fmt.Fprint(stdout, scanUsage)
			return nil
		}
	}
	own, common, err := ownFlags("scan", args, map[string]bool{"conversation": true, "redact": false})
	if err != nil {
		return err
	}
	redact, err := boolFlag("scan", own, "redact")
	if err != nil {
		return err
	}
	conv := lastFlag(own, "conversation")
	store, cfg, done, err := openMaintenance(ctx, "scan", common, stderr)
	if err != nil {
		return err
	}
	defer done()
	res, err := store.Scan(ctx, memory.ScanRequest{ConversationID: conv, AllConversations: conv == "", Redact: redact})
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	for _, f := range res.Findings {
		where := f.TurnID
		switch f.Where {
		case "summary":
			where = "summary " + f.Segment
		case "topic":
			where = "topic " + f.Tag
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\t%d\n", f.ConversationID, where, f.Rule, f.Count)
	}
	fmt.Fprintf(stdout, "scan: %s\n", res)
	if redact && res.TurnsRedacted > 0 {
		var ids []string
		for _, f := range res.Findings {
			if f.Where == "turn" && !slices.Contains(ids, f.ConversationID) {
				ids = append(ids, f.ConversationID)
			}
		}
		refreshMirror(ctx, store, cfg, stderr, ids...)
	}
	switch {
	case redact:
		fmt.Fprintf(stdout, "scan: redacted %d turn(s); their summaries and index entries were remade\n", res.TurnsRedacted)
	case len(res.Findings) > 0:
		fmt.Fprintln(stdout, "scan: run again with --redact to replace them with placeholders")
	}
	return store.Close()
}
