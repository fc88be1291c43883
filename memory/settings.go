package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/vc-mcp/vc-mcp/internal/files"
)

// settingsFile holds the settings changed at run time (UpdateSettings), in
// the data directory, so that a restart keeps them.
const settingsFile = "runtime-settings.json"

// HintStyle is the form of the topics hint at the end of a recall.
type HintStyle string

const (
	// HintAuto picks HintShort or HintDashboard from the client's model
	// name (see HintStyleFor).
	HintAuto HintStyle = "auto"
	// HintShort lists the topics, one line each with a short description:
	// for small models, which a table of figures distracts.
	HintShort HintStyle = "short"
	// HintDashboard is a budget dashboard: tokens per topic (full and
	// summary), working-set depth, and the budget left.
	HintDashboard HintStyle = "dashboard"
)

// ParseHintStyle checks a configuration value; "" means HintAuto.
func ParseHintStyle(s string) (HintStyle, error) {
	switch HintStyle(strings.ToLower(strings.TrimSpace(s))) {
	case "", HintAuto:
		return HintAuto, nil
	case HintShort:
		return HintShort, nil
	case HintDashboard:
		return HintDashboard, nil
	}
	return "", fmt.Errorf("%w: context_hint_style must be auto, short or dashboard, got %q", ErrInvalid, clip(s, 40))
}

// Settings are the settings that may change while the store is open (the
// REST API's /api/config): compaction thresholds, summary replacement and
// the topics hint. Store.Settings reads them; Store.UpdateSettings changes
// them, for every later call, and keeps the change across restarts.
type Settings struct {
	// SoftThreshold and HardThreshold are fractions of the context window
	// at which memory compacts turns into topic summaries.
	SoftThreshold float64 `json:"soft_threshold"`
	HardThreshold float64 `json:"hard_threshold"`
	// ProtectedTurns are the most recent turns compaction never touches.
	ProtectedTurns int `json:"protected_turns"`
	// Enabled switches summary replacement (CompactMessages) on; off, the
	// messages come back unchanged (still stored). Memory's own compaction
	// into topic summaries is not affected.
	Enabled bool `json:"enabled"`
	// KeepLast is how many of the latest messages summary replacement
	// keeps verbatim after the summary.
	KeepLast int `json:"keep_last"`
	// UseSimplePrompt asks the summariser for the short prompt.
	UseSimplePrompt bool `json:"use_simple_prompt"`
	// NotifyUser adds a one-line notice for the user to a replacement.
	NotifyUser bool `json:"notify_user"`
	// SummaryPrompt and SimplePrompt replace the built-in guidance of the
	// detailed and the simple prompt ("" = built in).
	SummaryPrompt string `json:"summary_prompt"`
	SimplePrompt  string `json:"simple_prompt"`
	// HintStyle is the form of the topics hint.
	HintStyle HintStyle `json:"context_hint_style"`
}

// SettingsPatch changes some Settings; nil fields are left as they are.
type SettingsPatch struct {
	SoftThreshold   *float64   `json:"soft_threshold,omitempty"`
	HardThreshold   *float64   `json:"hard_threshold,omitempty"`
	ProtectedTurns  *int       `json:"protected_turns,omitempty"`
	Enabled         *bool      `json:"enabled,omitempty"`
	KeepLast        *int       `json:"keep_last,omitempty"`
	UseSimplePrompt *bool      `json:"use_simple_prompt,omitempty"`
	NotifyUser      *bool      `json:"notify_user,omitempty"`
	SummaryPrompt   *string    `json:"summary_prompt,omitempty"`
	SimplePrompt    *string    `json:"simple_prompt,omitempty"`
	HintStyle       *HintStyle `json:"context_hint_style,omitempty"`
}

// Limits of Settings.
const (
	MaxKeepLast       = 1000
	MaxProtectedTurns = 10_000
	MaxPromptBytes    = 8 << 10
)

