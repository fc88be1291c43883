package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vc-mcp/vc-mcp/memory"
)

// addCommands adds the commands that use the framework's own flags.
func addCommands(root *cobra.Command) {
	cmds := []*cobra.Command{statusCommand(), tagsCommand(), domainsCommand(), recallCommand(),
		compactCommand(), retrieveCommand(), transformCommand(), aliasesCommand(),
		configCommand(), initCommand(), checkCommand()}
	root.AddCommand(cmds...)
	for _, c := range cmds {
		wrapLong(c)
	}
}

// wrapLong wraps the long descriptions of cmd and its subcommands for a
// terminal.
func wrapLong(cmd *cobra.Command) {
	if cmd.Long != "" {
		var b strings.Builder
		writeWrapped(&b, "", cmd.Long)
		cmd.Long = strings.TrimRight(b.String(), "\n")
	}
	for _, c := range cmd.Commands() {
		wrapLong(c)
	}
}

// memFlags are the flags of every command that reads or writes memory.
type memFlags struct {
	dataDir, config, conversation string
	json                          bool
}

func (f *memFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.dataDir, "data-dir", "", "data directory `DIR` (default: the per-user one, or VC_DATA_DIR)")
	fl.StringVar(&f.config, "config", "", "YAML config `FILE` (default ~/.config/vc-mcp/config.yaml, or VC_CONFIG)")
	fl.StringVar(&f.conversation, "conversation", "", "memory space `ID` (default: the configured default conversation)")
	fl.BoolVar(&f.json, "json", false, "print JSON for scripts instead of text for people")
	cmd.Flags().SortFlags = false
	cmd.Args = exactArgs(0, "")
}

// settings resolves the common settings with the command's flags on top.
func (f *memFlags) settings() (settings, error) {
	given := map[string]string{}
	if f.dataDir != "" {
		given["data_dir"] = f.dataDir
	}
	if f.config != "" {
		given["config"] = f.config
	}
	return resolveSettings(given, os.Getenv)
}

// withMemory runs fn with a client of the data directory's memory.
// command registers f on cmd and runs run with the memory open: the shape
// of every command that reads or writes memory and does nothing first.
// Set cmd.Args before calling it to take arguments.
func (f *memFlags) command(cmd *cobra.Command, run func(cmd *cobra.Command, args []string, m *memClient, cfg settings) error) *cobra.Command {
	args := cmd.Args
	f.register(cmd)
	if args != nil {
		cmd.Args = args
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return f.withMemory(cmd, func(m *memClient, cfg settings) error { return run(cmd, args, m, cfg) })
	}
	return cmd
}

