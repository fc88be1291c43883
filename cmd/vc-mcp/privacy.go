package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"

	"gopkg.in/yaml.v3"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/scrub"
)

// scrubRulesFile is the YAML of the scrub_rules setting.
type scrubRulesFile struct {
	Extra []scrub.Extra `yaml:"extra"`
	Allow []string      `yaml:"allow"`
}

// scrubberFor builds the secret scrubber of the scrub, scrub_allow and
// scrub_rules settings.
func scrubberFor(cfg settings) (memory.Scrubber, error) {
	if !cfg.Scrub {
		return scrub.Off(), nil
	}
	var opts scrub.Options
	for _, v := range cfg.ScrubAllow {
		opts.Allow = append(opts.Allow, regexp.QuoteMeta(v))
	}
	if cfg.ScrubRules != "" {
		b, err := os.ReadFile(cfg.ScrubRules)
		if err != nil {
			return nil, fmt.Errorf("scrub_rules: %w", err)
		}
		var f scrubRulesFile
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("scrub_rules %s: %w (want extra: [{name, pattern}] and allow: [regexp])", cfg.ScrubRules, err)
		}
		opts.Extra, opts.Allow = f.Extra, append(opts.Allow, f.Allow...)
	}
	s, err := scrub.New(opts)
	if err != nil {
		return nil, fmt.Errorf("scrub_rules %s: %w", cfg.ScrubRules, err)
	}
	return s, nil
}
