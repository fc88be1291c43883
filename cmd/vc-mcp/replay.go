package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vc-mcp/vc-mcp/embed"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

const replayUsage = `usage:
  vc-mcp replay FILE [--out FILE] [--budget N] [--conversation ID]
                [--no-timings] [--data-dir DIR] [setting flags]

Runs a conversation through the whole memory pipeline (no chat model) and
writes, per turn, what memory did as JSON: the message's tags, token counts
(message, assembled context, budget, active conversation), the assembled
context and the turns, segments and topics chosen for it, compaction events
and timings. For regression checks: two runs over the same FILE differ only
in their timings, and --no-timings leaves those out.

FILE (or - for stdin) is one of:
  - a prompts file: one user message per line (blank lines and lines
    starting with # are skipped);
  - a JSON array of messages ({"role", "content", "timestamp"?}), as
    compact_context takes them; each user message starts a turn;
  - a session saved by "vc-mcp chat" (/export FILE).

Each turn first recalls context for the user message (as recall_context
does, before a model would answer), then stores the turn's messages (as
compact_context does, compacting when the thresholds say so). Turns without
a timestamp are one minute apart from 2026-01-01T09:00:00Z, so runs repeat.

Without --data-dir the run uses a fresh temporary directory, removed at the
end; with one, memory stays there (and must not be in use by a server).
Every setting flag (--context-window, --protected-turns, --model-dir,
--llm-provider...) applies; see "vc-mcp serve -h". An embedding model, when
installed, is loaded before the first turn so that runs repeat; an LLM
tagger or summariser, when configured, makes the output depend on it.

Flags:
  --out FILE           write the JSON here instead of stdout
  --budget N           recall budget in cl100k tokens (default 2000)
  --conversation ID    conversation to replay into (default "replay")
  --no-timings         leave timings out (for diffs and golden files)
  --ranking W=V,...    override rank-fusion weights to see what a change does,
                       e.g. lexical=0.5,recency=0.2 (names: memory.Ranking)
`

// replayFormat names replay's output and chatSessionFormat the sessions
// "vc-mcp chat" exports; both carry a version for later changes.
const (
	replayFormat      = "vc-mcp-replay"
	chatSessionFormat = "vc-mcp-chat-session"
)

// replayEpoch is the clock of turns that carry no timestamp.
var replayEpoch = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// replayTurn is one turn to run: the user's message (the recall query) and
// the messages stored afterwards (the user's, then any answers).
type replayTurn struct {
	Query    string
	Answer   string
	Time     time.Time
	Messages []memory.Message
}

// turnReport is one turn of replay's output (and of the chat inspector).
type turnReport struct {
	Turn      int    `json:"turn"`
	Timestamp string `json:"timestamp"`
	Message   string `json:"message"`
	Answer    string `json:"answer,omitempty"`
	// Tags are the tags memory gave the stored turns; MatchedTags the
	// message's tags as recall saw them before the turn was stored.
	Tags        []string              `json:"tags"`
	MatchedTags []string              `json:"matched_tags"`
	Broad       bool                  `json:"broad"`
	Temporal    bool                  `json:"temporal"`
	Signals     []string              `json:"signals"`
	Tokens      turnTokens            `json:"tokens"`
	Context     string                `json:"context"`
	Chosen      chosenContext         `json:"chosen"`
	Stored      storedTurns           `json:"stored"`
	Compaction  *compactionEvent      `json:"compaction,omitempty"`
	Timings     *turnTimings          `json:"timings,omitempty"`
	Breakdown   memory.TokenBreakdown `json:"breakdown"`
}

type turnTokens struct {
	Message int `json:"message"`
	Answer  int `json:"answer,omitempty"`
	Context int `json:"context"`
	Budget  int `json:"budget"`
	// Active is the conversation's uncompacted size after the turn.
	Active int `json:"active"`
}

type chosenContext struct {
	TurnIDs   []string            `json:"turn_ids"`
	Summaries []memory.SummaryRef `json:"summaries"`
	Included  []memory.Inclusion  `json:"included"`
}

type storedTurns struct {
	TurnIDs    []string `json:"turn_ids"`
	Duplicates int      `json:"duplicates,omitempty"`
	Redacted   int      `json:"redacted,omitempty"`
}

