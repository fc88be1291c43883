package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/vc-mcp/vc-mcp/prompts"
)

// Default thresholds for an over-broad tag: on at least DefaultSplitMinTurns
// turns and on more than DefaultSplitMaxShare of all turns.
const (
	DefaultSplitMinTurns = 40
	DefaultSplitMaxShare = 0.25
)

// ShouldSplit reports whether a tag on count of total turns is over-broad
// under the thresholds (zero values take the defaults).
func ShouldSplit(count, total, minTurns int, maxShare float64) bool {
	if minTurns <= 0 {
		minTurns = DefaultSplitMinTurns
	}
	if maxShare <= 0 {
		maxShare = DefaultSplitMaxShare
	}
	return total > 0 && count >= minTurns && float64(count)/float64(total) > maxShare
}

// SplitInput asks whether and how to split one over-broad tag.
type SplitInput struct {
	Tag          string
	Count, Total int
	// Vocabulary and Aliases are the conversation's tags; no new name may
	// collide with either.
	Vocabulary map[string]int
	Aliases    map[string]string
	// Samples are texts of turns carrying Tag (a spread across time).
	Samples []string
	// Thresholds shown to the model (zero: defaults).
	MinTurns int
	MaxShare float64
}

// Subtag is one narrower tag proposed by a split.
type Subtag struct {
	Tag         string
	Description string
	// Aliases to register: alias -> Tag.
	Aliases []string
}

// SplitResult is a validated split. When Split is false the tag stays whole.
type SplitResult struct {
	Split   bool
	Subtags []Subtag
	// Assignments maps an index into SplitInput.Samples to its new tag;
	// samples left out keep the parent tag.
	Assignments map[int]string
	Method      string
	Version     string
}

// maxSplitSample bounds one sample's text (runes).
const maxSplitSample = 600

// Split asks the model how to divide an over-broad tag into compound
// sub-tags. There is no deterministic fallback: on any failure it returns
// an error (the tag simply stays as it is) and counts the failure.
func (t *Tagger) Split(ctx context.Context, in SplitInput) (SplitResult, error) {
	if !t.health.allow() {
		return SplitResult{}, fmt.Errorf("llm split: %w", ErrCoolingDown)
	}
	res, err := t.split(ctx, in)
	if err != nil {
		if ctx.Err() == nil {
			t.health.fail(err)
		}
		return SplitResult{}, fmt.Errorf("llm split %q: %w", in.Tag, err)
	}
	t.health.ok()
	return res, nil
}

func (t *Tagger) split(ctx context.Context, in SplitInput) (SplitResult, error) {
	samples := make([]prompts.Sample, len(in.Samples))
	for i, s := range in.Samples {
		if r := []rune(s); len(r) > maxSplitSample {
			s = string(r[:maxSplitSample]) + " [...]"
		}
		samples[i] = prompts.Sample{N: i + 1, Text: s}
	}
	minTurns, maxShare := in.MinTurns, in.MaxShare
	if minTurns <= 0 {
		minTurns = DefaultSplitMinTurns
	}
	if maxShare <= 0 {
		maxShare = DefaultSplitMaxShare
	}
	p, err := prompts.Split(prompts.SplitData{
		Mode: t.mode, Tag: in.Tag, Count: in.Count, Total: in.Total,
		MinTurns: minTurns, MaxShare: maxShare,
		Vocabulary: vocabulary(in.Vocabulary, in.Aliases, maxVocab),
		Samples:    samples,
	})
	if err != nil {
		return SplitResult{}, err
	}
	resp, err := t.client.Complete(ctx, Request{
		System: p.System, Messages: []Message{{Role: "user", Content: p.User}},
		JSON: true, Purpose: p.Name,
	})
	if err != nil {
		return SplitResult{}, err
	}
	res, err := parseSplit(resp.Text, in, 5)
	if err != nil {
		return SplitResult{}, err
	}
	model := resp.Model
	if model == "" {
		model = t.client.cfg.Model
	}
	res.Method = "llm:" + t.client.cfg.Provider + "/" + model
	res.Version = p.Version
	return res, nil
}

type splitAnswer struct {
	Split   flexBool `json:"split"`
	Subtags []struct {
		Tag         string     `json:"tag"`
		Description string     `json:"description"`
		Aliases     stringList `json:"aliases"`
	} `json:"subtags"`
	Assignments map[string]string `json:"assignments"`
}

// parseSplit validates a split strictly: 2..maxSub new tags, each
// kebab-case, compound ("<parent>-..."), unique, and never an existing tag
// or alias. Aliases that collide are dropped; assignments to unknown tags
// or samples are dropped.
func parseSplit(text string, in SplitInput, maxSub int) (SplitResult, error) {
	raw, err := extractJSON(text)
	if err != nil {
		return SplitResult{}, fmt.Errorf("split answer: %w: %w", err, ErrBadResponse)
	}
	var a splitAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return SplitResult{}, fmt.Errorf("split answer: %v: %w", err, ErrBadResponse)
	}
	if !a.Split {
		return SplitResult{Split: false}, nil
	}
	if len(a.Subtags) < 2 || len(a.Subtags) > maxSub {
		return SplitResult{}, fmt.Errorf("split answer: %d sub-tags, want 2 to %d: %w", len(a.Subtags), maxSub, ErrBadResponse)
	}
	taken := func(name string) bool {
		if name == in.Tag {
			return true
		}
		if _, ok := in.Vocabulary[name]; ok {
			return true
		}
		_, ok := in.Aliases[name]
		return ok
	}
	used := map[string]bool{}
	var res SplitResult
	res.Split = true
	for _, st := range a.Subtags {
		name, ok := normalizeTag(st.Tag)
		switch {
		case !ok:
			return SplitResult{}, fmt.Errorf("split answer: sub-tag %q is not kebab-case: %w", st.Tag, ErrBadResponse)
		case !strings.HasPrefix(name, in.Tag+"-"):
			return SplitResult{}, fmt.Errorf("split answer: sub-tag %q is not a compound of %q: %w", name, in.Tag, ErrBadResponse)
		case taken(name):
			return SplitResult{}, fmt.Errorf("split answer: sub-tag %q reuses an existing name: %w", name, ErrBadResponse)
		case used[name]:
			return SplitResult{}, fmt.Errorf("split answer: sub-tag %q given twice: %w", name, ErrBadResponse)
		}
		used[name] = true
		res.Subtags = append(res.Subtags, Subtag{Tag: name, Description: truncateWords(st.Description, 20)})
	}
	for i, st := range a.Subtags {
		for _, al := range st.Aliases {
			alias, ok := normalizeTag(al)
			if !ok || taken(alias) || used[alias] {
				continue
			}
			used[alias] = true
			res.Subtags[i].Aliases = append(res.Subtags[i].Aliases, alias)
		}
	}
	res.Assignments = map[int]string{}
	keys := make([]string, 0, len(a.Assignments))
	for k := range a.Assignments {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n, err := strconv.Atoi(strings.TrimSpace(k))
		if err != nil || n < 1 || n > len(in.Samples) {
			continue
		}
		tag, ok := normalizeTag(a.Assignments[k])
		if !ok || !isSubtag(res.Subtags, tag) {
			continue
		}
		res.Assignments[n-1] = tag
	}
	return res, nil
}

func isSubtag(subs []Subtag, tag string) bool {
	for _, s := range subs {
		if s.Tag == tag {
			return true
		}
	}
	return false
}
