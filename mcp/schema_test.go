package mcp

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

var update = flag.Bool("update", false, "rewrite golden files and the README tools table")

func TestToolSnapshots(t *testing.T) {
	for _, st := range tools(newFakeMemory(), slog.New(slog.DiscardHandler)) {
		t.Run(st.Tool.Name, func(t *testing.T) {
			got, err := json.MarshalIndent(st.Tool, "", "  ")
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "tools", st.Tool.Name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run go test ./mcp -update): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("tool %s drifted from %s (run go test ./mcp -update if intended):\ngot:\n%s", st.Tool.Name, path, got)
			}
		})
	}
}

func TestToolAnnotationsExplicit(t *testing.T) {
	readOnly := map[string]bool{"recall_context": true, "find_quote": true, "domain_status": true, "list_context_items": true, "read_log": true}
	for _, st := range tools(newFakeMemory(), slog.New(slog.DiscardHandler)) {
		a := st.Tool.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: every annotation must be set explicitly, got %+v", st.Tool.Name, a)
			continue
		}
		if got, want := *a.ReadOnlyHint, readOnly[st.Tool.Name]; got != want {
			t.Errorf("%s readOnlyHint: got %v, want %v", st.Tool.Name, got, want)
		}
		if got, want := *a.DestructiveHint, st.Tool.Name == "forget"; got != want {
			t.Errorf("%s destructiveHint: got %v, want %v", st.Tool.Name, got, want)
		}
		if *a.OpenWorldHint {
			t.Errorf("%s: got openWorld true, want false", st.Tool.Name)
		}
	}
}