type compactionEvent struct {
	Segments    int  `json:"segments"`
	TokensFreed int  `json:"tokens_freed"`
	Forced      bool `json:"forced,omitempty"`
}

type turnTimings struct {
	RecallMS float64 `json:"recall_ms"`
	AnswerMS float64 `json:"answer_ms,omitempty"`
	StoreMS  float64 `json:"store_ms"`
}

// replayReport is replay's whole output.
type replayReport struct {
	Format       string         `json:"format"`
	Version      int            `json:"version"`
	Source       string         `json:"source"`
	Conversation string         `json:"conversation"`
	Settings     replaySettings `json:"settings"`
	Turns        []turnReport   `json:"turns"`
	Totals       replayTotals   `json:"totals"`
	Timings      *struct {
		TotalMS float64 `json:"total_ms"`
	} `json:"timings,omitempty"`
}

type replaySettings struct {
	ContextWindow  int     `json:"context_window"`
	SoftThreshold  float64 `json:"soft_threshold"`
	HardThreshold  float64 `json:"hard_threshold"`
	ProtectedTurns int     `json:"protected_turns"`
	Budget         int     `json:"budget"`
	Embeddings     bool    `json:"embeddings"`
	LLM            string  `json:"llm"`
	Ranking        string  `json:"ranking,omitempty"`
}

type replayTotals struct {
	Turns             int `json:"turns"`
	StoredTurns       int `json:"stored_turns"`
	Compactions       int `json:"compactions"`
	SegmentsCompacted int `json:"segments_compacted"`
	TokensFreed       int `json:"tokens_freed"`
	ActiveTokens      int `json:"active_tokens"`
	// Topics are the conversation's tags at the end, by turns.
	Topics []replayTopic `json:"topics"`
}

type replayTopic struct {
	Tag      string `json:"tag"`
	Turns    int    `json:"turns"`
	Segments int    `json:"segments"`
}

