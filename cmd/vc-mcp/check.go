package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vc-mcp/vc-mcp/memory"
)

// checkCommand verifies a data directory without changing it.
func checkCommand() *cobra.Command {
	var f memFlags
	cmd := &cobra.Command{
		Use:   "check",
		Short: "verify the data directory without changing it",
		Long: "Verify every record of every master log and every line of every decisions log, run bbolt's consistency check on vc.db, " +
			"and compare each conversation's committed state with its logs, writing nothing. " +
			"Each finding is a problem (something is lost or damaged, or needs you) or a notice (the next start repairs it by itself), with what to do. " +
			"While a vc-mcp server holds the directory, vc.db cannot be read and the logs alone are checked: stop it (vc-mcp daemon stop) for a full check. " +
			"Exit status 1 when a problem was found; 3 when the check could not run, or could not read part of the directory (and found no problem).",
	}
	f.register(cmd)
	// Unlike the other commands, check covers every conversation by default.
	cmd.Flags().Lookup("conversation").Usage = "check only the conversation `ID` (default: every one)"
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := f.settings()
		if err != nil {
			return err
		}
		rep, err := memory.Check(cmd.Context(), cfg.DataDir, f.conversation)
		if err != nil { // nothing checked: not "a problem found"
			return exitError{code: 3, err: err}
		}
		out := cmd.OutOrStdout()
		if f.json {
			if err := writeJSON(out, rep); err != nil {
				return err
			}
		} else {
			printCheck(out, rep)
		}
		switch {
		case rep.Problems > 0:
			return fmt.Errorf("check: %d problem(s) in %s", rep.Problems, rep.Dir)
		case rep.Unchecked > 0:
			return exitError{code: 3, err: fmt.Errorf("check: %d part(s) of %s could not be read", rep.Unchecked, rep.Dir)}
		}
		return nil
	}
	return cmd
}

func printCheck(w io.Writer, rep memory.CheckReport) {
	fmt.Fprintf(w, "data directory %s\nvc.db: %s\n", rep.Dir, rep.DB)
	notices := 0
	show := func(indent string, fs []memory.Finding) {
		for _, fd := range fs {
			if fd.Level == memory.LevelNotice {
				notices++
			}
			fmt.Fprintf(w, "%s%s: %s\n", indent, fd.Level, fd.What)
			if fd.Action != "" {
				fmt.Fprintf(w, "%s  -> %s\n", indent, fd.Action)
			}
		}
	}
	show("", rep.Findings)
	for _, cc := range rep.Conversations {
		turns := ""
		if rep.DB == memory.DBOK {
			turns = fmt.Sprintf(", %d turns in vc.db", cc.Turns)
		}
		fmt.Fprintf(w, "conversation %s: %d records (%d bytes), %d decisions%s\n", cc.ID, cc.Records, cc.LogBytes, cc.Decisions, turns)
		show("  ", cc.Findings)
	}
	if len(rep.Conversations) == 0 {
		fmt.Fprintln(w, "no conversation stored")
	}
	fmt.Fprintf(w, "%d problem(s), %d notice(s), %d unchecked\n", rep.Problems, notices, rep.Unchecked)
}
