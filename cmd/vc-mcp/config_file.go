package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vc-mcp/vc-mcp/memory/llm"
	"github.com/vc-mcp/vc-mcp/memory/modelctx"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// configFile is a parsed YAML config file: the scalar settings as strings
// (lists joined with commas), the YAML-only keys as nodes, and the line of
// each key.
type configFile struct {
	scalars map[string]string
	nodes   map[string]*yaml.Node
	lines   map[string]int
}

// lineError is a config file problem at a line (0: the file as a whole).
type lineError struct {
	line int
	msg  string
}

func (e lineError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("line %d: %s", e.line, e.msg)
	}
	return e.msg
}

func lineErrorf(n *yaml.Node, format string, args ...any) error {
	return lineError{line: n.Line, msg: fmt.Sprintf(format, args...)}
}

// readConfigFile reads the YAML file. A missing file is an error only
// when it was asked for explicitly.
func readConfigFile(path string, explicit bool) (configFile, error) {
	if path == "" {
		return configFile{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !explicit {
			return configFile{}, nil
		}
		return configFile{}, fmt.Errorf("config file: %w", err)
	}
	f, errs := parseConfigFile(data, filepath.Dir(path))
	if len(errs) > 0 {
		return f, fmt.Errorf("config file %s: %w (vc-mcp config validate --config %s lists every problem)", path, errs[0], path)
	}
	return f, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseConfigFile splits a config file into keys, checking that each is a
// known one of the right shape. It returns every problem found.
// dir is the file's directory: context items' file: paths are relative
// to it.
func parseConfigFile(data []byte, dir string) (configFile, []error) {
	f := configFile{scalars: map[string]string{}, nodes: map[string]*yaml.Node{}, lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			return f, []error{lineError{line: n, msg: m[2]}}
		}
		return f, []error{lineError{msg: msg}}
	}
	if len(doc.Content) == 0 {
		return f, nil // an empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return f, []error{lineErrorf(root, "want a map of settings (key: value), got %s", kindName(root))}
	}
	keys := map[string]settingKey{}
	for _, k := range settingKeys {
		keys[k.name] = k
	}
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		kn, vn := root.Content[i], root.Content[i+1]
		name := kn.Value
		k, ok := keys[name]
		if !ok || name == "config" {
			errs = append(errs, lineErrorf(kn, "unknown key %q%s (see the configuration table in the README)", name, didYouMean(name)))
			continue
		}
		if _, dup := f.lines[name]; dup {
			errs = append(errs, lineErrorf(kn, "%s is set twice (first at line %d)", name, f.lines[name]))
			continue
		}
		f.lines[name] = kn.Line
		if k.decode != nil {
			f.nodes[name] = vn
			continue
		}
		if name == "context_items" && vn.Kind == yaml.SequenceNode {
			// A list of maps: handed to setContextItems whole (items.go).
			v, err := inlineItemsNode(vn, dir)
			if err != nil {
				errs = append(errs, lineErrorf(vn, "context_items: %v", err))
				continue
			}
			f.scalars[name] = v
			continue
		}
		switch vn.Kind {
		case yaml.ScalarNode:
			if vn.Tag != "!!null" {
				f.scalars[name] = vn.Value
			}
		case yaml.SequenceNode:
			parts := make([]string, 0, len(vn.Content))
			for _, e := range vn.Content {
				if e.Kind != yaml.ScalarNode {
					errs = append(errs, lineErrorf(e, "%s: want a list of plain values", name))
					break
				}
				parts = append(parts, e.Value)
			}
			f.scalars[name] = strings.Join(parts, ",")
		default:
			errs = append(errs, lineErrorf(vn, "%s must be a single value, not a %s", name, kindName(vn)))
		}
	}
	return f, errs
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "map"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return "value"
}