func (f *memFlags) withMemory(cmd *cobra.Command, fn func(m *memClient, cfg settings) error) error {
	cfg, err := f.settings()
	if err != nil {
		return err
	}
	m, err := openMemClient(cmd.Context(), cfg, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	err = fn(m, cfg)
	if cerr := m.close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// conv is the conversation to use: --conversation or the configured default.
func (f *memFlags) conv(cfg settings) string {
	if f.conversation != "" {
		return f.conversation
	}
	return cfg.DefaultConversation
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func statusCommand() *cobra.Command {
	var f memFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "tag statistics and token usage of a conversation",
		Long:  "Print what memory holds for a conversation: turns, segments, tokens (active and compacted), the busiest tags and which optional features (embeddings, LLM) are on.",
	}
	return f.command(cmd, func(cmd *cobra.Command, _ []string, m *memClient, cfg settings) error {
		st, err := m.status(cmd.Context(), f.conv(cfg))
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if f.json {
			return writeJSON(out, st)
		}
		t := st.Totals
		fmt.Fprintf(out, "conversation %s (%d conversation(s) in %s)\n", st.ConversationID, t.Conversations, cfg.DataDir)
		fmt.Fprintf(out, "turns: %d  segments: %d  tag summaries: %d  tags: %d\n", t.Turns, t.Segments, t.TagSummaries, st.TotalTags)
		fmt.Fprintf(out, "tokens: %d stored, %d active, %d compacted\n", t.Tokens, t.ActiveTokens, t.CompactedTokens)
		fmt.Fprintf(out, "embeddings: %s  llm: %s\n", onOff(st.Features.Embeddings), onOff(st.Features.LLM))
		if via := "store opened directly"; m.shared {
			fmt.Fprintln(out, "served by: the shared vc-mcp server")
		} else {
			fmt.Fprintln(out, "served by: "+via)
		}
		if len(st.Tags) > 0 {
			fmt.Fprintln(out, "busiest tags:")
			for i, tg := range st.Tags {
				if i == 10 {
					fmt.Fprintf(out, "  ... %d more (vc-mcp tags)\n", len(st.Tags)-10)
					break
				}
				fmt.Fprintf(out, "  %-24s %4d turns  %6d tokens\n", tg.Tag, tg.Turns, tg.FullTokens)
			}
		}
		return nil
	})
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func tagsCommand() *cobra.Command {
	var f memFlags
	cmd := &cobra.Command{
		Use:   "tags",
		Short: "list every tag with its turn count",
	}
	return f.command(cmd, func(cmd *cobra.Command, _ []string, m *memClient, cfg settings) error {
		st, err := m.status(cmd.Context(), f.conv(cfg))
		if err != nil {
			return err
		}
		type tagCount struct {
			Tag   string `json:"tag"`
			Turns int    `json:"turns"`
		}
		list := make([]tagCount, len(st.Tags))
		for i, tg := range st.Tags {
			list[i] = tagCount{tg.Tag, tg.Turns}
		}
		if f.json {
			return writeJSON(cmd.OutOrStdout(), list)
		}
		if len(list) == 0 {
			fmt.Fprintf(cmd.OutOrStdout(), "no tags in %s yet\n", st.ConversationID)
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		for _, tc := range list {
			fmt.Fprintf(tw, "%s\t%d\n", tc.Tag, tc.Turns)
		}
		return tw.Flush()
	})
}

func domainsCommand() *cobra.Command {
	var f memFlags
	cmd := &cobra.Command{
		Use:   "domains",
		Short: "every tag with turn counts, summary sizes and descriptions",
	}
	return f.command(cmd, func(cmd *cobra.Command, _ []string, m *memClient, cfg settings) error {
		st, err := m.status(cmd.Context(), f.conv(cfg))
		if err != nil {
			return err
		}
		if f.json {
			return writeJSON(cmd.OutOrStdout(), st.Tags)
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TAG\tTURNS\tSEGMENTS\tFULL\tSUMMARY\tDEPTH\tDESCRIPTION")
		for _, tg := range st.Tags {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", tg.Tag, tg.Turns, tg.Segments, tg.FullTokens, tg.SummaryTokens, tg.Depth, tg.Description)
		}
		return tw.Flush()
	})
}

func recallCommand() *cobra.Command {
	var f memFlags
	cmd := &cobra.Command{
		Use:   "recall TAG",
		Short: "the stored summaries of one tag",
		Long:  "Print a tag's summary and its segments' summaries, as stored (nothing is recomputed).",
	}
	cmd.Args = exactArgs(1, "TAG")
	return f.command(cmd, func(cmd *cobra.Command, args []string, m *memClient, cfg settings) error {
		conv := f.conv(cfg)
		uri := "virtualcontext://conversations/" + url.PathEscape(conv) + "/domains/" + url.PathEscape(args[0])
		text, err := m.read(cmd.Context(), uri)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if !f.json {
			fmt.Fprintln(out, strings.TrimRight(text, "\n"))
			return nil
		}
		st, err := m.status(cmd.Context(), conv)
		if err != nil {
			return err
		}
		res := recallTagOutput{ConversationID: st.ConversationID, Tag: args[0], Text: text}
		for _, tg := range st.Tags {
			if tg.Tag == args[0] {
				res.Status = tg
			}
		}
		return writeJSON(out, res)
	})
}

// recallTagOutput is `recall TAG --json`: the tag's counts and its stored
// summaries as Markdown.
type recallTagOutput struct {
	ConversationID string           `json:"conversation_id"`
	Tag            string           `json:"tag"`
	Status         memory.TagStatus `json:"status"`
	Text           string           `json:"text"`
}

// maxBatch is compact_context's largest batch.
const maxBatch = 1000

func compactCommand() *cobra.Command {
	var f memFlags
	var input string
	var noForce bool
	cmd := &cobra.Command{
		Use:   "compact -i FILE",
		Short: "store messages from a file and compact now",
		Long: "Store the messages of a JSON file (an array of {role, content, ...} as compact_context takes them; - reads standard input) " +
			"and compact the conversation now, whatever the thresholds say (--no-force: only past them). Messages already stored count as duplicates.",
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&input, "input", "i", "", "JSON `FILE` of messages (- for standard input)")
	cmd.Flags().BoolVar(&noForce, "no-force", false, "compact only when the thresholds say so")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if input == "" {
			return usageErrorf(cmd, "-i FILE is required (a JSON array of messages, - for standard input)")
		}
		var data []byte
		var err error
		if input == "-" {
			data, err = io.ReadAll(cmd.InOrStdin())
		} else {
			data, err = os.ReadFile(input)
		}
		if err != nil {
			return fmt.Errorf("compact: %w", err)
		}
		var msgs []json.RawMessage
		if err := json.Unmarshal(data, &msgs); err != nil {
			return fmt.Errorf("compact: %s is not a JSON array of messages: %w", inputName(input), err)
		}
		if len(msgs) == 0 {
			return fmt.Errorf("compact: %s holds no messages", inputName(input))
		}
		return f.withMemory(cmd, func(m *memClient, cfg settings) error {
			var total memory.IngestResult
			var texts []string
			for start := 0; start < len(msgs); start += maxBatch {
				end := min(start+maxBatch, len(msgs))
				args := map[string]any{"messages": msgs[start:end], "conversation_id": f.conv(cfg), "force": !noForce && end == len(msgs)}
				var res memory.IngestResult
				text, err := m.call(cmd.Context(), "compact_context", args, &res)
				if err != nil {
					return fmt.Errorf("messages %d-%d: %w", start+1, end, err)
				}
				texts = append(texts, text)
				total = mergeIngest(total, res)
			}
			if f.json {
				return writeJSON(cmd.OutOrStdout(), total)
			}
			fmt.Fprintln(cmd.OutOrStdout(), strings.Join(texts, "\n"))
			return nil
		})
	}
	return cmd
}

func inputName(p string) string {
	if p == "-" {
		return "standard input"
	}
	return p
}

// mergeIngest adds one batch's result to the running total.
func mergeIngest(a, b memory.IngestResult) memory.IngestResult {
	a.ConversationID = b.ConversationID
	a.Stored += b.Stored
	a.Duplicates += b.Duplicates
	a.Skipped += b.Skipped
	a.TurnIDs = append(a.TurnIDs, b.TurnIDs...)
	a.Redacted += b.Redacted
	for _, t := range b.Tags {
		if !slices.Contains(a.Tags, t) {
			a.Tags = append(a.Tags, t)
		}
	}
	a.SegmentsCompacted += b.SegmentsCompacted
	a.TokensFreed += b.TokensFreed
	a.Compacted = a.Compacted || b.Compacted
	a.ActiveTokens, a.TotalTurns = b.ActiveTokens, b.TotalTurns
	return a
}

// recallFlags are retrieve's and transform's.
type recallFlags struct {
	memFlags
	message   string
	maxTokens int
	all       bool
}

func (f *recallFlags) register(cmd *cobra.Command) {
	f.memFlags.register(cmd)
	cmd.Flags().StringVarP(&f.message, "message", "m", "", "the message `TEXT` to find context for")
	cmd.Flags().IntVar(&f.maxTokens, "max-tokens", 2000, "budget of the assembled context: `N` cl100k tokens")
	cmd.Flags().BoolVar(&f.all, "all", false, "read every conversation, not only --conversation")
}

// recall runs recall_context: the message's tags, what was retrieved and
// the assembled text.
func (f *recallFlags) recall(cmd *cobra.Command, fn func(res recallOutput) error) error {
	if strings.TrimSpace(f.message) == "" {
		return usageErrorf(cmd, "-m TEXT is required (the message to find context for)")
	}
	return f.withMemory(cmd, func(m *memClient, cfg settings) error {
		args := map[string]any{"message": f.message, "conversation_id": f.conv(cfg), "max_tokens": f.maxTokens}
		if f.all {
			args["scope"] = "all"
		}
		var res recallOutput
		text, err := m.call(cmd.Context(), "recall_context", args, &res.RecallResult)
		if err != nil {
			return err
		}
		res.Text = text
		return fn(res)
	})
}

// recallOutput is recall_context's structured answer with its text.
type recallOutput struct {
	memory.RecallResult
	Text string `json:"text"`
}

func retrieveCommand() *cobra.Command {
	var f recallFlags
	cmd := &cobra.Command{
		Use:   "retrieve -m TEXT",
		Short: "tag a message and retrieve what memory holds for it",
		Long:  "Tag a message and retrieve the past turns and summaries that answer it, with why each one is there. Read-only: the message is not stored.",
	}
	f.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return f.recall(cmd, func(res recallOutput) error {
			out := cmd.OutOrStdout()
			if f.json {
				return writeJSON(out, res.RecallResult)
			}
			fmt.Fprintf(out, "tags: %s\n", orNone(res.MatchedTags))
			fmt.Fprintf(out, "signals: %s\n", orNone(res.Signals))
			for _, in := range res.Included {
				tag := ""
				if in.Tag != "" {
					tag = " [" + in.Tag + "]"
				}
				fmt.Fprintf(out, "  %-8s %-8s %s%s\n", in.Kind, in.ID, in.Mode, tag)
			}
			fmt.Fprintf(out, "tokens: %d of %d\n", res.Tokens, res.Breakdown.Budget)
			return nil
		})
	}
	return cmd
}

func transformCommand() *cobra.Command {
	var f recallFlags
	cmd := &cobra.Command{
		Use:   "transform -m TEXT",
		Short: "tag, retrieve and assemble the context for a message",
		Long:  "Tag a message, retrieve what answers it and print the assembled context a host would get, within --max-tokens. Read-only.",
	}
	f.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return f.recall(cmd, func(res recallOutput) error {
			out := cmd.OutOrStdout()
			if f.json {
				return writeJSON(out, res)
			}
			fmt.Fprintf(out, "# tags: %s; %d tokens (turns %d, summaries %d, headers %d) of %d\n\n%s\n",
				orNone(res.MatchedTags), res.Tokens, res.Breakdown.Turns, res.Breakdown.Summaries, res.Breakdown.Headers, res.Breakdown.Budget, res.Text)
			return nil
		})
	}
	return cmd
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "(none)"
	}
	return strings.Join(list, ", ")
}

func aliasesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "aliases",
		Short: "tag aliases: list, suggest, add",
	}
	var f memFlags
	var maxDist int
	suggest := &cobra.Command{
		Use:   "suggest",
		Short: "tags that look like another name for an existing tag",
		Long: "List pairs of existing tags that are probably one topic: a plural and its singular, or names within a small edit distance " +
			"(--max-distance, default 1 for short names, 2 from 8 characters). The busier tag is proposed as the canonical one.",
	}
	f.register(suggest)
	suggest.Flags().IntVar(&maxDist, "max-distance", 0, "largest edit distance `N` (0: by length)")
	suggest.RunE = func(cmd *cobra.Command, _ []string) error {
		return f.withMemory(cmd, func(m *memClient, cfg settings) error {
			st, err := m.status(cmd.Context(), f.conv(cfg))
			if err != nil {
				return err
			}
			sugg := suggestAliases(st.Tags, maxDist)
			if f.json {
				return writeJSON(cmd.OutOrStdout(), sugg)
			}
			if len(sugg) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no alias suggestions among %d tags\n", len(st.Tags))
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ALIAS\tCANONICAL\tWHY")
			for _, s := range sugg {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Alias, s.Canonical, s.Reason)
			}
			return tw.Flush()
		})
	}
	cmd.AddCommand(suggest, aliasesListCommand(), aliasesAddCommand())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return usageErrorf(cmd, "want a subcommand: list, suggest or add")
	}
	return cmd
}