// runReplay runs "vc-mcp replay FILE".
func runReplay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("vc-mcp replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, replayUsage) }
	out := fs.String("out", "", "")
	budget := fs.Int("budget", 2000, "")
	conv := fs.String("conversation", "replay", "")
	noTimings := fs.Bool("no-timings", false, "")
	ranking := fs.String("ranking", "", "")
	own, common, pos, err := splitArgs(args, fs)
	if err != nil {
		fmt.Fprint(stderr, replayUsage)
		return fmt.Errorf("replay: %v: %w", err, errUsage)
	}
	if err := fs.Parse(own); err != nil {
		return err
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, replayUsage)
		return fmt.Errorf("replay: want exactly one FILE, got %d arguments: %w", len(pos), errUsage)
	}
	if *budget < 100 || *budget > 32000 {
		return fmt.Errorf("replay: --budget %d: want 100 to 32000 tokens", *budget)
	}
	if strings.TrimSpace(*conv) == "" {
		return errors.New("replay: --conversation must not be empty")
	}
	turns, err := readReplayInput(pos[0], stdin)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if !hasFlag(common, "data-dir") {
		tmp, err := os.MkdirTemp("", "vc-replay-")
		if err != nil {
			return fmt.Errorf("replay: temporary data directory: %w", err)
		}
		defer os.RemoveAll(tmp)
		common = append(common, "--data-dir", tmp)
	}
	cfg, extra, err := loadConfig("replay", common, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("replay: unexpected argument %q: %w", extra[0], errUsage)
	}
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	defer closeLog()

	opts := memoryOptions(cfg, log)
	if opts.Scrubber, err = scrubberFor(cfg); err != nil {
		return err
	}
	if *ranking != "" {
		r, err := memory.ParseRanking(memory.DefaultRanking(), *ranking)
		if err != nil {
			return fmt.Errorf("replay: --ranking: %w", err)
		}
		opts.Ranking = &r
	}
	clock := &replayClock{t: replayEpoch}
	opts.Now = clock.now
	sm, err := wireSeams(ctx, cfg, &opts, log)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer sm.close()
	if sm.sampling {
		return errors.New("replay: llm_provider sampling needs an MCP client; choose an HTTP provider or none")
	}
	// Load the embedding model (or fail to) before the first turn, so that
	// every turn sees the same signals whatever the machine's speed.
	embeddings := false
	emb := opts.Embedder
	if u, ok := emb.(interface{ Unwrap() memory.Embedder }); ok { // PostgreSQL's vector cache
		emb = u.Unwrap()
	}
	if lazy, ok := emb.(*embed.Lazy); ok {
		if _, err := lazy.Wait(ctx); err == nil {
			embeddings = true
		} else if ctx.Err() != nil {
			return ctx.Err()
		} else {
			opts.Embedder = nil
		}
	}
	store, err := memory.Open(ctx, opts)
	if err != nil {
		if errors.Is(err, memory.ErrLocked) {
			return fmt.Errorf("replay: %s is in use (a vc-mcp server?); stop it with \"vc-mcp daemon stop\" or replay into another --data-dir: %w", cfg.DataDir, err)
		}
		return fmt.Errorf("replay: open %s: %w", cfg.DataDir, err)
	}
	defer store.Close()

	lc := llmConfig(cfg, os.Getenv)
	rep := replayReport{
		Format: replayFormat, Version: 1, Source: filepath.Base(pos[0]), Conversation: *conv,
		Settings: replaySettings{
			ContextWindow: cfg.ContextWindow, SoftThreshold: cfg.SoftThreshold, HardThreshold: cfg.HardThreshold,
			ProtectedTurns: cfg.ProtectedTurns, Budget: *budget, Embeddings: embeddings, LLM: "none", Ranking: *ranking,
		},
		Turns: []turnReport{},
	}
	if lc.Enabled() {
		rep.Settings.LLM = lc.WithDefaults().Label()
	}
	p := &pipeline{mem: store, conv: *conv, budget: *budget, timings: !*noTimings, embedded: embeddings}
	start := time.Now()
	for i, t := range turns {
		clock.set(t.Time)
		tr, err := p.recall(ctx, i+1, t.Query, t.Time)
		if err != nil {
			return fmt.Errorf("replay: turn %d: %w", i+1, err)
		}
		tr.Answer = t.Answer
		if t.Answer != "" {
			tr.Tokens.Answer = tokens.Count(t.Answer)
		}
		if err := p.save(ctx, &tr, t.Messages, false); err != nil {
			return fmt.Errorf("replay: turn %d: %w", i+1, err)
		}
		rep.Turns = append(rep.Turns, tr)
		rep.Totals.StoredTurns += len(tr.Stored.TurnIDs)
		if tr.Compaction != nil {
			rep.Totals.Compactions++
			rep.Totals.SegmentsCompacted += tr.Compaction.Segments
			rep.Totals.TokensFreed += tr.Compaction.TokensFreed
		}
		rep.Totals.ActiveTokens = tr.Tokens.Active
	}
	rep.Totals.Turns = len(turns)
	st, err := store.Status(ctx, *conv)
	if err != nil {
		return fmt.Errorf("replay: status: %w", err)
	}
	rep.Totals.Topics = []replayTopic{}
	for _, ts := range st.Tags {
		rep.Totals.Topics = append(rep.Totals.Topics, replayTopic{Tag: ts.Tag, Turns: ts.Turns, Segments: ts.Segments})
	}
	if p.timings {
		rep.Timings = &struct {
			TotalMS float64 `json:"total_ms"`
		}{millis(time.Since(start))}
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("replay: close: %w", err)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	b = append(b, '\n')
	if *out == "" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return fmt.Errorf("replay: --out: %w", err)
	}
	fmt.Fprintf(stderr, "replay: %d turns, %d compactions -> %s\n", len(turns), rep.Totals.Compactions, *out)
	return nil
}

// pipeline runs turns through memory as a host would: recall before the
// model answers, then store the exchange. Replay and chat share it.
type pipeline struct {
	mem     *memory.Store
	conv    string
	budget  int
	timings bool
	// embedded: wait after each store until the new turns have vectors
	// (replay, so that runs repeat); chat does not wait for them.
	embedded bool
}

