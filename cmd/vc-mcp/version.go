package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// commit is set at build time with -ldflags "-X main.commit=<sha>"; otherwise
// it comes from the Go toolchain's VCS stamp, when there is one.
var commit = ""

// buildInfo is what `vc-mcp version --json` prints.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func currentBuild() buildInfo {
	bi := buildInfo{Version: buildVersion(), Commit: commit, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi.Commit == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					bi.Commit = s.Value
				}
			}
		}
	}
	if bi.Commit == "" {
		bi.Commit = "unknown"
	}
	return bi
}

func runVersion(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print version, commit, Go version, OS and architecture as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vc-mcp version: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	bi := currentBuild()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(bi)
	}
	_, err := fmt.Fprintf(stdout, "vc-mcp %s (commit %s, %s, %s/%s)\n", bi.Version, bi.Commit, bi.Go, bi.OS, bi.Arch)
	return err
}