// withStoreAlone opens the store for a command the MCP tools do not offer
// (aliases list and add). A shared daemon serving the data directory is
// stopped meanwhile; its hosts wait and reconnect (as for rebuild).
func (f *memFlags) withStoreAlone(cmd *cobra.Command, fn func(store *memory.Store, cfg settings) error) error {
	cfg, err := f.settings()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := memoryOptions(cfg, log)
	var store *memory.Store
	if readOnlyDir(cfg) { // opened beside a server, or reported in use
		store, err = memory.Open(ctx, opts)
	} else {
		release, xerr := exclusive(ctx, cfg)
		if xerr != nil {
			return xerr
		}
		defer release()
		store, err = openExclusive(ctx, strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), cfg, opts, cmd.ErrOrStderr())
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.DataDir, err)
	}
	err = fn(store, cfg)
	if cerr := store.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", cfg.DataDir, cerr)
	}
	return err
}

func printAliases(cmd *cobra.Command, asJSON bool, aliases map[string]string) error {
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), aliases)
	}
	if len(aliases) == 0 {
		fmt.Fprintln(cmd.OutOrStdout(), "no aliases")
		return nil
	}
	names := make([]string, 0, len(aliases))
	for a := range aliases {
		names = append(names, a)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ALIAS\tTAG")
	for _, a := range names {
		fmt.Fprintf(tw, "%s\t%s\n", a, aliases[a])
	}
	return tw.Flush()
}

