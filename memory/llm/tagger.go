package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
	"github.com/vc-mcp/vc-mcp/prompts"
)

// TagFallback is the deterministic tagger used whenever the model fails.
type TagFallback interface {
	Tag(ctx context.Context, in tagging.Input) (tagging.Result, error)
}

// Limits on what is sent to the model per call.
const (
	// maxTagText bounds the turn text shown for tagging (runes); the head
	// of a turn says what it is about.
	maxTagText = 6000
	// maxVocab bounds the vocabulary shown (most used first).
	maxVocab = 200
	// maxRelated bounds related tags kept.
	maxRelated = 5
)

// Tagger tags turns with a model, falling back to a deterministic tagger.
type Tagger struct {
	client   *Client
	fallback TagFallback
	mode     prompts.Mode
	health   *health
}

// NewTagger returns a Tagger using client, falling back to fallback (which
// may be nil: then failures are returned as errors).
func NewTagger(client *Client, fallback TagFallback) *Tagger {
	mode, err := prompts.ParseMode(client.cfg.PromptMode)
	if err != nil {
		mode = prompts.Detailed // Validate reports bad modes before this point
	}
	return &Tagger{
		client:   client,
		fallback: fallback,
		mode:     mode,
		health:   &health{label: client.Label(), fallback: "keyword tagger", now: client.now},
	}
}

// Ready reports whether the model is being used, and why not.
func (t *Tagger) Ready() (bool, string) { return t.health.ready() }

// Tag tags one turn. A model or parse failure is recorded and answered by
// the fallback (Source "fallback"); only the fallback's own failure, or a
// cancelled ctx, is returned.
func (t *Tagger) Tag(ctx context.Context, in tagging.Input) (tagging.Result, error) {
	if in.ConversationID != "" && ConversationFrom(ctx) == "" {
		ctx = WithConversation(ctx, in.ConversationID)
	}
	if !t.health.allow() {
		return t.fall(ctx, in, nil)
	}
	res, err := t.tag(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return tagging.Result{}, fmt.Errorf("llm tag: %w", ctx.Err())
		}
		if errors.Is(err, prompts.ErrInvalid) {
			// Nothing to ask the model (e.g. an empty turn): not its failure.
			return t.fall(ctx, in, err)
		}
		t.health.fail(err)
		t.client.logger.Warn("llm tagging failed; using fallback", "provider", t.client.Label(), "err", err)
		return t.fall(ctx, in, err)
	}
	t.health.ok()
	return res, nil
}

func (t *Tagger) fall(ctx context.Context, in tagging.Input, cause error) (tagging.Result, error) {
	if t.fallback == nil {
		if cause == nil {
			cause = ErrCoolingDown
		}
		return tagging.Result{}, fmt.Errorf("llm tag: %w", cause)
	}
	res, err := t.fallback.Tag(ctx, in)
	if err != nil {
		return res, fmt.Errorf("fallback tagger: %w", err)
	}
	res.Source = "fallback"
	return res, nil
}

func (t *Tagger) tag(ctx context.Context, in tagging.Input) (tagging.Result, error) {
	text := in.Text
	if r := []rune(text); len(r) > maxTagText {
		text = string(r[:maxTagText]) + "\n[...]"
	}
	p, err := prompts.Tag(prompts.TagData{
		Mode:       t.mode,
		Text:       text,
		Role:       in.Role,
		Speaker:    in.Speaker,
		Vocabulary: vocabulary(in.Vocabulary, in.Aliases, maxVocab),
		Previous:   in.Previous,
	})
	if err != nil {
		return tagging.Result{}, err
	}
	resp, err := t.client.Complete(ctx, Request{
		System:    p.System,
		Messages:  []Message{{Role: "user", Content: p.User}},
		MaxTokens: 300,
		JSON:      true,
		Purpose:   "tag",
	})
	if err != nil {
		return tagging.Result{}, err
	}
	res, err := parseTags(resp.Text, in)
	if err != nil {
		if resp.Truncated {
			err = fmt.Errorf("%w (answer cut off at the token limit)", err)
		}
		return tagging.Result{}, err
	}
	model := resp.Model
	if model == "" {
		model = t.client.cfg.Model
	}
	res.Source = "llm:" + t.client.cfg.Provider + "/" + model
	return res, nil
}

