package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/llm"
	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

const chatUsage = `usage:
  vc-mcp chat [--conversation ID] [--budget N] [--history N] [setting flags]

An interactive terminal chat with the configured model, with memory in
between: each message first recalls context from memory (as recall_context
does), the model answers with that context and the last few exchanges, and
the exchange is then stored (as compact_context does, compacting when the
thresholds say so). The screen shows the conversation, the topics (tag
panel), how the recall budget was spent (budget bar), the turns with their
tags, and for the selected turn what memory did (inspector).

The model is the one configured for tagging and summaries: llm_provider,
llm_model, llm_base_url and llm_api_key_env (flags --llm-provider...,
env VC_LLM_*, or the config file), e.g.
  VC_LLM_PROVIDER=ollama VC_LLM_MODEL=llama3.2 vc-mcp chat
  VC_LLM_PROVIDER=openai VC_LLM_MODEL=gpt-4o-mini VC_LLM_API_KEY_ENV=OPENAI_API_KEY vc-mcp chat

Commands (type them as a message):
  /compact          compact the conversation now
  /export [FILE]    save the session as JSON (default vc-session.json);
                    "vc-mcp replay FILE" runs it again
  /quit             leave (also Ctrl+C)
Keys: Ctrl+B / Ctrl+F select the previous / next turn, Tab (Ctrl+I) opens
or closes the turn inspector, PgUp / PgDn scroll.

Memory is the data directory's (--data-dir); a vc-mcp server using it must
be stopped first ("vc-mcp daemon stop"). Logs go to --log-file, or nowhere:
the terminal belongs to the chat.

Flags:
  --conversation ID  conversation to talk in (default "chat")
  --budget N         recall budget in cl100k tokens (default 2000)
  --history N        past exchanges sent verbatim besides memory (default 2)
`

// errNoChatModel tells the user what to set to chat.
var errNoChatModel = errors.New(`chat needs a model: set llm_provider and llm_model, e.g. ` +
	`VC_LLM_PROVIDER=ollama VC_LLM_MODEL=llama3.2, or VC_LLM_PROVIDER=openai VC_LLM_MODEL=gpt-4o-mini ` +
	`VC_LLM_API_KEY_ENV=OPENAI_API_KEY (flags --llm-provider/--llm-model/--llm-api-key-env or the config file work too; see "vc-mcp chat -h")`)

// runChat runs "vc-mcp chat".
func runChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("vc-mcp chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, chatUsage) }
	conv := fs.String("conversation", "chat", "")
	budget := fs.Int("budget", 2000, "")
	history := fs.Int("history", 2, "")
	own, common, pos, err := splitArgs(args, fs)
	if err != nil {
		fmt.Fprint(stderr, chatUsage)
		return fmt.Errorf("chat: %v: %w", err, errUsage)
	}
	if err := fs.Parse(own); err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprint(stderr, chatUsage)
		return fmt.Errorf("chat: unexpected argument %q: %w", pos[0], errUsage)
	}
	if *budget < 100 || *budget > 32000 {
		return fmt.Errorf("chat: --budget %d: want 100 to 32000 tokens", *budget)
	}
	if *history < 0 || *history > 50 {
		return fmt.Errorf("chat: --history %d: want 0 to 50 exchanges", *history)
	}
	if strings.TrimSpace(*conv) == "" {
		return errors.New("chat: --conversation must not be empty")
	}
	cfg, extra, err := loadConfig("chat", common, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("chat: unexpected argument %q: %w", extra[0], errUsage)
	}
	lc := llmConfig(cfg, os.Getenv)
	if !lc.Enabled() {
		return errNoChatModel
	}
	if err := lc.Validate(); err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	lc = lc.WithDefaults()
	if lc.Provider == llm.ProviderSampling {
		return errors.New("chat: llm_provider sampling borrows an MCP client's model, and chat has none; choose openai, anthropic, ollama, lmstudio or vllm")
	}
	completer, err := llm.NewCompleter(lc, os.Getenv, nil)
	if err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	in, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(in.Fd()) {
		return errors.New("chat: standard input is not a terminal; run it in one, or use \"vc-mcp replay FILE\" for scripted runs")
	}

	// The terminal belongs to the chat: logs go to log_file or nowhere.
	var log *slog.Logger
	closeLog := func() {}
	if cfg.LogFile != "" {
		if log, closeLog, err = newLogger(cfg, stderr); err != nil {
			return err
		}
	} else {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	defer closeLog()
	opts := memoryOptions(cfg, log)
	if opts.Scrubber, err = scrubberFor(cfg); err != nil {
		return err
	}
	sm, err := wireSeams(ctx, cfg, &opts, log)
	if err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	defer sm.close()
	store, err := memory.Open(ctx, opts)
	if err != nil {
		if errors.Is(err, memory.ErrLocked) {
			return fmt.Errorf("chat: %s is in use by a vc-mcp server (your MCP hosts'); stop it with \"vc-mcp daemon stop\" or chat in another --data-dir: %w", cfg.DataDir, err)
		}
		return fmt.Errorf("chat: open %s: %w", cfg.DataDir, err)
	}
	defer store.Close()

	app := newChatApp(ctx, chatDeps{
		pipeline:  &pipeline{mem: store, conv: *conv, budget: *budget, timings: true},
		completer: completer,
		llm:       lc,
		history:   *history,
		window:    cfg.ContextWindow,
		soft:      cfg.SoftThreshold,
		sessionID: newSessionID(),
		now:       time.Now,
	})
	prog := tea.NewProgram(app, tea.WithContext(ctx), tea.WithInput(stdin), tea.WithOutput(stdout), tea.WithAltScreen())
	if _, err := prog.Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("chat: %w", err)
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("chat: close memory: %w", err)
	}
	return nil
}