func aliasesListCommand() *cobra.Command {
	var f memFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "every alias of a conversation and the tag it stands for",
		Long:  "List the conversation's tag aliases (from tag splits and aliases add). A running shared server pauses meanwhile; its hosts reconnect.",
	}
	f.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return f.withStoreAlone(cmd, func(store *memory.Store, cfg settings) error {
			aliases, err := store.Aliases(cmd.Context(), f.conv(cfg))
			if err != nil {
				return err
			}
			return printAliases(cmd, f.json, aliases)
		})
	}
	return cmd
}

func aliasesAddCommand() *cobra.Command {
	var f memFlags
	cmd := &cobra.Command{
		Use:   "add ALIAS CANONICAL",
		Short: "register ALIAS as another name of the tag CANONICAL",
		Long: "Register ALIAS as another name of the existing tag CANONICAL: turns that say ALIAS are tagged CANONICAL from now on. " +
			"ALIAS must not be a tag with turns itself. A running shared server pauses meanwhile; its hosts reconnect.",
	}
	f.register(cmd)
	cmd.Args = exactArgs(2, "ALIAS CANONICAL")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return f.withStoreAlone(cmd, func(store *memory.Store, cfg settings) error {
			aliases, err := store.AddAlias(cmd.Context(), f.conv(cfg), args[0], args[1])
			if err != nil {
				return fmt.Errorf("aliases add: %w", err)
			}
			if !f.json {
				fmt.Fprintf(cmd.OutOrStdout(), "%s now stands for %s\n", args[0], args[1])
			}
			return printAliases(cmd, f.json, aliases)
		})
	}
	return cmd
}