// apply returns s with p's fields set.
func (p SettingsPatch) apply(s Settings) Settings {
	setIfGiven(&s.SoftThreshold, p.SoftThreshold)
	setIfGiven(&s.HardThreshold, p.HardThreshold)
	setIfGiven(&s.ProtectedTurns, p.ProtectedTurns)
	setIfGiven(&s.Enabled, p.Enabled)
	setIfGiven(&s.KeepLast, p.KeepLast)
	setIfGiven(&s.UseSimplePrompt, p.UseSimplePrompt)
	setIfGiven(&s.NotifyUser, p.NotifyUser)
	setIfGiven(&s.SummaryPrompt, p.SummaryPrompt)
	setIfGiven(&s.SimplePrompt, p.SimplePrompt)
	setIfGiven(&s.HintStyle, p.HintStyle)
	return s
}

// merge returns p with q's fields laid over it.
func (p SettingsPatch) merge(q SettingsPatch) SettingsPatch {
	overIfGiven(&p.SoftThreshold, q.SoftThreshold)
	overIfGiven(&p.HardThreshold, q.HardThreshold)
	overIfGiven(&p.ProtectedTurns, q.ProtectedTurns)
	overIfGiven(&p.Enabled, q.Enabled)
	overIfGiven(&p.KeepLast, q.KeepLast)
	overIfGiven(&p.UseSimplePrompt, q.UseSimplePrompt)
	overIfGiven(&p.NotifyUser, q.NotifyUser)
	overIfGiven(&p.SummaryPrompt, q.SummaryPrompt)
	overIfGiven(&p.SimplePrompt, q.SimplePrompt)
	overIfGiven(&p.HintStyle, q.HintStyle)
	return p
}

// setIfGiven sets *dst to *v when a patch gives v.
func setIfGiven[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// overIfGiven lays a patch field v over *dst when it is given.
func overIfGiven[T any](dst **T, v *T) {
	if v != nil {
		*dst = v
	}
}

// Validate checks every field; the error wraps ErrInvalid and names the
// setting, its allowed range and the value given.
func (s Settings) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	if !(s.SoftThreshold > 0 && s.SoftThreshold < 1) {
		bad("soft_threshold must be a fraction between 0 and 1 (e.g. 0.7), got %g", s.SoftThreshold)
	}
	if !(s.HardThreshold > 0 && s.HardThreshold < 1) {
		bad("hard_threshold must be a fraction between 0 and 1 (e.g. 0.85), got %g", s.HardThreshold)
	}
	if s.SoftThreshold >= s.HardThreshold {
		bad("soft_threshold (%g) must be below hard_threshold (%g)", s.SoftThreshold, s.HardThreshold)
	}
	if s.ProtectedTurns < 1 || s.ProtectedTurns > MaxProtectedTurns {
		bad("protected_turns must be between 1 and %d, got %d", MaxProtectedTurns, s.ProtectedTurns)
	}
	if s.KeepLast < 0 || s.KeepLast > MaxKeepLast {
		bad("keep_last must be between 0 and %d, got %d", MaxKeepLast, s.KeepLast)
	}
	for name, p := range map[string]string{"summary_prompt": s.SummaryPrompt, "simple_prompt": s.SimplePrompt} {
		if len(p) > MaxPromptBytes {
			bad("%s is %d bytes; the limit is %d", name, len(p), MaxPromptBytes)
		}
		if !utf8.ValidString(p) {
			bad("%s is not valid UTF-8", name)
		}
	}
	if s.HintStyle != HintAuto && s.HintStyle != HintShort && s.HintStyle != HintDashboard {
		bad("context_hint_style must be auto, short or dashboard, got %q", clip(string(s.HintStyle), 40))
	}
	if len(errs) == 0 {
		return nil
	}
	// Map iteration order must not change the message.
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	sort.Strings(msgs)
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(msgs, "; "))
}

