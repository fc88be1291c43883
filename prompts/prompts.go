package prompts

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"text/template"
)

// Mode selects how much guidance a prompt gives.
type Mode string

const (
	// Detailed gives full guidance; the default.
	Detailed Mode = "detailed"
	// Simple gives short instructions for small or fast models.
	Simple Mode = "simple"
)

// ParseMode turns a configuration value into a Mode; "" means Detailed.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", string(Detailed):
		return Detailed, nil
	case string(Simple):
		return Simple, nil
	}
	return "", fmt.Errorf("prompt mode %q: want %q or %q: %w", s, Simple, Detailed, ErrInvalid)
}

// ErrInvalid reports data a template cannot be rendered from.
var ErrInvalid = errors.New("invalid prompt data")

// Template revisions. Bump one whenever its template's text changes, so
// stored summaries made with the old text can be found and regenerated.
const (
	TagVersion     = "tag/v1"
	SegmentVersion = "segment/v1"
	RollupVersion  = "rollup/v1"
	SplitVersion   = "split/v1"
	TurnVersion    = "turn/v1"
	ReplaceVersion = "replace/v1"
)

// Prompt is a rendered prompt: a system message and one user message.
type Prompt struct {
	// Name is the template's name ("tag", "segment", ...).
	Name string
	// Version is the template revision and mode, e.g. "segment/v1+detailed".
	Version string
	System  string
	User    string
}

// VocabEntry is one tag already in use, with how many turns carry it.
type VocabEntry struct {
	Tag     string
	Count   int
	Aliases []string
}

// Turn is one original turn shown to the model.
type Turn struct {
	Role    string
	Speaker string
	// Time is already formatted (RFC 3339 or ""); templates do not format times.
	Time string
	Text string
}

// TagData renders the turn-tagging prompt.
type TagData struct {
	Mode    Mode
	Text    string
	Role    string
	Speaker string
	// Vocabulary is the conversation's tags, most used first.
	Vocabulary []VocabEntry
	// Previous are the previous turn's tags.
	Previous []string
	// MaxTags bounds the tags asked for (default 5).
	MaxTags int
}

// SegmentData renders the segment (Layer 1) summary prompt.
type SegmentData struct {
	Mode Mode
	// Tag is the segment's primary tag; Tags all its tags.
	Tag   string
	Tags  []string
	Turns []Turn
	// MaxWords bounds the summary (default 150).
	MaxWords int
	// Instructions, when set, replace the default guidance on what to keep
	// (a tag rule's custom summary prompt). The output contract stays.
	Instructions string
}

// RollupData renders the tag (Layer 2) rollup prompt.
type RollupData struct {
	Mode Mode
	Tag  string
	Tags []string
	// Segments are the Layer 1 summaries, oldest first.
	Segments []string
	// MaxWords bounds the summary (default 250); DescriptionWords the
	// one-line description (default and maximum 80).
	MaxWords         int
	DescriptionWords int
	Instructions     string
}

// Sample is one numbered turn excerpt carrying the tag being split.
type Sample struct {
	N    int
	Text string
}

// SplitData renders the over-broad tag splitting prompt.
type SplitData struct {
	Mode Mode
	Tag  string
	// Count of Total turns carry Tag.
	Count, Total int
	// MinTurns and MaxShare are the thresholds that made Tag a candidate:
	// at least MinTurns turns and more than MaxShare (0..1) of all turns.
	MinTurns int
	MaxShare float64
	// Vocabulary holds every existing tag: none of them may be reused.
	Vocabulary []VocabEntry
	Samples    []Sample
	// MaxSubtags bounds the split (default 5).
	MaxSubtags int
}

// TurnData renders the context-aware summary of one long turn (seed 003).
type TurnData struct {
	Mode    Mode
	Role    string
	Speaker string
	Text    string
	// Previous and Next are the neighbouring messages ("" at the ends).
	Previous, PreviousRole string
	Next, NextRole         string
	// MaxWords bounds the summary (default 120).
	MaxWords     int
	Instructions string
}

// ReplaceData renders the summary that replaces the earlier part of a
// conversation (summary-replacement mode, seed 001): the messages it stands
// in for, and the note an earlier replacement left, if any.
type ReplaceData struct {
	Mode     Mode
	Messages []Turn
	// Previous is the note of an earlier replacement found among the
	// messages being replaced ("" for none); the new note folds it in.
	Previous string
	// MaxWords bounds the note (default 400).
	MaxWords int
	// Instructions, when set, replace the default guidance (the
	// summary_prompt or simple_prompt setting). The output contract stays.
	Instructions string
}

// Detailed reports whether the full guidance is wanted. Templates call it.
func (d TagData) Detailed() bool     { return d.Mode != Simple }
func (d SegmentData) Detailed() bool { return d.Mode != Simple }
func (d RollupData) Detailed() bool  { return d.Mode != Simple }
func (d SplitData) Detailed() bool   { return d.Mode != Simple }
func (d TurnData) Detailed() bool    { return d.Mode != Simple }
func (d ReplaceData) Detailed() bool { return d.Mode != Simple }

