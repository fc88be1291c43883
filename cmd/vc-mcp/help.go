package main

import (
	"fmt"
	"io"
	"strings"
)

// helpWidth is where help text wraps.
const helpWidth = 78

// printSettingsFlags lists the settings as flags, each with its whole
// description (backquotes dropped), its environment variable and default.
// flag.PrintDefaults would take a backquoted word for the argument's name.
func printSettingsFlags(w io.Writer) {
	for _, k := range settingKeys {
		if k.decode != nil {
			continue // config file only
		}
		head := "  --" + k.flag
		if !k.isBool {
			head += " " + argName(k)
		}
		fmt.Fprintln(w, head)
		meta := "env " + k.env
		switch def := k.def(); {
		case k.name == "config" || k.name == "data_dir":
			// Per user; the description says where.
		case def != "":
			meta += ", default " + def
		}
		writeWrapped(w, "      ", plainHelp(k.help)+" ("+meta+")")
	}
}

// argName names a setting's value in the usage.
func argName(k settingKey) string {
	switch {
	case strings.HasSuffix(k.name, "_dir") || k.name == "markdown_mirror":
		return "DIR"
	case strings.HasSuffix(k.name, "_file") || k.name == "config" || k.name == "scrub_rules":
		return "FILE"
	case strings.HasSuffix(k.name, "_ttl"):
		return "DURATION"
	case strings.HasSuffix(k.name, "_threshold") || strings.HasSuffix(k.name, "_share"):
		return "FRACTION"
	case strings.HasSuffix(k.name, "_bytes") || strings.HasSuffix(k.name, "_turns") ||
		strings.HasSuffix(k.name, "_window") || strings.HasSuffix(k.name, "_per_turn") ||
		strings.HasSuffix(k.name, "_tokens") || strings.HasPrefix(k.name, "max_"):
		return "N"
	case k.name == "http":
		return "ADDR"
	case k.name == "llm_base_url":
		return "URL"
	case k.name == "allow_origins" || k.name == "scrub_allow":
		return "LIST"
	case k.name == "log_level":
		return "LEVEL"
	case k.name == "llm_api_key_env":
		return "VAR"
	case k.name == "preset" || k.name == "default_conversation" || strings.HasPrefix(k.name, "llm_"):
		return "NAME"
	default:
		return "VALUE"
	}
}

// plainHelp is help text for a terminal: Markdown code quotes dropped.
func plainHelp(s string) string { return strings.ReplaceAll(s, "`", "") }

// writeWrapped writes text in lines of at most helpWidth columns, each
// starting with indent.
func writeWrapped(w io.Writer, indent, text string) {
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > helpWidth {
			fmt.Fprintln(w, line)
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		fmt.Fprintln(w, line)
	}
}
