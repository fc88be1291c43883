package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
	"github.com/vc-mcp/vc-mcp/prompts"
)

// SummaryFallback is the deterministic summariser used whenever the model fails.
type SummaryFallback interface {
	Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error)
}

const (
	// maxAddedTags bounds the tags a summary may add to a segment.
	maxAddedTags = 5
	// maxDescriptionWords bounds a tag description.
	maxDescriptionWords = 80
)

// Summarizer writes summaries with a model, falling back to a
// deterministic summariser.
type Summarizer struct {
	client   *Client
	fallback SummaryFallback
	mode     prompts.Mode
	health   *health
}

// NewSummarizer returns a Summarizer using client, falling back to
// fallback (nil: failures are returned as errors).
func NewSummarizer(client *Client, fallback SummaryFallback) *Summarizer {
	mode, err := prompts.ParseMode(client.cfg.PromptMode)
	if err != nil {
		mode = prompts.Detailed
	}
	return &Summarizer{
		client:   client,
		fallback: fallback,
		mode:     mode,
		health:   &health{label: client.Label(), fallback: "extractive summaries", now: client.now},
	}
}

// Ready reports whether the model is being used, and why not.
func (s *Summarizer) Ready() (bool, string) { return s.health.ready() }

// Summarize writes one summary (Kind Segment, Tag or Single). The result's
// Tags always include every input tag. A model or parse failure is recorded
// and answered by the fallback; only the fallback's own failure, or a
// cancelled ctx, is returned.
func (s *Summarizer) Summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	if in.ConversationID != "" && ConversationFrom(ctx) == "" {
		ctx = WithConversation(ctx, in.ConversationID)
	}
	if !s.health.allow() {
		return s.fall(ctx, in, nil)
	}
	res, err := s.summarize(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return summarize.Result{}, fmt.Errorf("llm summarize: %w", ctx.Err())
		}
		if errors.Is(err, prompts.ErrInvalid) {
			// Nothing to ask the model (e.g. an empty turn): not its failure.
			return s.fall(ctx, in, err)
		}
		s.health.fail(err)
		s.client.logger.Warn("llm summary failed; using fallback", "provider", s.client.Label(), "kind", in.Kind, "err", err)
		return s.fall(ctx, in, err)
	}
	s.health.ok()
	return res, nil
}

func (s *Summarizer) fall(ctx context.Context, in summarize.Input, cause error) (summarize.Result, error) {
	if s.fallback == nil {
		if cause == nil {
			cause = ErrCoolingDown
		}
		return summarize.Result{}, fmt.Errorf("llm summarize: %w", cause)
	}
	res, err := s.fallback.Summarize(ctx, in)
	if err != nil {
		return res, fmt.Errorf("fallback summarizer: %w", err)
	}
	res.Tags = mergeTags(in.Tags, res.Tags)
	return res, nil
}

// instructions are the caller's override, else the matching tag rule's prompt.
func (s *Summarizer) instructions(in summarize.Input) string {
	if strings.TrimSpace(in.Prompt) != "" {
		return in.Prompt
	}
	if r, ok := s.client.cfg.Rule(in.Tag); ok {
		return r.SummaryPrompt
	}
	return ""
}

// words turns a token budget into a word budget (about 0.75 words a token).
func words(maxTokens, def int) int {
	if maxTokens <= 0 {
		return def
	}
	return max(10, maxTokens*3/4)
}