// TestSchemaShapes checks what a generator would get wrong: content is a
// string or an array of objects (not an array of bytes), optional integers
// are plain integers with their ranges.
func TestSchemaShapes(t *testing.T) {
	var compact struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(compactInputSchema(), &compact); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(compact.Required, ","), "messages"; got != want {
		t.Errorf("compact_context required: got %q, want %q", got, want)
	}
	var messages struct {
		MinItems int `json:"minItems"`
		MaxItems int `json:"maxItems"`
		Items    struct {
			Properties map[string]struct {
				AnyOf []struct {
					Type  string `json:"type"`
					Items struct {
						Type string `json:"type"`
					} `json:"items"`
				} `json:"anyOf"`
				Enum []string `json:"enum"`
			} `json:"properties"`
			Required []string `json:"required"`
		} `json:"items"`
	}
	if err := json.Unmarshal(compact.Properties["messages"], &messages); err != nil {
		t.Fatal(err)
	}
	if messages.MinItems != 1 || messages.MaxItems != 1000 {
		t.Errorf("messages items: got %d..%d, want 1..1000", messages.MinItems, messages.MaxItems)
	}
	content := messages.Items.Properties["content"].AnyOf
	if len(content) != 3 || content[0].Type != "string" || content[1].Type != "array" || content[1].Items.Type != "object" {
		t.Errorf("content schema: got %+v, want string | array of objects | null", content)
	}
	if got, want := strings.Join(messages.Items.Properties["role"].Enum, ","), "user,assistant,system,tool"; got != want {
		t.Errorf("role enum: got %q, want %q", got, want)
	}
	if got, want := strings.Join(messages.Items.Required, ","), "role"; got != want {
		t.Errorf("message required: got %q, want %q", got, want)
	}
	var recall struct {
		Properties map[string]struct {
			Type    any `json:"type"`
			Minimum int `json:"minimum"`
			Maximum int `json:"maximum"`
			Default any `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(recallInputSchema(), &recall); err != nil {
		t.Fatal(err)
	}
	mt := recall.Properties["max_tokens"]
	if mt.Type != "integer" || mt.Minimum != 100 || mt.Maximum != 32000 || mt.Default != 2000.0 {
		t.Errorf("max_tokens schema: got %+v, want integer 100..32000 default 2000", mt)
	}
}

// TestConversationIDSchemaMatchesTheServer: an id the published schema
// takes is one the server takes, and the reverse: "" is the default space
// for every tool but forget, which wants the space named. ("." and ".."
// match the pattern and are refused by the server alone: a pattern
// without lookahead cannot say it.)
func TestConversationIDSchemaMatchesTheServer(t *testing.T) {
	type idSchema struct {
		Properties map[string]struct {
			Pattern   string `json:"pattern"`
			MinLength *int   `json:"minLength"`
			MaxLength *int   `json:"maxLength"`
		} `json:"properties"`
	}
	schemaTakes := func(raw []byte, id string) bool {
		var s idSchema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		p := s.Properties["conversation_id"]
		if p.MinLength != nil && len(id) < *p.MinLength || p.MaxLength != nil && len(id) > *p.MaxLength {
			return false
		}
		return regexp.MustCompile(p.Pattern).MatchString(id)
	}
	ids := []string{"", "a", "Chat", "a:b", "proj-1.v2_x", strings.Repeat("x", 128), strings.Repeat("x", 129), "../x", "a/b", "a b", "é", "a%3Ab"}
	for _, id := range ids {
		args, _ := json.Marshal(map[string]any{"conversation_id": id, "messages": []map[string]string{{"role": "user", "content": "hi"}}})
		_, err := decodeCompact(args)
		if got, want := schemaTakes(compactInputSchema(), id), err == nil; got != want {
			t.Errorf("compact_context %q: schema takes it %v, server %v (%v)", id, got, want, err)
		}
		args, _ = json.Marshal(map[string]any{"conversation_id": id, "query": "hi"})
		_, err = decodeForget(args)
		if got, want := schemaTakes(forgetInputSchema(), id), err == nil; got != want {
			t.Errorf("forget %q: schema takes it %v, server %v (%v)", id, got, want, err)
		}
	}
}

const (
	readmeStart = "<!-- tools:start (generated by go test ./mcp -run TestREADME -update) -->"
	readmeEnd   = "<!-- tools:end -->"
)

// TestREADME keeps the README's tools table generated from the tool
// definitions.
func TestREADME(t *testing.T) {
	path := filepath.Join("..", "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	start := bytes.Index(readme, []byte(readmeStart))
	end := bytes.Index(readme, []byte(readmeEnd))
	if start < 0 || end < start {
		t.Fatalf("README.md lacks the markers %q ... %q", readmeStart, readmeEnd)
	}
	table := toolsTable(t)
	var out bytes.Buffer
	out.Write(readme[:start+len(readmeStart)])
	out.WriteString("\n" + table)
	out.Write(readme[end:])
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(out.Bytes(), readme) {
		t.Errorf("README tools table drifted from the code; run go test ./mcp -run TestREADME -update\nwant:\n%s", table)
	}
}

func toolsTable(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| Tool | Arguments (* = required) | Hints | What it does |\n|---|---|---|---|\n")
	for _, st := range tools(newFakeMemory(), slog.New(slog.DiscardHandler)) {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(st.Tool.RawInputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		req := map[string]bool{}
		for _, r := range schema.Required {
			req[r] = true
		}
		names := make([]string, 0, len(schema.Properties))
		for n := range schema.Properties {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			if req[names[i]] != req[names[j]] {
				return req[names[i]]
			}
			return names[i] < names[j]
		})
		args := make([]string, len(names))
		for i, n := range names {
			args[i] = "`" + n + "`"
			if req[n] {
				args[i] += "*"
			}
		}
		desc, _, _ := strings.Cut(st.Tool.Description, ". ")
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s. |\n", st.Tool.Name, strings.Join(args, ", "), hints(st.Tool.Annotations), strings.TrimSuffix(desc, "."))
	}
	return b.String()
}

func hints(a mcpgo.ToolAnnotation) string {
	var h []string
	if *a.ReadOnlyHint {
		h = append(h, "read-only")
	} else {
		h = append(h, "writes")
	}
	if *a.IdempotentHint {
		h = append(h, "idempotent")
	}
	if *a.DestructiveHint {
		h = append(h, "destructive")
	} else {
		h = append(h, "non-destructive")
	}
	if !*a.OpenWorldHint {
		h = append(h, "closed-world")
	}
	return strings.Join(h, ", ")
}
