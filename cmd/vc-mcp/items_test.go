package main

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

const itemsYAML = `context_items:
  - name: house style
    type: rule
    text: Answer in British English.
    priority: 1
  - name: api guide
    type: reference
    description: The public API
    file: docs/api.md
    include: agent
context_top_n: 3
context_min_score: 0
`

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestContextItemsConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, itemsYAML)
	writeFile(t, filepath.Join(dir, "docs", "api.md"), "GET /v1/items lists items.")
	listFile := filepath.Join(dir, "items.yaml")
	writeFile(t, listFile, "- {name: tone, type: rule, text: Be brief., include: manual}\n")
	mapFile := filepath.Join(dir, "items-map.yaml")
	writeFile(t, mapFile, "context_items:\n  - {name: tone, type: rule, text: Be brief., include: manual}\n")
	bad := func(name, body string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, body)
		return p
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(s settings) string
	}{
		{"inline list with a file", []string{"--config", cfg}, "", func(s settings) string {
			if len(s.ContextItems) != 2 || s.ContextItems[0].Include != memory.IncludeAlways || s.ContextItems[1].Text != "GET /v1/items lists items." {
				return "items"
			}
			if s.ContextSearch.TopN != 3 || s.ContextSearch.TopK != 20 || s.ContextSearch.MinScore != math.SmallestNonzeroFloat64 || s.ContextSearch.IncludeScore != 0.7 {
				return "search parameters"
			}
			return ""
		}},
		{"flag: a file holding the list", []string{"--config", "", "--context-items", listFile}, "", func(s settings) string {
			if len(s.ContextItems) != 1 || s.ContextItems[0].Name != "tone" || s.ContextItems[0].Include != memory.IncludeManual {
				return "items"
			}
			return ""
		}},
		{"flag: a file with context_items", []string{"--config", "", "--context-items", mapFile}, "", func(s settings) string {
			if len(s.ContextItems) != 1 {
				return "items"
			}
			return ""
		}},
		{"none", []string{"--config", ""}, "", func(s settings) string {
			if len(s.ContextItems) != 0 {
				return "items"
			}
			return ""
		}},
		{"unknown item key", []string{"--config", bad("k.yaml", "context_items:\n  - {name: a, type: rule, txt: x}\n")}, `field txt not found`, nil},
		{"text and file", []string{"--config", bad("tf.yaml", "context_items:\n  - {name: a, type: rule, text: x, file: y}\n")}, `item 1 ("a"): give text or file, not both`, nil},
		{"missing file", []string{"--config", bad("mf.yaml", "context_items:\n  - {name: a, type: rule, file: nope.md}\n")}, `item 1 ("a"): file: open`, nil},
		{"bad include", []string{"--config", bad("bi.yaml", "context_items:\n  - {name: a, type: rule, text: x, include: often}\n")}, `context_items (from config file`, nil},
		{"duplicate", []string{"--config", bad("du.yaml", "context_items:\n  - {name: a, type: rule, text: x}\n  - {name: A, type: reference, text: y}\n")}, `context item 2 ("A"): name already used by context item 1`, nil},
		{"not a list", []string{"--config", bad("nl.yaml", "context_items: 3\n")}, `context_items`, nil},
		{"bad top_k", []string{"--config", "", "--context-top-k", "0"}, "context_top_k (from flag --context-top-k): must be between 1 and 1000", nil},
		{"bad score", []string{"--config", "", "--context-include-score", "1.5"}, "context_include_score (from flag --context-include-score): must be a number from 0 to 1", nil},
		{"zero share", []string{"--config", "", "--context-share", "0"}, "context_share (from flag --context-share): must be above 0", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "VC_DATA_DIR" {
					return "/d"
				}
				return ""
			}
			s, _, err := loadConfig("serve", tt.args, getenv, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(s); msg != "" {
				t.Errorf("%s: got %+v %+v", msg, s.ContextItems, s.ContextSearch)
			}
		})
	}
}

// TestContextItemsBinary runs the built binary over stdio with a config
// holding context items: the always item is in recall, a manual one can be
// added, and the request history says why the agent item was left out.
func TestContextItemsBinary(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, `context_items:
  - {name: house style, type: rule, text: Answer in British English., priority: 1}
  - {name: api guide, type: reference, file: docs/api.md, include: agent}
  - {name: deploys, type: rule, text: Deploy on Tuesdays only., include: manual}
`)
	writeFile(t, filepath.Join(dir, "docs", "api.md"), "GET /v1/items lists items.")
	data := filepath.Join(dir, "data")
	s := startStdio(t, data, "--config", cfg)
	mustOK(t, s.c, "compact_context", map[string]any{"messages": []any{msg("user", "The cat is called Miso.")}})
	res := mustOK(t, s.c, "recall_context", map[string]any{"message": "what is the cat called?"})
	if got := text(res); !strings.HasPrefix(got, "# Context items\n## Rule: house style\nAnswer in British English.") || strings.Contains(got, "api guide") {
		t.Errorf("recall:\n%s", got)
	}
	mustOK(t, s.c, "add_context_item", map[string]any{"name": "deploys"})
	if got := text(mustOK(t, s.c, "recall_context", map[string]any{"message": "what is the cat called?"})); !strings.Contains(got, "Deploy on Tuesdays only.") {
		t.Errorf("after add_context_item:\n%s", got)
	}
	var rec memory.RecallResult
	structured(t, res, &rec)
	found := false
	for _, d := range rec.ContextItems {
		if d.Name == "api guide" {
			found = !d.Included && d.Reason == memory.ReasonBelowMin
		}
	}
	if !found {
		t.Errorf("api guide should be recorded as below_min_score: %+v", rec.ContextItems)
	}
}
