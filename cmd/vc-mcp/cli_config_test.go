package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runIn(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(t.Context(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

// TestConfigValidate: every problem of a file, each with its line.
func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, text string
		want       []string // lines of output, in order; nil = ok
	}{
		{"good", "preset: coding\nlog_level: debug\ntag_rules:\n  - match: \"db-*\"\n    priority: 5\n    ttl_days: 30\nkeyword_tags:\n  database: [postgres, pgx]\nmodel_context_limits:\n  my-model: 32000\n", nil},
		{"bad values", "preset: huge\nsoft_threshold: 2\nlog_level: loud\nmax_tags_per_turn: 9\n", []string{
			`:1: preset: unknown preset "huge"`, ":2: soft_threshold: must be a fraction between 0 and 1", ":3: log_level: must be debug, info, warn or error", ":4: max_tags_per_turn: must be between 1 and 5"}},
		{"unknown keys", "data_dir: /tmp/x\ncontext_windw: 5\nfrobnicate: true\n", []string{
			`:2: unknown key "context_windw" (did you mean "context_window"?)`, `:3: unknown key "frobnicate"`}},
		{"shapes", "scrub_allow: {a: b}\ntag_rules:\n  - priority: 3\nkeyword_tags: [a, b]\nmodel_context_limits:\n  gpt-x: lots\n", []string{
			":1: scrub_allow must be a single value, not a map", ":3: tag_rules: every rule needs match", ":4: keyword_tags: want a map", `:6: model_context_limits: gpt-x: want a number of tokens`}},
		{"syntax", "preset: chat\nlog_level: debug: loud\n", []string{":2: mapping values are not allowed"}},
		{"together", "soft_threshold: 0.9\nhard_threshold: 0.8\n", []string{": soft_threshold (0.90) must be below hard_threshold (0.80)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(tt.name+".yaml", tt.text)
			out, _, err := runIn(t, "config", "validate", "--config", p)
			if tt.want == nil {
				if err != nil || out != p+": ok\n" {
					t.Fatalf("got %q, %v; want ok", out, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error; output %q", out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(lines), len(tt.want), out)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], p+w) {
					t.Errorf("problem %d: got %q, want it to start with %q", i, lines[i], p+w)
				}
			}
		})
	}
	// --json for scripts.
	p := write("json.yaml", "soft_threshold: 2\n")
	out, _, err := runIn(t, "config", "validate", "--config", p, "--json")
	var res struct {
		OK     bool `json:"ok"`
		Errors []struct {
			Line    int    `json:"line"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err == nil || json.Unmarshal([]byte(out), &res) != nil || res.OK || len(res.Errors) != 1 || res.Errors[0].Line != 1 {
		t.Errorf("--json: %v %s", err, out)
	}
}

// TestInitPresets: every preset's starter config validates, loads with the
// preset's values, and is not overwritten without --force.
func TestInitPresets(t *testing.T) {
	dir := t.TempDir()
	for _, name := range presetNames() {
		p := filepath.Join(dir, name, "config.yaml")
		if out, _, err := runIn(t, "init", name, "--out", p); err != nil || !strings.Contains(out, "wrote "+p) {
			t.Fatalf("init %s: %v %q", name, err, out)
		}
		if out, _, err := runIn(t, "config", "validate", "--config", p); err != nil {
			t.Fatalf("init %s wrote a config that does not validate: %v\n%s", name, err, out)
		}
		cfg, err := resolveSettings(map[string]string{"config": p, "data_dir": dir}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		pv := presets[name]
		if cfg.Preset != name || cfg.ContextWindow != pv.window || cfg.ProtectedTurns != pv.protected || cfg.LLMProvider != pv.llmProvider || cfg.LLMModel != pv.llmModel {
			t.Errorf("init %s: loaded %+v, want the preset's window %d, protected %d, llm %s/%s", name, cfg, pv.window, pv.protected, pv.llmProvider, pv.llmModel)
		}
		_, stderr, err := runIn(t, "init", "chat", "--out", p)
		if err == nil || !strings.Contains(err.Error(), "--force") {
			t.Errorf("init over an existing file: %v %q, want a refusal naming --force", err, stderr)
		}
		if _, _, err := runIn(t, "init", "chat", "--out", p, "--force"); err != nil {
			t.Errorf("init --force: %v", err)
		}
	}
	if _, stderr, err := runIn(t, "init", "nosuch", "--out", "-"); !errors.Is(err, errUsage) || !strings.Contains(stderr, `unknown preset "nosuch"`) {
		t.Errorf("unknown preset: %v %q", err, stderr)
	}
}

// TestConfigKeywordTags: keyword_tags, max_tags_per_turn and tag_rules
// from the YAML reach the engine: a stored turn gets the user's tag.
func TestConfigKeywordTags(t *testing.T) {
	env := childEnv(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("keyword_tags:\n  datastore: [postgres]\nmax_tags_per_turn: 2\ntag_rules:\n  - match: \"data*\"\n    priority: 9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	msgs := `[{"role":"user","content":"We moved the billing tables from MySQL to Postgres last spring, with Debezium streaming changes."}]`
	out := cliOK(t, env, msgs, "compact", "-i", "-", "--data-dir", dir, "--config", cfg, "--json")
	var ing struct {
		Tags []string `json:"tags"`
	}
	if err := json.Unmarshal([]byte(out), &ing); err != nil {
		t.Fatal(err)
	}
	if len(ing.Tags) == 0 || len(ing.Tags) > 2 || !strings.Contains(strings.Join(ing.Tags, ","), "datastore") {
		t.Errorf("tags %v: want datastore (keyword_tags) and at most 2 (max_tags_per_turn)", ing.Tags)
	}
	// Without the config the same turn gets more tags and not datastore.
	out = cliOK(t, env, msgs, "compact", "-i", "-", "--data-dir", t.TempDir(), "--json")
	if err := json.Unmarshal([]byte(out), &ing); err != nil {
		t.Fatal(err)
	}
	if len(ing.Tags) <= 2 || strings.Contains(strings.Join(ing.Tags, ","), "datastore") {
		t.Errorf("without the config: tags %v", ing.Tags)
	}
}