//go:embed templates/*.tmpl
var files embed.FS

var funcs = template.FuncMap{
	"join": strings.Join,
	"quote": func(s []string) string {
		q := make([]string, len(s))
		for i, v := range s {
			q[i] = fmt.Sprintf("%q", v)
		}
		return strings.Join(q, ", ")
	},
	"percent": func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	"share": func(n, total int) string {
		if total <= 0 {
			return "0%"
		}
		return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(total))
	},
}

// parsed holds one template set per file, parsed once on first use. Each
// file defines "system" and "user".
var parsed = sync.OnceValues(func() (map[string]*template.Template, error) {
	out := make(map[string]*template.Template)
	for _, name := range []string{"tag", "segment", "rollup", "split", "turn", "replace"} {
		t, err := template.New(name).Funcs(funcs).Option("missingkey=error").ParseFS(files, "templates/"+name+".tmpl")
		if err != nil {
			return nil, fmt.Errorf("parse template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
})

func render(name, version string, mode Mode, data any) (Prompt, error) {
	sets, err := parsed()
	if err != nil {
		return Prompt{}, err
	}
	if mode == "" {
		mode = Detailed
	}
	if mode != Simple && mode != Detailed {
		return Prompt{}, fmt.Errorf("%s prompt: mode %q: %w", name, mode, ErrInvalid)
	}
	t := sets[name]
	var sys, usr bytes.Buffer
	if err := t.ExecuteTemplate(&sys, "system", data); err != nil {
		return Prompt{}, fmt.Errorf("render %s system prompt: %w", name, err)
	}
	if err := t.ExecuteTemplate(&usr, "user", data); err != nil {
		return Prompt{}, fmt.Errorf("render %s user prompt: %w", name, err)
	}
	return Prompt{
		Name:    name,
		Version: version + "+" + string(mode),
		System:  tidy(sys.String()),
		User:    tidy(usr.String()),
	}, nil
}

// tidy trims the blank lines template actions leave behind: no leading or
// trailing blank lines and never two blank lines in a row.
func tidy(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	out := make([]string, 0, len(lines))
	blank := false
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			if blank {
				continue
			}
			blank = true
		} else {
			blank = false
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n") + "\n"
}

// Tag renders the turn-tagging prompt.
func Tag(d TagData) (Prompt, error) {
	if strings.TrimSpace(d.Text) == "" {
		return Prompt{}, fmt.Errorf("tag prompt: empty turn text: %w", ErrInvalid)
	}
	if d.MaxTags <= 0 || d.MaxTags > 5 {
		d.MaxTags = 5
	}
	return render("tag", TagVersion, d.Mode, d)
}

// Segment renders the segment summary prompt.
func Segment(d SegmentData) (Prompt, error) {
	if len(d.Turns) == 0 {
		return Prompt{}, fmt.Errorf("segment prompt: no turns: %w", ErrInvalid)
	}
	if d.MaxWords <= 0 {
		d.MaxWords = 150
	}
	return render("segment", SegmentVersion, d.Mode, d)
}

// Rollup renders the tag rollup prompt.
func Rollup(d RollupData) (Prompt, error) {
	if len(d.Segments) == 0 {
		return Prompt{}, fmt.Errorf("rollup prompt: no segment summaries: %w", ErrInvalid)
	}
	if d.Tag == "" {
		return Prompt{}, fmt.Errorf("rollup prompt: no tag: %w", ErrInvalid)
	}
	if d.MaxWords <= 0 {
		d.MaxWords = 250
	}
	if d.DescriptionWords <= 0 || d.DescriptionWords > 80 {
		d.DescriptionWords = 80
	}
	return render("rollup", RollupVersion, d.Mode, d)
}

// Split renders the over-broad tag splitting prompt.
func Split(d SplitData) (Prompt, error) {
	if d.Tag == "" || len(d.Samples) == 0 {
		return Prompt{}, fmt.Errorf("split prompt: need a tag and sample turns: %w", ErrInvalid)
	}
	if d.MaxSubtags < 2 || d.MaxSubtags > 8 {
		d.MaxSubtags = 5
	}
	return render("split", SplitVersion, d.Mode, d)
}

// TurnSummary renders the context-aware summary of one long turn.
func TurnSummary(d TurnData) (Prompt, error) {
	if strings.TrimSpace(d.Text) == "" {
		return Prompt{}, fmt.Errorf("turn prompt: empty turn text: %w", ErrInvalid)
	}
	if d.MaxWords <= 0 {
		d.MaxWords = 120
	}
	return render("turn", TurnVersion, d.Mode, d)
}

// Replace renders the prompt for the note that replaces the earlier part
// of a conversation.
func Replace(d ReplaceData) (Prompt, error) {
	if len(d.Messages) == 0 && strings.TrimSpace(d.Previous) == "" {
		return Prompt{}, fmt.Errorf("replace prompt: no messages: %w", ErrInvalid)
	}
	if d.MaxWords <= 0 {
		d.MaxWords = 400
	}
	return render("replace", ReplaceVersion, d.Mode, d)
}
