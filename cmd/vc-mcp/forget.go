package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

const forgetUsage = `usage: vc-mcp forget --conversation ID [--query PHRASE] [--turn t12 ...] [--tag TAG]
                     [--before RFC3339] [--dry-run] [--yes] [settings flags]

Forgets turns for good: the text leaves the master log, every summary that
drew on it, the index, vectors and tags, and a tombstone records what was
removed and when (never the text). At least one of --query (an exact phrase,
any case), --turn (repeatable, or comma-separated), --tag, --before; when
several are given a turn must match all. It lists the matching turns and asks
before forgetting unless --yes; --dry-run only lists them. A shared server
using the data directory pauses while it runs.
`

func runForget(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "help" {
			fmt.Fprint(stdout, forgetUsage)
			return nil
		}
	}
	own, common, err := ownFlags("forget", args, map[string]bool{
		"conversation": true, "query": true, "turn": true, "turns": true, "tag": true, "before": true, "dry-run": false, "yes": false,
	})
	if err != nil {
		return err
	}
	req := memory.ForgetRequest{ConversationID: lastFlag(own, "conversation"), Query: lastFlag(own, "query"), Tag: lastFlag(own, "tag")}
	for _, v := range append(own["turn"], own["turns"]...) {
		for id := range strings.SplitSeq(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				req.TurnIDs = append(req.TurnIDs, id)
			}
		}
	}
	if b := lastFlag(own, "before"); b != "" {
		t, err := time.Parse(time.RFC3339, b)
		if err != nil {
			if t, err = time.Parse(time.DateOnly, b); err != nil {
				return fmt.Errorf("forget: --before %q: want an RFC3339 time (2025-01-31T00:00:00Z) or a date (2025-01-31)", b)
			}
		}
		req.Before = t
	}
	if req.DryRun, err = boolFlag("forget", own, "dry-run"); err != nil {
		return err
	}
	yes, err := boolFlag("forget", own, "yes")
	if err != nil {
		return err
	}
	if req.ConversationID == "" {
		fmt.Fprint(stderr, forgetUsage)
		return errors.New("forget: --conversation is required (forgetting never guesses the conversation)")
	}
	if strings.TrimSpace(req.Query) == "" && len(req.TurnIDs) == 0 && strings.TrimSpace(req.Tag) == "" && req.Before.IsZero() {
		fmt.Fprint(stderr, forgetUsage)
		return errors.New("forget: give at least one of --query, --turn, --tag or --before")
	}
	store, cfg, done, err := openMaintenance(ctx, "forget", common, stderr)
	if err != nil {
		return err
	}
	defer done()
	preview := req
	preview.DryRun = true
	res, err := store.Forget(ctx, preview)
	if err != nil {
		return fmt.Errorf("forget: %w", err)
	}
	if res.Forgotten == 0 {
		fmt.Fprintf(stdout, "no turn of %q matches; nothing forgotten\n", res.ConversationID)
		return store.Close()
	}
	fmt.Fprintf(stdout, "%d turn(s) of %q match: %s\n", res.Forgotten, res.ConversationID, strings.Join(res.TurnIDs, ", "))
	if req.DryRun {
		fmt.Fprintln(stdout, "dry run: nothing forgotten")
		return store.Close()
	}
	if !yes {
		fmt.Fprintf(stdout, "Forget them for good? This cannot be undone. [y/N] ")
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintln(stdout)
			return errors.New("forget: not confirmed; nothing forgotten (pass --yes to skip the question)")
		}
	}
	res, err = store.Forget(ctx, req)
	if err != nil {
		return fmt.Errorf("forget: %w", err)
	}
	fmt.Fprintf(stdout, "forgot %d turn(s) of %q: %s; %d summaries remade\n", res.Forgotten, res.ConversationID, strings.Join(res.TurnIDs, ", "), res.SummariesRemade)
	if len(res.DroppedTags) > 0 {
		fmt.Fprintf(stdout, "topics gone: %s\n", strings.Join(res.DroppedTags, ", "))
	}
	refreshMirror(ctx, store, cfg, stderr, res.ConversationID)
	return store.Close()
}