// vocabulary lists the n most used tags, with their aliases.
func vocabulary(vocab map[string]int, aliases map[string]string, n int) []prompts.VocabEntry {
	byTag := map[string][]string{}
	for a, c := range aliases {
		byTag[c] = append(byTag[c], a)
	}
	out := make([]prompts.VocabEntry, 0, len(vocab))
	for tag, count := range vocab {
		if tag == tagging.General {
			continue
		}
		al := byTag[tag]
		sort.Strings(al)
		out = append(out, prompts.VocabEntry{Tag: tag, Count: count, Aliases: al})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Tag < out[j].Tag
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

type tagAnswer struct {
	Tags     stringList `json:"tags"`
	Primary  string     `json:"primary"`
	Related  stringList `json:"related"`
	Broad    flexBool   `json:"broad"`
	Temporal flexBool   `json:"temporal"`
	Rule     flexBool   `json:"rule"`
}

// parseTags parses and strictly validates a tagging answer: 1..5 kebab-case
// tags (after canonical spelling and aliases), the primary among them and
// first, related tags disjoint from the tags.
func parseTags(text string, in tagging.Input) (tagging.Result, error) {
	raw, err := extractJSON(text)
	if err != nil {
		return tagging.Result{}, fmt.Errorf("tagging answer: %w: %w", err, ErrBadResponse)
	}
	var a tagAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return tagging.Result{}, fmt.Errorf("tagging answer: %v: %w", err, ErrBadResponse)
	}
	var tags []string
	seen := map[string]bool{}
	for _, s := range a.Tags {
		tag, ok := normalizeTag(s)
		if !ok {
			return tagging.Result{}, fmt.Errorf("tagging answer: tag %q is not kebab-case: %w", s, ErrBadResponse)
		}
		tag = canonical(tag, in.Aliases)
		if !seen[tag] {
			seen[tag] = true
			tags = append(tags, tag)
		}
	}
	// _general means "no topic": it never stands beside a real tag.
	if len(tags) > 1 && seen[tagging.General] {
		kept := tags[:0]
		for _, t := range tags {
			if t != tagging.General {
				kept = append(kept, t)
			}
		}
		tags = kept
		delete(seen, tagging.General)
	}
	if len(tags) == 0 {
		return tagging.Result{}, fmt.Errorf("tagging answer: no tags: %w", ErrBadResponse)
	}
	if len(tags) > 5 {
		return tagging.Result{}, fmt.Errorf("tagging answer: %d tags, at most 5: %w", len(tags), ErrBadResponse)
	}
	primary := tags[0]
	if strings.TrimSpace(a.Primary) != "" {
		p, ok := normalizeTag(a.Primary)
		if !ok {
			return tagging.Result{}, fmt.Errorf("tagging answer: primary %q is not kebab-case: %w", a.Primary, ErrBadResponse)
		}
		p = canonical(p, in.Aliases)
		if !seen[p] {
			if p == tagging.General && len(tags) > 0 {
				p = tags[0]
			} else {
				return tagging.Result{}, fmt.Errorf("tagging answer: primary %q is not among the tags %v: %w", p, tags, ErrBadResponse)
			}
		}
		primary = p
	}
	ordered := []string{primary}
	for _, t := range tags {
		if t != primary {
			ordered = append(ordered, t)
		}
	}
	var related []string
	for _, s := range a.Related {
		r, ok := normalizeTag(s)
		if !ok || r == tagging.General || seen[r] || seen[canonical(r, in.Aliases)] {
			continue // related tags only widen recall; a bad one is dropped, not fatal
		}
		seen[r] = true
		related = append(related, r)
		if len(related) == maxRelated {
			break
		}
	}
	return tagging.Result{
		Tags:     ordered,
		Primary:  primary,
		Related:  related,
		Broad:    bool(a.Broad),
		Temporal: bool(a.Temporal),
		Rule:     bool(a.Rule),
	}, nil
}
