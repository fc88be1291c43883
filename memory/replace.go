package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

// DefaultKeepLast is how many of the latest messages summary replacement
// keeps verbatim by default (seed 001 keeps the last two).
const DefaultKeepLast = 2

// SummaryIDPrefix starts the id of every summary message CompactMessages
// writes. A message with such an id is recognised when it comes back: it is
// folded into the next summary, never stored as a turn and never kept as a
// system message.
const SummaryIDPrefix = "vc-summary-"

// ReplacementOptions are summary replacement's configured defaults (see
// Settings, which can change them at run time). The zero value means:
// enabled, keep the last DefaultKeepLast messages, the detailed prompt, a
// notice for the user, the built-in prompts.
type ReplacementOptions struct {
	Disabled        bool
	KeepLast        int
	UseSimplePrompt bool
	NoNotice        bool
	SummaryPrompt   string
	SimplePrompt    string
}

// settings returns the Settings the options configure.
func (o Options) settings() Settings {
	return Settings{
		SoftThreshold:   o.SoftThreshold,
		HardThreshold:   o.HardThreshold,
		ProtectedTurns:  o.ProtectedTurns,
		Enabled:         !o.Replacement.Disabled,
		KeepLast:        o.Replacement.KeepLast,
		UseSimplePrompt: o.Replacement.UseSimplePrompt,
		NotifyUser:      !o.Replacement.NoNotice,
		SummaryPrompt:   o.Replacement.SummaryPrompt,
		SimplePrompt:    o.Replacement.SimplePrompt,
		HintStyle:       o.HintStyle,
	}
}

// ReplaceRequest is one summary replacement: the conversation's messages,
// as the client would send them to its model.
type ReplaceRequest struct {
	ConversationID string
	Messages       []Message
	// KeepLast overrides Settings.KeepLast when not nil.
	KeepLast *int
	// UseSimplePrompt and Notice override the settings when not nil.
	UseSimplePrompt *bool
	Notice          *bool
	// OverThresholdOnly returns the messages unchanged unless they exceed
	// the soft threshold of the context window (for a client that calls on
	// every turn and wants compaction only when it is due).
	OverThresholdOnly bool
}

// Replacement says what a CompactMessages call did, without the messages.
type Replacement struct {
	ConversationID string `json:"conversation_id"`
	// Compacted is false when the messages came back unchanged; Reason
	// then says why.
	Compacted bool   `json:"compacted"`
	Reason    string `json:"reason,omitempty"`
	// Replaced counts the messages the summary stands in for; Kept the
	// system messages and latest messages kept verbatim.
	Replaced int `json:"replaced"`
	Kept     int `json:"kept"`
	// TokensBefore and TokensAfter are the messages' cl100k tokens.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	// Method is the summariser that wrote the summary ("extractive" or
	// "llm:<provider>/<model>"); Prompt the prompt asked for ("detailed" or
	// "simple").
	Method string `json:"method,omitempty"`
	Prompt string `json:"prompt,omitempty"`
	// Stored and Duplicates: every message is also stored in memory
	// (nothing is lost); these are Ingest's counts.
	Stored     int `json:"stored"`
	Duplicates int `json:"duplicates"`
	// At is when it happened.
	At time.Time `json:"at"`
}

// ReplaceResult is the compacted message list, ready to send, and what was done.
type ReplaceResult struct {
	Replacement
	// Messages are the original system messages, one summary message
	// (role system, id SummaryIDPrefix...), then the latest messages.
	Messages []Message `json:"messages"`
	// Summary is the summary message's text.
	Summary string `json:"summary,omitempty"`
	// Notice is a one-line note for the user that compaction happened
	// (empty when notify_user is off or nothing was compacted).
	Notice string `json:"notice,omitempty"`
}

// summaryHeader opens every summary message, so the model knows what it is
// reading and where the originals are.
const summaryHeader = "Summary of the earlier part of this conversation (the original messages are kept in long-term memory; find_quote and expand_topic can read them back):\n\n"