// didYouMean names the known key closest to an unknown one.
func didYouMean(name string) string {
	best, bestD := "", 3
	for _, k := range settingKeys {
		if d := editDistance(name, k.name); d < bestD {
			best, bestD = k.name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// validateConfig checks every key of a config file, as `serve` would read
// it, and returns every problem with its line.
func validateConfig(data []byte, dir string) []error {
	f, errs := parseConfigFile(data, dir)
	var c settings
	for _, k := range settingKeys {
		line := f.lines[k.name]
		if n := f.nodes[k.name]; n != nil {
			if err := k.decode(&c, n); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if v, ok := f.scalars[k.name]; ok && k.set != nil {
			if err := k.set(&c, v); err != nil {
				errs = append(errs, lineError{line: line, msg: fmt.Sprintf("%s: %v", k.name, err)})
			}
		}
	}
	sort.SliceStable(errs, func(i, j int) bool {
		var a, b lineError
		errors.As(errs[i], &a)
		errors.As(errs[j], &b)
		return a.line < b.line
	})
	return errs
}

// tagRuleYAML is one entry of tag_rules.
type tagRuleYAML struct {
	Match         string `yaml:"match"`
	Priority      int    `yaml:"priority"`
	TTLDays       int    `yaml:"ttl_days"`
	SummaryPrompt string `yaml:"summary_prompt"`
}

func decodeTagRules(c *settings, n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return lineErrorf(n, "tag_rules: want a list of {match, priority, ttl_days, summary_prompt}, got a %s", kindName(n))
	}
	var rules []llm.TagRule
	for _, item := range n.Content {
		if item.Kind != yaml.MappingNode {
			return lineErrorf(item, "tag_rules: each rule is a map of match, priority, ttl_days, summary_prompt; got a %s", kindName(item))
		}
		for i := 0; i < len(item.Content); i += 2 {
			switch key := item.Content[i]; key.Value {
			case "match", "priority", "ttl_days", "summary_prompt":
			default:
				return lineErrorf(key, "tag_rules: unknown field %q (want match, priority, ttl_days, summary_prompt)", key.Value)
			}
		}
		var r tagRuleYAML
		if err := item.Decode(&r); err != nil {
			return lineErrorf(item, "tag_rules: %v", yamlMessage(err))
		}
		switch {
		case strings.TrimSpace(r.Match) == "":
			return lineErrorf(item, "tag_rules: every rule needs match, a tag pattern such as db-*")
		case !modelctx.ValidPattern(r.Match):
			return lineErrorf(item, "tag_rules: match %q is not a valid pattern (use * ? and [a-z])", r.Match)
		case r.TTLDays < 0:
			return lineErrorf(item, "tag_rules: ttl_days must be 0 (keep forever) or more, got %d", r.TTLDays)
		}
		rules = append(rules, llm.TagRule{Pattern: r.Match, Priority: r.Priority, TTLDays: r.TTLDays, SummaryPrompt: r.SummaryPrompt})
	}
	c.TagRules = rules
	return nil
}

func decodeKeywordTags(c *settings, n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return lineErrorf(n, "keyword_tags: want a map of tag -> list of keywords, got a %s", kindName(n))
	}
	out := map[string][]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		tag := tagging.Canonicalize(kn.Value, nil)
		if tag == "" {
			return lineErrorf(kn, "keyword_tags: %q is not usable as a tag (use letters, digits and -)", kn.Value)
		}
		var words []string
		switch vn.Kind {
		case yaml.ScalarNode:
			words = splitList(vn.Value)
		case yaml.SequenceNode:
			for _, e := range vn.Content {
				if e.Kind != yaml.ScalarNode {
					return lineErrorf(e, "keyword_tags: %s: want a list of keywords", kn.Value)
				}
				words = append(words, e.Value)
			}
		default:
			return lineErrorf(vn, "keyword_tags: %s: want a list of keywords, got a %s", kn.Value, kindName(vn))
		}
		if len(words) == 0 {
			return lineErrorf(vn, "keyword_tags: %s has no keywords", kn.Value)
		}
		out[tag] = append(out[tag], words...)
	}
	c.KeywordTags = out
	return nil
}

func decodeModelLimits(c *settings, n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return lineErrorf(n, "model_context_limits: want a map of model name -> tokens, got a %s", kindName(n))
	}
	out := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if !modelctx.ValidPattern(kn.Value) {
			return lineErrorf(kn, "model_context_limits: %q is not a model name or pattern", kn.Value)
		}
		tokens, err := strconv.Atoi(strings.ReplaceAll(vn.Value, "_", ""))
		if vn.Kind != yaml.ScalarNode || err != nil || tokens < 1000 || tokens > 10_000_000 {
			return lineErrorf(vn, "model_context_limits: %s: want a number of tokens between 1000 and 10000000, got %q", kn.Value, vn.Value)
		}
		out[kn.Value] = tokens
	}
	c.ModelContextLimits = out
	return nil
}

// yamlMessage drops yaml's prefix from a decode error.
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	return strings.TrimSpace(strings.ReplaceAll(msg, "\n", "; "))
}