// settingsBox owns the runtime settings: the ones from Options, with the
// changes made at run time laid over them and kept in settingsFile. Safe
// for concurrent use.
type settingsBox struct {
	path string
	mu   sync.RWMutex
	base Settings      // from Options
	over SettingsPatch // changed at run time (persisted)
	eff  Settings      // base with over applied
	last map[string]Replacement
}

func newSettingsBox(dir string, base Settings) *settingsBox {
	return &settingsBox{path: filepath.Join(dir, settingsFile), base: base, eff: base, last: map[string]Replacement{}}
}

// load reads the persisted changes. A file that cannot be used is reported
// and left alone: the configured settings apply until it is fixed or
// replaced by the next change.
func (b *settingsBox) load() error {
	data, err := os.ReadFile(b.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", b.path, err)
	}
	var p SettingsPatch
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("%s: %w (fix or delete it; the configured settings apply meanwhile)", b.path, err)
	}
	eff := p.apply(b.base)
	if err := eff.Validate(); err != nil {
		return fmt.Errorf("%s: %w (fix or delete it; the configured settings apply meanwhile)", b.path, err)
	}
	b.mu.Lock()
	b.over, b.eff = p, eff
	b.mu.Unlock()
	return nil
}

func (b *settingsBox) get() Settings {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.eff
}

// update validates base+over+p, persists over+p and applies it.
func (b *settingsBox) update(p SettingsPatch) (Settings, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	over := b.over.merge(p)
	eff := over.apply(b.base)
	if err := eff.Validate(); err != nil {
		return b.eff, err
	}
	data, err := json.MarshalIndent(over, "", "  ")
	if err != nil {
		return b.eff, fmt.Errorf("encode settings: %w", err)
	}
	if err := files.AtomicWrite(b.path, append(data, '\n')); err != nil {
		return b.eff, fmt.Errorf("%w: save settings: %w (nothing was changed)", ErrStorage, err)
	}
	b.over, b.eff = over, eff
	return eff, nil
}

// reset drops every run-time change.
func (b *settingsBox) reset() (Settings, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := os.Remove(b.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return b.eff, fmt.Errorf("%w: remove %s: %w", ErrStorage, b.path, err)
	}
	b.over, b.eff = SettingsPatch{}, b.base
	return b.eff, nil
}

func (b *settingsBox) overridden() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	data, _ := json.Marshal(b.over) // cannot fail: plain fields
	var m map[string]json.RawMessage
	_ = json.Unmarshal(data, &m)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (b *settingsBox) recordReplacement(conv string, r Replacement) {
	b.mu.Lock()
	b.last[conv] = r
	b.mu.Unlock()
}

func (b *settingsBox) lastReplacement(conv string) (Replacement, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	r, ok := b.last[conv]
	return r, ok
}

// Settings returns the settings in force.
func (s *Store) Settings() Settings { return s.set.get() }

// SettingsOverridden names the settings changed at run time (they override
// the configuration until ResetSettings).
func (s *Store) SettingsOverridden() []string { return s.set.overridden() }

// UpdateSettings changes some settings for every later call and keeps the
// change in the data directory, so a restart keeps it. An invalid result
// changes nothing and returns an error wrapping ErrInvalid that names each
// bad setting.
func (s *Store) UpdateSettings(p SettingsPatch) (Settings, error) {
	if s.closed.Load() {
		return Settings{}, ErrClosed
	}
	if err := s.refuseWrite(); err != nil {
		return Settings{}, err
	}
	st, err := s.set.update(p)
	if err == nil {
		s.log.Info("settings changed at run time", "overridden", s.set.overridden())
	}
	return st, err
}

// ResetSettings drops every change made at run time: the configured
// settings apply again.
func (s *Store) ResetSettings() (Settings, error) {
	if s.closed.Load() {
		return Settings{}, ErrClosed
	}
	if err := s.refuseWrite(); err != nil {
		return Settings{}, err
	}
	return s.set.reset()
}