// aliasSuggestion is one proposed alias.
type aliasSuggestion struct {
	Alias     string `json:"alias"`
	Canonical string `json:"canonical"`
	Reason    string `json:"reason"`
}

// suggestAliases pairs tags that fold to the same singular or lie within
// maxDist edits (0: 1 below 8 characters, else 2); the busier tag (then
// the shorter, then the first alphabetically) is the canonical one.
func suggestAliases(tags []memory.TagStatus, maxDist int) []aliasSuggestion {
	sorted := append([]memory.TagStatus(nil), tags...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Turns != b.Turns {
			return a.Turns > b.Turns
		}
		if len(a.Tag) != len(b.Tag) {
			return len(a.Tag) < len(b.Tag)
		}
		return a.Tag < b.Tag
	})
	var out []aliasSuggestion
	taken := map[string]bool{}
	for i, canon := range sorted {
		if taken[canon.Tag] {
			continue
		}
		for _, other := range sorted[i+1:] {
			if taken[other.Tag] {
				continue
			}
			reason := ""
			if pluralPair(canon.Tag, other.Tag) {
				reason = "plural"
			} else if d := editDistance(canon.Tag, other.Tag); d <= distanceLimit(canon.Tag, other.Tag, maxDist) {
				reason = fmt.Sprintf("edit distance %d", d)
			}
			if reason != "" {
				taken[other.Tag] = true
				out = append(out, aliasSuggestion{Alias: other.Tag, Canonical: canon.Tag, Reason: reason})
			}
		}
	}
	return out
}

func distanceLimit(a, b string, maxDist int) int {
	if maxDist > 0 {
		return maxDist
	}
	if min(len(a), len(b)) >= 8 {
		return 2
	}
	if min(len(a), len(b)) >= 4 {
		return 1
	}
	return 0
}

// pluralPair says whether one tag is the other's plural, word by word
// (hyphen-separated): +s, +es, y -> ies.
func pluralPair(a, b string) bool {
	wa, wb := strings.Split(a, "-"), strings.Split(b, "-")
	if len(wa) != len(wb) || a == b {
		return false
	}
	for i := range wa {
		x, y := wa[i], wb[i]
		if x == y {
			continue
		}
		if len(x) > len(y) {
			x, y = y, x
		}
		switch {
		case y == x+"s" || y == x+"es":
		case strings.HasSuffix(x, "y") && y == x[:len(x)-1]+"ies":
		default:
			return false
		}
	}
	return true
}

// editDistance is the Levenshtein distance.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// usageErrorf reports a command line the command cannot use: the message
// and the command's usage on stderr, exit status 2.
func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n\n%s", cmd.CommandPath(), fmt.Sprintf(format, args...), cmd.UsageString())
	return errUsage
}

// exactArgs wants n positional arguments, named what in the error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == n:
			return nil
		case n == 0:
			return usageErrorf(cmd, "unexpected argument %q (flags start with --)", args[0])
		case len(args) < n:
			return usageErrorf(cmd, "%s is missing", what)
		default:
			return usageErrorf(cmd, "unexpected argument %q after %s", args[n], what)
		}
	}
}