// recall assembles the context for a user message and starts its report.
func (p *pipeline) recall(ctx context.Context, n int, query string, at time.Time) (turnReport, error) {
	tr := turnReport{Turn: n, Timestamp: at.UTC().Format(time.RFC3339), Message: query}
	t0 := time.Now()
	rec, err := p.mem.Recall(ctx, memory.RecallRequest{ConversationID: p.conv, Message: query, MaxTokens: p.budget})
	if err != nil {
		return tr, fmt.Errorf("recall: %w", err)
	}
	if p.timings {
		tr.Timings = &turnTimings{RecallMS: millis(time.Since(t0))}
	}
	tr.MatchedTags, tr.Broad, tr.Temporal, tr.Signals = rec.MatchedTags, rec.Broad, rec.Temporal, rec.Signals
	tr.Context = rec.Text
	tr.Tokens = turnTokens{Message: tokens.Count(query), Context: rec.Tokens, Budget: rec.Breakdown.Budget}
	tr.Chosen = chosenContext{TurnIDs: rec.TurnIDs, Summaries: rec.Summaries, Included: rec.Included}
	tr.Breakdown = rec.Breakdown
	return tr, nil
}

// save appends a turn's messages (compact_context), forcing a compaction
// when force is set, and waits until they are searchable (and embedded, if
// asked) so that the next recall sees them whatever the machine's speed.
func (p *pipeline) save(ctx context.Context, tr *turnReport, msgs []memory.Message, force bool) error {
	t0 := time.Now()
	res, err := p.mem.Ingest(ctx, memory.IngestRequest{ConversationID: p.conv, Messages: msgs, Force: force})
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := p.mem.WaitIndexed(ctx); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if p.embedded {
		if err := p.mem.WaitEmbedded(ctx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	if p.timings {
		if tr.Timings == nil {
			tr.Timings = &turnTimings{}
		}
		tr.Timings.StoreMS = millis(time.Since(t0))
	}
	tr.Tags = res.Tags
	tr.Stored = storedTurns{TurnIDs: res.TurnIDs, Duplicates: res.Duplicates, Redacted: res.Redacted}
	tr.Tokens.Active = res.ActiveTokens
	if res.Compacted {
		tr.Compaction = &compactionEvent{Segments: res.SegmentsCompacted, TokensFreed: res.TokensFreed, Forced: force}
	}
	return nil
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// replayClock is memory's clock during a replay: the current turn's time.
type replayClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *replayClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *replayClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// readReplayInput reads FILE ("-" = stdin) in any of replay's formats.
func readReplayInput(name string, stdin io.Reader) ([]replayTurn, error) {
	var (
		b   []byte
		err error
	)
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, 256<<20))
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	turns, err := parseReplayInput(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(turns) == 0 {
		return nil, fmt.Errorf("%s: no user messages to replay", name)
	}
	return turns, nil
}

// parseReplayInput tells the formats apart by their first character: [ is
// a message array, { a saved chat session, anything else a prompts file.
func parseReplayInput(b []byte) ([]replayTurn, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(b)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		var msgs []memory.Message
		if err := json.Unmarshal(trimmed, &msgs); err != nil {
			return nil, fmt.Errorf("not a JSON array of messages ({\"role\", \"content\"}): %w", err)
		}
		return turnsFromMessages(msgs)
	case len(trimmed) > 0 && trimmed[0] == '{':
		var s chatSession
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("not a saved chat session: %w", err)
		}
		if s.Format != chatSessionFormat {
			return nil, fmt.Errorf("a JSON object with format %q: want a session saved by \"vc-mcp chat\" (format %q)", s.Format, chatSessionFormat)
		}
		if s.Version != 1 {
			return nil, fmt.Errorf("chat session version %d: this vc-mcp reads version 1", s.Version)
		}
		return turnsFromSession(s)
	}
	var turns []replayTurn
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		turns = append(turns, replayTurn{Query: line, Messages: []memory.Message{textMessage("user", line, "", "")}})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("prompts file: %w", err)
	}
	return stampTurns(turns)
}

