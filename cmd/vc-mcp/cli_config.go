package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

func configCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "check the config file",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf(cmd, "want a subcommand: validate")
		},
	}
	var file string
	var asJSON bool
	validate := &cobra.Command{
		Use:   "validate [--config FILE]",
		Short: "check a config file: syntax, unknown keys and bad values, with line numbers",
		Long: "Check a YAML config file as serve would read it and list every problem as FILE:LINE: message. " +
			"Without --config, the file VC_CONFIG names or the default one. Exit status 1 when there is a problem.",
		Args: exactArgs(0, ""),
	}
	validate.Flags().StringVar(&file, "config", "", "the config `FILE` (default: VC_CONFIG, else ~/.config/vc-mcp/config.yaml)")
	validate.Flags().BoolVar(&asJSON, "json", false, "print {file, ok, errors: [{line, message}]} as JSON")
	validate.RunE = func(cmd *cobra.Command, _ []string) error {
		if file == "" {
			file = os.Getenv("VC_CONFIG")
		}
		if file == "" {
			file = defaultConfigFile()
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("config validate: %w", err)
		}
		errs := validateConfig(data, filepath.Dir(file))
		if len(errs) == 0 {
			// The keys are fine one by one; check them together (e.g. soft
			// below hard threshold) as serve would, without env or flags.
			if _, err := resolveSettings(map[string]string{"config": file, "data_dir": os.TempDir()}, func(string) string { return "" }); err != nil {
				errs = append(errs, lineError{msg: strings.TrimPrefix(err.Error(), "config file "+file+": ")})
			}
		}
		out := cmd.OutOrStdout()
		if asJSON {
			type problem struct {
				Line    int    `json:"line,omitempty"`
				Message string `json:"message"`
			}
			res := struct {
				File   string    `json:"file"`
				OK     bool      `json:"ok"`
				Errors []problem `json:"errors"`
			}{File: file, OK: len(errs) == 0, Errors: []problem{}}
			for _, e := range errs {
				var le lineError
				if errors.As(e, &le) {
					res.Errors = append(res.Errors, problem{le.line, le.msg})
				} else {
					res.Errors = append(res.Errors, problem{0, e.Error()})
				}
			}
			if err := writeJSON(out, res); err != nil {
				return err
			}
		} else if len(errs) == 0 {
			fmt.Fprintf(out, "%s: ok\n", file)
		} else {
			for _, e := range errs {
				var le lineError
				if errors.As(e, &le) && le.line > 0 {
					fmt.Fprintf(out, "%s:%d: %s\n", file, le.line, le.msg)
				} else {
					fmt.Fprintf(out, "%s: %v\n", file, e)
				}
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s: %d problem(s)", file, len(errs))
		}
		return nil
	}
	cmd.AddCommand(validate)
	return cmd
}

func presetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func initCommand() *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "init PRESET [--out FILE]",
		Short: "write a commented starter config for a preset",
		Long: "Write a starter config file for a preset (" + strings.Join(presetNames(), ", ") + "), every setting explained, " +
			"to --out (default: the default config file; - for standard output). An existing file is kept unless --force.",
		Args: exactArgs(1, "PRESET"),
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "where to write (`FILE`; default ~/.config/vc-mcp/config.yaml; - for standard output)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		name := args[0]
		if _, ok := presets[name]; !ok {
			return usageErrorf(cmd, "unknown preset %q (one of %s)", name, strings.Join(presetNames(), ", "))
		}
		text := starterConfig(name)
		if out == "-" {
			_, err := io.WriteString(cmd.OutOrStdout(), text)
			return err
		}
		if out == "" {
			out = defaultConfigFile()
		}
		if out == "" {
			return errors.New("init: no default config location on this system; give --out FILE")
		}
		if _, err := os.Stat(out); err == nil && !force {
			return fmt.Errorf("init: %s exists; keep it, or overwrite it with --force", out)
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		if err := writeFileAtomic(out, func(w io.Writer) error {
			_, err := io.WriteString(w, text)
			return err
		}); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (preset %s); check it with: vc-mcp config validate --config %s\n", out, name, out)
		return nil
	}
	return cmd
}