// chatDeps is what the chat screen works with.
type chatDeps struct {
	pipeline  *pipeline
	completer llm.Completer
	llm       llm.Config
	// history is how many past exchanges go to the model verbatim.
	history int
	// window and soft describe the compaction threshold, for the budget bar.
	window    int
	soft      float64
	sessionID string
	now       func() time.Time
}

// chatSystemPrompt frames what memory recalled for the model.
const chatSystemPrompt = `You are a helpful assistant in a long-running conversation. The user's memory system recalled the context below from earlier in this conversation (past turns verbatim and summaries of older topics). Use it when it is relevant, say so when it does not hold what the user asks about, and never mention this framing.

<memory>
%s
</memory>`

// exchange runs one turn: recall, the model's answer, then storing the
// exchange. past holds the earlier exchanges (oldest first).
func (d chatDeps) exchange(ctx context.Context, n int, user string, past []chatTurn) (chatTurn, error) {
	at := d.now().UTC()
	tr, err := d.pipeline.recall(ctx, n, user, at)
	if err != nil {
		return chatTurn{}, err
	}
	req := llm.Request{
		System:      fmt.Sprintf(chatSystemPrompt, tr.Context),
		MaxTokens:   d.llm.MaxTokens,
		Temperature: d.llm.Temperature,
		Purpose:     "chat",
	}
	for _, p := range past[max(0, len(past)-d.history):] {
		req.Messages = append(req.Messages, llm.Message{Role: "user", Content: p.User}, llm.Message{Role: "assistant", Content: p.Assistant})
	}
	req.Messages = append(req.Messages, llm.Message{Role: "user", Content: user})
	t0 := time.Now()
	resp, err := d.completer.Complete(ctx, req)
	if err != nil {
		return chatTurn{}, fmt.Errorf("%s: %w", d.llm.Label(), err)
	}
	answer := strings.TrimSpace(resp.Text)
	if answer == "" {
		return chatTurn{}, fmt.Errorf("%s answered with no text", d.llm.Label())
	}
	tr.Timings.AnswerMS = millis(time.Since(t0))
	tr.Answer = answer
	tr.Tokens.Answer = tokens.Count(answer)
	ts := at.Format(time.RFC3339Nano)
	if err := d.pipeline.save(ctx, &tr, d.messages(n, user, answer, ts), false); err != nil {
		return chatTurn{}, err
	}
	return chatTurn{User: user, Assistant: answer, Timestamp: at.Format(time.RFC3339), Report: &tr}, nil
}

// messages are one exchange as stored. The ids make a resend (by /compact)
// count as a duplicate, never as a repeat.
func (d chatDeps) messages(n int, user, answer, ts string) []memory.Message {
	id := fmt.Sprintf("chat-%s-%d", d.sessionID, n)
	return []memory.Message{textMessage("user", user, id+"-user", ts), textMessage("assistant", answer, id+"-assistant", ts)}
}

// compact forces a compaction, resending the last exchange (stored
// already, so only the compaction happens).
func (d chatDeps) compact(ctx context.Context, n int, last chatTurn) (compactionEvent, error) {
	tr := turnReport{}
	if err := d.pipeline.save(ctx, &tr, d.messages(n, last.User, last.Assistant, last.Timestamp), true); err != nil {
		return compactionEvent{}, err
	}
	if tr.Compaction == nil {
		return compactionEvent{Forced: true}, nil
	}
	return *tr.Compaction, nil
}

// topics reads the tag panel's content.
func (d chatDeps) topics(ctx context.Context) ([]memory.TagStatus, int, error) {
	st, err := d.pipeline.mem.Status(ctx, d.pipeline.conv)
	if errors.Is(err, memory.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	return st.Tags, st.Totals.ActiveTokens, nil
}

// exportSession writes the session atomically (temp file, rename).
func exportSession(path string, s chatSession) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".vc-session-*.json")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func newSessionID() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return fmt.Sprintf("%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b)
}