// turnsFromMessages groups a message array into turns: a user message with
// text starts one; everything else joins the current turn (messages before
// the first user message join the first turn).
func turnsFromMessages(msgs []memory.Message) ([]replayTurn, error) {
	var turns []replayTurn
	var pending []memory.Message
	for i, m := range msgs {
		text, err := messageText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if m.Role == "user" && strings.TrimSpace(text) != "" {
			t := replayTurn{Query: strings.TrimSpace(text), Messages: append(pending, m)}
			pending = nil
			if m.Timestamp != "" {
				ts, err := time.Parse(time.RFC3339Nano, m.Timestamp)
				if err != nil {
					return nil, fmt.Errorf("message %d: timestamp %q: want RFC3339 like 2024-05-08T13:56:00Z", i, m.Timestamp)
				}
				t.Time = ts
			}
			turns = append(turns, t)
			continue
		}
		if len(turns) == 0 {
			pending = append(pending, m)
			continue
		}
		last := &turns[len(turns)-1]
		last.Messages = append(last.Messages, m)
		if m.Role == "assistant" && text != "" {
			if last.Answer != "" {
				last.Answer += "\n"
			}
			last.Answer += text
		}
	}
	return stampTurns(turns)
}

// messageText is a message's text: a JSON string, or the text blocks of a
// content array.
func messageText(raw json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", errors.New("content must be a string or an array of content blocks")
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n"), nil
}

func turnsFromSession(s chatSession) ([]replayTurn, error) {
	var turns []replayTurn
	for i, t := range s.Turns {
		q := strings.TrimSpace(t.User)
		if q == "" {
			return nil, fmt.Errorf("turns[%d]: user message is empty", i)
		}
		rt := replayTurn{Query: q, Answer: t.Assistant}
		if t.Timestamp != "" {
			ts, err := time.Parse(time.RFC3339Nano, t.Timestamp)
			if err != nil {
				return nil, fmt.Errorf("turns[%d]: timestamp %q: want RFC3339", i, t.Timestamp)
			}
			rt.Time = ts
		}
		rt.Messages = []memory.Message{textMessage("user", t.User, "", "")}
		if t.Assistant != "" {
			rt.Messages = append(rt.Messages, textMessage("assistant", t.Assistant, "", ""))
		}
		turns = append(turns, rt)
	}
	return stampTurns(turns)
}

// stampTurns gives turns without a time one a minute after the previous
// turn (the first at replayEpoch), and keeps time from running backwards.
func stampTurns(turns []replayTurn) ([]replayTurn, error) {
	var prev time.Time
	for i := range turns {
		switch {
		case turns[i].Time.IsZero() && prev.IsZero():
			turns[i].Time = replayEpoch
		case turns[i].Time.IsZero() || turns[i].Time.Before(prev):
			turns[i].Time = prev.Add(time.Minute)
		}
		prev = turns[i].Time
	}
	return turns, nil
}

// textMessage is a plain text message for memory.
func textMessage(role, text, id, ts string) memory.Message {
	c, _ := json.Marshal(text) // a string always marshals
	return memory.Message{Role: role, Content: c, ID: id, Timestamp: ts}
}

// splitArgs separates a subcommand's own flags (defined in fs) from the
// setting flags loadConfig takes and from positional arguments, wherever
// they appear on the line, so that "replay FILE --out x" works.
func splitArgs(args []string, fs *flag.FlagSet) (own, common, pos []string, err error) {
	settingBool := map[string]bool{}
	for _, k := range settingKeys {
		settingBool[k.flag] = k.isBool
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			pos = append(pos, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var isBool, known bool
		if f := fs.Lookup(name); f != nil {
			bf, ok := f.Value.(interface{ IsBoolFlag() bool })
			isBool, known = ok && bf.IsBoolFlag(), true
			own = append(own, a)
			if !isBool && !hasValue {
				if i+1 >= len(args) {
					return nil, nil, nil, fmt.Errorf("flag -%s needs a value", name)
				}
				i++
				own = append(own, args[i])
			}
			continue
		}
		if name == "h" || name == "help" {
			own = append(own, a)
			continue
		}
		isBool, known = settingBool[name]
		if !known {
			return nil, nil, nil, fmt.Errorf("unknown flag %s", a)
		}
		common = append(common, a)
		if !isBool && !hasValue {
			if i+1 >= len(args) {
				return nil, nil, nil, fmt.Errorf("flag -%s needs a value", name)
			}
			i++
			common = append(common, args[i])
		}
	}
	return own, common, pos, nil
}

// hasFlag reports whether args set the flag name.
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && n == name {
			return true
		}
	}
	return false
}