// CompactMessages is summary-replacement mode: it stores every message in
// memory (as Ingest does, so nothing is lost), then returns the list to send
// instead: the original system messages, one summary message standing in
// for everything before the latest KeepLast messages, and those messages.
// The summary comes from the configured summariser (a model, or MCP
// sampling), falling back to extractive. A tool call is never separated from
// its result: the kept part starts before a result whose call it would
// otherwise lose. When replacement is disabled, or there is nothing to
// replace, the messages come back unchanged with a Reason.
func (s *Store) CompactMessages(ctx context.Context, req ReplaceRequest) (ReplaceResult, error) {
	if err := s.refuseWrite(); err != nil {
		return ReplaceResult{}, err
	}
	set := s.set.get()
	keep := set.KeepLast
	if req.KeepLast != nil {
		if *req.KeepLast < 0 || *req.KeepLast > MaxKeepLast {
			return ReplaceResult{}, fieldError(ErrInvalid, "keep_last", "must be between 0 and %d, got %d", MaxKeepLast, *req.KeepLast)
		}
		keep = *req.KeepLast
	}
	simple := set.UseSimplePrompt
	if req.UseSimplePrompt != nil {
		simple = *req.UseSimplePrompt
	}
	notice := set.NotifyUser
	if req.Notice != nil {
		notice = *req.Notice
	}
	inputs, err := normalizeBatch(req.Messages, s.opts.MaxMessageBytes)
	if err != nil {
		return ReplaceResult{}, err
	}

	// Our own earlier summaries are folded into the new one, never stored.
	// The call that wrote the last one stored everything before it (the
	// system messages in front included), so only what follows it is sent
	// to Ingest: that keeps its alignment with the stored tail, and a
	// resent list stores only its new messages.
	store := req.Messages
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if isSummary(req.Messages[i]) {
			store = req.Messages[i+1:]
			break
		}
	}
	res := ReplaceResult{Replacement: Replacement{At: s.now().UTC()}}
	if len(store) > 0 {
		in, err := s.Ingest(ctx, IngestRequest{ConversationID: req.ConversationID, Messages: store})
		if err != nil {
			return ReplaceResult{}, err
		}
		res.ConversationID, res.Stored, res.Duplicates = in.ConversationID, in.Stored, in.Duplicates
	} else {
		id, err := s.resolve(req.ConversationID)
		if err != nil {
			return ReplaceResult{}, err
		}
		res.ConversationID = id
	}

	count := func(ms []turnInput) int {
		n := 0
		for _, m := range ms {
			n += s.tok.Count(m.Role+": "+m.Text) + 4 // role and framing, as chat formats add
		}
		return n
	}
	res.TokensBefore = count(inputs)
	unchanged := func(reason string) (ReplaceResult, error) {
		res.Messages, res.Reason = req.Messages, reason
		res.Kept, res.TokensAfter = len(req.Messages), res.TokensBefore
		s.set.recordReplacement(res.ConversationID, res.Replacement)
		return res, nil
	}
	if !set.Enabled {
		return unchanged("summary replacement is disabled (enabled: false in the settings; POST /api/config {\"enabled\": true} turns it on); the messages were stored")
	}
	if req.OverThresholdOnly {
		if soft := int(float64(s.opts.ContextWindow) * set.SoftThreshold); res.TokensBefore < soft {
			return unchanged(fmt.Sprintf("the messages hold %d tokens, below the soft threshold of %d (%.0f%% of a %d-token window); the messages were stored",
				res.TokensBefore, soft, set.SoftThreshold*100, s.opts.ContextWindow))
		}
	}

	// Split: system messages (kept), earlier summaries and the rest.
	var system, rest []int
	var previous []string
	for i, m := range req.Messages {
		switch {
		case isSummary(m):
			previous = append(previous, strings.TrimPrefix(inputs[i].Text, strings.TrimSpace(summaryHeader)))
		case inputs[i].Role == "system":
			system = append(system, i)
		default:
			rest = append(rest, i)
		}
	}
	cut := max(0, len(rest)-keep) // rest[:cut] are replaced
	// Never keep a tool result without its call.
	for cut > 0 && cut < len(rest) && inputs[rest[cut]].ToolResult {
		cut--
	}
	if cut == 0 && len(previous) == 0 {
		return unchanged(fmt.Sprintf("nothing to replace: %d message(s) besides the system messages, and keep_last is %d", len(rest), keep))
	}

	turns := make([]summarize.Turn, 0, cut)
	for _, i := range rest[:cut] {
		in := inputs[i]
		if strings.TrimSpace(in.Text) == "" {
			continue
		}
		t := summarize.Turn{Role: in.Role, Speaker: in.Name, Text: in.Text}
		if in.HasTime {
			t.Time = in.Timestamp
		}
		turns = append(turns, t)
	}
	replacedTokens := count(pickInputs(inputs, rest[:cut]))
	prompt := set.SummaryPrompt
	res.Prompt = "detailed"
	if simple {
		prompt, res.Prompt = set.SimplePrompt, "simple"
	}
	out, err := s.sum.Summarize(ctx, summarize.Input{
		ConversationID: res.ConversationID,
		Kind:           summarize.Conversation,
		Turns:          turns,
		Previous:       strings.TrimSpace(strings.Join(previous, "\n")),
		MaxTokens:      replacementTokens(replacedTokens),
		Prompt:         prompt,
		Simple:         simple,
	})
	if errors.Is(err, summarize.ErrEmpty) {
		return unchanged("nothing to replace: the earlier messages hold no text to summarise")
	}
	if err != nil {
		return ReplaceResult{}, fmt.Errorf("summarise %d messages of %s: %w", cut, res.ConversationID, err)
	}
	res.Summary = s.tok.Truncate(strings.TrimSpace(out.Summary), replacementTokens(replacedTokens))
	res.Method = out.Method

	sum := Message{Role: "system", ID: summaryID(res.ConversationID, res.Summary)}
	sum.Content, _ = json.Marshal(summaryHeader + res.Summary) // a string always encodes
	res.Messages = make([]Message, 0, len(system)+1+len(rest)-cut)
	for _, i := range system {
		res.Messages = append(res.Messages, req.Messages[i])
	}
	res.Messages = append(res.Messages, sum)
	for _, i := range rest[cut:] {
		res.Messages = append(res.Messages, req.Messages[i])
	}
	res.Compacted = true
	res.Replaced = cut + len(previous)
	res.Kept = len(res.Messages) - 1
	after := pickInputs(inputs, system)
	after = append(after, turnInput{Role: "system", Text: summaryHeader + res.Summary})
	after = append(after, pickInputs(inputs, rest[cut:])...)
	res.TokensAfter = count(after)
	if notice {
		res.Notice = fmt.Sprintf("Context compacted: %d earlier message(s) replaced by a summary (%d tokens before, %d after); the originals stay in memory.",
			res.Replaced, res.TokensBefore, res.TokensAfter)
	}
	s.set.recordReplacement(res.ConversationID, res.Replacement)
	s.log.Info("summary replacement", "conversation", res.ConversationID, "replaced", res.Replaced, "kept", res.Kept,
		"tokens_before", res.TokensBefore, "tokens_after", res.TokensAfter, "method", res.Method)
	return res, nil
}

// LastReplacement returns the conversation's last CompactMessages outcome
// since the store opened.
func (s *Store) LastReplacement(conversationID string) (Replacement, bool) {
	id, err := s.resolve(conversationID)
	if err != nil {
		return Replacement{}, false
	}
	return s.set.lastReplacement(id)
}

// replacementTokens sizes the summary: a quarter of what it replaces,
// between 150 and 1500 tokens.
func replacementTokens(replaced int) int { return min(1500, max(150, replaced/4)) }

func isSummary(m Message) bool { return strings.HasPrefix(m.ID, SummaryIDPrefix) }

func summaryID(conv, text string) string {
	h := sha256.Sum256([]byte(conv + "\x00" + text))
	return SummaryIDPrefix + hex.EncodeToString(h[:8])
}

func pickInputs(all []turnInput, idx []int) []turnInput {
	out := make([]turnInput, len(idx))
	for i, j := range idx {
		out[i] = all[j]
	}
	return out
}
