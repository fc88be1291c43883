package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Context items (seed 002) come from the config file as a list, or from a
// YAML file named by --context-items / VC_CONTEXT_ITEMS. Settings are
// strings until applied, so a list from the config file travels as YAML
// behind inlineItemsMark, with the directory its `file:` paths are
// relative to.
const inlineItemsMark = "\x00inline-context-items\x00"

// itemYAML is one context item as written in YAML.
type itemYAML struct {
	Name        string `yaml:"name"`
	Type        string `yaml:"type"`
	Description string `yaml:"description"`
	Text        string `yaml:"text"`
	File        string `yaml:"file"`
	Priority    int    `yaml:"priority"`
	Include     string `yaml:"include"`
}

// inlineItemsNode is inlineItems for a list read as a YAML node, from a
// config file in dir.
func inlineItemsNode(n *yaml.Node, dir string) (string, error) {
	b, err := yaml.Marshal(n)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return inlineItemsMark + abs + "\n" + string(b), nil
}

func setContextItems(c *settings, v string) error {
	c.ContextItems = nil
	var data []byte
	var base string
	switch {
	case strings.TrimSpace(v) == "":
		return nil
	case strings.HasPrefix(v, inlineItemsMark):
		rest := strings.TrimPrefix(v, inlineItemsMark)
		base, rest, _ = strings.Cut(rest, "\n")
		data = []byte(rest)
	default:
		b, err := os.ReadFile(v)
		if err != nil {
			return fmt.Errorf("read the context items file: %w", err)
		}
		abs, err := filepath.Abs(v)
		if err != nil {
			return err
		}
		data, base = b, filepath.Dir(abs)
		// A file may hold the list itself or a mapping with context_items.
		var doc struct {
			Items yaml.Node `yaml:"context_items"`
		}
		if yaml.Unmarshal(b, &doc) == nil && doc.Items.Kind == yaml.SequenceNode {
			if data, err = yaml.Marshal(&doc.Items); err != nil {
				return fmt.Errorf("%s: %w", v, err)
			}
		}
	}
	var raw []itemYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("must be a list of {name, type, include, priority, description, text or file}: %w", err)
	}
	items := make([]memory.ContextItem, 0, len(raw))
	for i, r := range raw {
		where := fmt.Sprintf("item %d", i+1)
		if r.Name != "" {
			where = fmt.Sprintf("item %d (%q)", i+1, r.Name)
		}
		text := r.Text
		switch {
		case r.Text != "" && r.File != "":
			return fmt.Errorf("%s: give text or file, not both", where)
		case r.File != "":
			p := r.File
			if !filepath.IsAbs(p) {
				p = filepath.Join(base, p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return fmt.Errorf("%s: file: %w", where, err)
			}
			text = string(b)
		}
		include := r.Include
		if include == "" {
			include = memory.IncludeAlways
		}
		items = append(items, memory.ContextItem{Type: r.Type, Name: r.Name, Description: r.Description,
			Text: text, Priority: r.Priority, Include: include})
	}
	if err := memory.ValidateContextItems(items); err != nil {
		// memory's "invalid argument: " prefix says nothing here: the key is named.
		return errors.New(strings.TrimPrefix(err.Error(), memory.ErrInvalid.Error()+": "))
	}
	c.ContextItems = items
	return nil
}

// scoreSetter accepts a number from 0 to 1 (0 excluded when positive is
// set). memory takes 0 for "the default", so an explicit 0 becomes the
// smallest positive score: no threshold.
func scoreSetter(field func(*settings) *float64, positive bool) func(*settings, string) error {
	return func(c *settings, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		switch {
		case err != nil || f < 0 || f > 1:
			return fmt.Errorf("must be a number from 0 to 1, got %q", v)
		case f == 0 && positive:
			return fmt.Errorf("must be above 0, got %q", v)
		case f == 0:
			f = math.SmallestNonzeroFloat64
		}
		*field(c) = f
		return nil
	}
}