func (s *Summarizer) summarize(ctx context.Context, in summarize.Input) (summarize.Result, error) {
	var (
		p   prompts.Prompt
		err error
	)
	instr := s.instructions(in)
	switch in.Kind {
	case summarize.Segment:
		turns := make([]prompts.Turn, len(in.Turns))
		for i, t := range in.Turns {
			turns[i] = prompts.Turn{Role: t.Role, Speaker: t.Speaker, Text: t.Text}
			if !t.Time.IsZero() {
				turns[i].Time = t.Time.UTC().Format(time.RFC3339)
			}
		}
		p, err = prompts.Segment(prompts.SegmentData{Mode: s.mode, Tag: in.Tag, Tags: in.Tags, Turns: turns,
			MaxWords: words(in.MaxTokens, 150), Instructions: instr})
	case summarize.Tag:
		p, err = prompts.Rollup(prompts.RollupData{Mode: s.mode, Tag: in.Tag, Tags: in.Tags, Segments: in.Segments,
			MaxWords: words(in.MaxTokens, 250), Instructions: instr})
	case summarize.Single:
		if len(in.Turns) != 1 {
			return summarize.Result{}, fmt.Errorf("turn summary needs exactly one turn, got %d: %w", len(in.Turns), prompts.ErrInvalid)
		}
		t := in.Turns[0]
		p, err = prompts.TurnSummary(prompts.TurnData{Mode: s.mode, Role: t.Role, Speaker: t.Speaker, Text: t.Text,
			Previous: in.Previous, PreviousRole: other(t.Role, in.Previous),
			Next: in.Next, NextRole: other(t.Role, in.Next),
			MaxWords: words(in.MaxTokens, 120), Instructions: instr})
	case summarize.Conversation:
		mode := s.mode
		if in.Simple {
			mode = prompts.Simple
		}
		msgs := make([]prompts.Turn, len(in.Turns))
		for i, t := range in.Turns {
			msgs[i] = prompts.Turn{Role: t.Role, Speaker: t.Speaker, Text: t.Text}
			if !t.Time.IsZero() {
				msgs[i].Time = t.Time.UTC().Format(time.RFC3339)
			}
		}
		p, err = prompts.Replace(prompts.ReplaceData{Mode: mode, Messages: msgs, Previous: in.Previous,
			MaxWords: words(in.MaxTokens, 400), Instructions: in.Prompt})
	default:
		return summarize.Result{}, fmt.Errorf("summary kind %q: %w", in.Kind, prompts.ErrInvalid)
	}
	if err != nil {
		return summarize.Result{}, err
	}
	maxTokens := 0 // the configured default
	if in.MaxTokens > 0 {
		maxTokens = in.MaxTokens*2 + 400 // room for the JSON fields around the summary
	}
	resp, err := s.client.Complete(ctx, Request{
		System:    p.System,
		Messages:  []Message{{Role: "user", Content: p.User}},
		MaxTokens: maxTokens,
		JSON:      true,
		Purpose:   p.Name,
	})
	if err != nil {
		return summarize.Result{}, err
	}
	res, err := parseSummary(resp.Text, in)
	if err != nil {
		if resp.Truncated {
			err = fmt.Errorf("%w (answer cut off at the token limit)", err)
		}
		return summarize.Result{}, err
	}
	model := resp.Model
	if model == "" {
		model = s.client.cfg.Model
	}
	res.Method = "llm:" + s.client.cfg.Provider + "/" + model
	res.Version = p.Version
	return res, nil
}

// other guesses the neighbour's role in a two-party exchange.
func other(role, text string) string {
	if text == "" {
		return ""
	}
	switch role {
	case "user":
		return "assistant"
	case "assistant":
		return "user"
	}
	return ""
}

type summaryAnswer struct {
	Summary        string     `json:"summary"`
	Description    string     `json:"description"`
	Entities       stringList `json:"entities"`
	KeyDecisions   stringList `json:"key_decisions"`
	ActionItems    stringList `json:"action_items"`
	DateReferences stringList `json:"date_references"`
	RefinedTags    stringList `json:"refined_tags"`
	RelatedTags    stringList `json:"related_tags"`
}

// parseSummary parses and validates a summary answer. The summary must be
// non-empty; refined tags are merged after the input tags, so none is ever
// lost, and at most maxAddedTags valid kebab-case tags are added. A turn
// summary may also come back as plain prose.
func parseSummary(text string, in summarize.Input) (summarize.Result, error) {
	var a summaryAnswer
	raw, err := extractJSON(text)
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &a); err != nil {
			return summarize.Result{}, fmt.Errorf("summary answer: %v: %w", err, ErrBadResponse)
		}
	case in.Kind == summarize.Single && !strings.Contains(text, "{"):
		a.Summary = strings.TrimSpace(stripThinking(text))
	default:
		return summarize.Result{}, fmt.Errorf("summary answer: %w: %w", err, ErrBadResponse)
	}
	a.Summary = strings.TrimSpace(a.Summary)
	if a.Summary == "" {
		return summarize.Result{}, fmt.Errorf("summary answer: empty summary: %w", ErrBadResponse)
	}
	res := summarize.Result{
		Summary:     a.Summary,
		Entities:    clean(a.Entities),
		Decisions:   clean(a.KeyDecisions),
		ActionItems: clean(a.ActionItems),
		Dates:       clean(a.DateReferences),
	}
	if in.Kind == summarize.Tag {
		d := strings.TrimSpace(a.Description)
		if d == "" {
			// A missing description is repaired from the summary's first sentence.
			d = a.Summary
			if i := strings.IndexAny(d, ".!?"); i > 0 {
				d = d[:i+1]
			}
		}
		res.Description = truncateWords(d, maxDescriptionWords)
	}
	var added []string
	for _, t := range a.RefinedTags {
		tag, ok := normalizeTag(t)
		if !ok || tag == tagging.General || len(added) == maxAddedTags {
			continue
		}
		added = append(added, tag)
	}
	res.Tags = mergeTags(in.Tags, added)
	return res, nil
}

// mergeTags returns base followed by the extra tags not in base: tags are
// only ever added.
func mergeTags(base, extra []string) []string {
	out := append([]string(nil), base...)
	seen := make(map[string]bool, len(base)+len(extra))
	for _, t := range base {
		seen[t] = true
	}
	for _, t := range extra {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// clean trims items and drops empty ones.
func clean(l stringList) []string {
	var out []string
	for _, s := range l {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
