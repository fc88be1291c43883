package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestServeHelpGolden: `vc-mcp serve -h` lists every setting with its whole
// description; backquoted words stay words. The golden file is rewritten
// with -update.
func TestServeHelpGolden(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"serve", "-h"}, strings.NewReader(""), &stdout, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("serve -h: got %v, want flag.ErrHelp (exit 0)", err)
	}
	got := stderr.Bytes()
	golden := filepath.Join("testdata", "serve-help.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/vc-mcp -run TestServeHelpGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("serve -h drifted from %s (rerun with -update if intended):\n%s", golden, got)
	}
	for _, k := range settingKeys {
		if k.decode != nil {
			if strings.Contains(string(got), k.name) {
				t.Errorf("serve -h lists %s, which only the config file sets", k.name)
			}
			continue
		}
		if !strings.Contains(string(got), "--"+k.flag+" ") && !strings.Contains(string(got), "--"+k.flag+"\n") {
			t.Errorf("serve -h lacks --%s", k.flag)
		}
	}
	// The description of --http goes past its "e.g." and names no argument
	// after a backquoted word.
	for _, want := range []string{"(e.g. 127.0.0.1:5757) instead of stdio", "--http ADDR\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("serve -h lacks %q", want)
		}
	}
}

// TestEveryCommandHelp: `vc-mcp COMMAND -h` and `vc-mcp help COMMAND` print
// a usage and exit 0 for every command and subcommand.
func TestEveryCommandHelp(t *testing.T) {
	root := newRootCommand(strings.NewReader(""), io.Discard, io.Discard)
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" {
				continue
			}
			p := append(append([]string(nil), path...), sub.Name())
			paths = append(paths, p)
			walk(sub, p)
		}
	}
	walk(root, nil)
	if len(paths) < 20 {
		t.Fatalf("only %d commands found: %v", len(paths), paths)
	}
	for _, p := range paths {
		for _, args := range [][]string{append(append([]string(nil), p...), "-h"), append([]string{"help"}, p...)} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var out, errb bytes.Buffer
				err := run(t.Context(), args, strings.NewReader(""), &out, &errb)
				if err != nil && !errors.Is(err, flag.ErrHelp) {
					t.Fatalf("got %v, want exit 0\n%s", err, errb.String())
				}
				text := out.String() + errb.String()
				if !strings.Contains(strings.ToLower(text), "usage") || strings.Contains(text, "%!") {
					t.Errorf("no usage, or a formatting slip:\n%s", text)
				}
			})
		}
	}
}