// starterConfig is the commented config file `init` writes for a preset.
func starterConfig(name string) string {
	p := presets[name]
	var b strings.Builder
	fmt.Fprintf(&b, "# vc-mcp configuration, preset %s: %s.\n", name, p.about)
	b.WriteString("# Precedence: flags > VC_* environment > this file > preset > defaults.\n")
	b.WriteString("# Check it with `vc-mcp config validate --config FILE`; every key is in the README.\n\n")
	fmt.Fprintf(&b, "preset: %s\n\n", name)
	b.WriteString("# The preset sets these; uncomment one to change it.\n")
	fmt.Fprintf(&b, "# context_window: %d      # the client model's window, cl100k tokens\n", p.window)
	fmt.Fprintf(&b, "# soft_threshold: %.2f       # compaction starts at this fraction of the window\n", p.soft)
	fmt.Fprintf(&b, "# hard_threshold: %.2f       # and always runs from this one\n", p.hard)
	fmt.Fprintf(&b, "# protected_turns: %d          # most recent turns never compacted\n\n", p.protected)
	if p.llmProvider != "" {
		fmt.Fprintf(&b, "# LLM for tagging and summaries (%s).\n", p.llm)
		fmt.Fprintf(&b, "llm_provider: %s\n", p.llmProvider)
		fmt.Fprintf(&b, "llm_model: %s\n", p.llmModel)
		if p.llmKeyEnv != "" {
			fmt.Fprintf(&b, "llm_api_key_env: %s   # the name of the variable, never the key\n", p.llmKeyEnv)
		}
		b.WriteString("\n")
	} else {
		b.WriteString("# LLM for tagging and summaries; without one, keyword tagging and extractive\n")
		b.WriteString("# summaries (no network). E.g. openai, anthropic, ollama, or sampling (the host's model).\n")
		b.WriteString("# llm_provider: ollama\n# llm_model: llama3.2:3b\n\n")
	}
	b.WriteString("# Tagging.\n")
	b.WriteString("# min_tags_per_turn: 1\n# max_tags_per_turn: 5\n")
	b.WriteString("# keyword_tags:                 # a turn that mentions a keyword gets the tag\n")
	b.WriteString("#   database: [postgres, pgx, sql]\n")
	b.WriteString("# split_min_turns: 40           # over-broad tags are split (with an LLM) past\n")
	b.WriteString("# split_max_share: 0.25         # this many turns and this share of the conversation\n")
	b.WriteString("# max_splits_per_turn: 1\n\n")
	b.WriteString("# Rules per topic (fnmatch patterns over tags; the highest priority match wins).\n")
	b.WriteString("# tag_rules:\n")
	b.WriteString("#   - match: \"project-*\"\n#     priority: 10              # comes first in recalled context\n")
	b.WriteString("#   - match: \"scratch-*\"\n#     ttl_days: 30              # kept this long\n")
	b.WriteString("#     summary_prompt: \"Keep only decisions and open questions.\"\n\n")
	b.WriteString("# Recall.\n")
	b.WriteString("# context_hint_max_tokens: 0    # cap on the topics-on-record list (0 = no cap)\n\n")
	b.WriteString("# Context windows by model name (prefix or glob), over the built-in table;\n")
	b.WriteString("# the proxy sizes each request's window with it.\n")
	if strings.HasPrefix(name, "ollama") {
		fmt.Fprintf(&b, "model_context_limits:\n  \"llama3.2*\": %d            # Ollama serves num_ctx, not the model's maximum\n", p.window)
	} else {
		b.WriteString("# model_context_limits:\n#   \"my-finetune-*\": 32000\n")
	}
	return b.String()
}
