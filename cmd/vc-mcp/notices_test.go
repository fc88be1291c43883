package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// THIRD_PARTY_NOTICES.md lists every module linked into the vc-mcp binary with
// its licence text, and the data the binary embeds. It is generated from the
// build graph so it cannot drift: a new dependency without a recognised
// licence fails this test.
//
//	go test ./cmd/vc-mcp -run TestThirdPartyNotices -update

const noticesFile = "THIRD_PARTY_NOTICES.md"

// noticesHeader covers what is embedded besides Go code.
const noticesHeader = `# Third-party notices

vc-mcp is licensed under the Apache License 2.0 (see LICENSE). The vc-mcp binary
contains the third-party software listed below; each is distributed under its own
licence, reproduced here. This file is generated from the build graph by
` + "`go test ./cmd/vc-mcp -run TestThirdPartyNotices -update`" + `; do not edit it by hand.

## Embedded data

- **cl100k_base BPE ranks** (token counting), from OpenAI's tiktoken (MIT License,
  Copyright (c) 2022 OpenAI, Shantanu Jain), embedded through
  github.com/pkoukk/tiktoken-go-loader (MIT, below).
- **Prompt templates** (` + "`prompts/templates`" + `): written for vc-mcp, Apache-2.0.
- **No model weights** are embedded. all-MiniLM-L6-v2 (sentence-transformers,
  Apache-2.0), when installed by ` + "`make model`" + ` or ` + "`vc-mcp model pull`" + `, stays a separate file
  under its own licence.

## Go modules
`

// licenceKinds recognises a licence text. Order matters: the first match wins.
var licenceKinds = []struct {
	id string
	re *regexp.Regexp
}{
	{"Apache-2.0", regexp.MustCompile(`(?s)Apache License.{0,40}Version 2\.0`)},
	{"MPL-2.0", regexp.MustCompile(`Mozilla Public License,? [vV]ersion 2\.0`)},
	{"BSD-3-Clause", regexp.MustCompile(`(?is)Redistribution and use in source and binary forms.*Neither the name`)},
	{"BSD-2-Clause", regexp.MustCompile(`(?is)Redistribution and use in source and binary forms`)},
	{"MIT", regexp.MustCompile(`(?i)Permission is hereby granted, free of charge`)},
	{"ISC", regexp.MustCompile(`(?i)Permission to use, copy, modify, and/?or distribute this software`)},
}

type linkedModule struct {
	Path, Version, Dir string
}

func linkedModules(t *testing.T) []linkedModule {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f",
		`{{with .Module}}{{if not .Main}}{{.Path}}|{{.Version}}|{{.Dir}}{{end}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	seen := map[string]bool{}
	var mods []linkedModule
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" || seen[line] {
			continue
		}
		seen[line] = true
		p := strings.SplitN(line, "|", 3)
		if len(p) != 3 {
			t.Fatalf("go list line %q", line)
		}
		mods = append(mods, linkedModule{p[0], p[1], p[2]})
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods
}

// licenceFiles are the files of a module that carry its terms.
func licenceFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		n := strings.ToUpper(e.Name())
		if e.Type().IsRegular() && (strings.HasPrefix(n, "LICENSE") || strings.HasPrefix(n, "LICENCE") ||
			strings.HasPrefix(n, "COPYING") || n == "NOTICE" || n == "PATENTS") {
			files = append(files, e.Name())
		}
	}
	sort.Strings(files)
	return files, nil
}

func classify(text string) string {
	for _, k := range licenceKinds {
		if k.re.MatchString(text) {
			return k.id
		}
	}
	return ""
}

func renderNotices(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(noticesHeader)
	mods := linkedModules(t)
	if len(mods) == 0 {
		t.Fatal("go list found no linked modules")
	}
	b.WriteString("\n| Module | Version | Licence |\n|---|---|---|\n")
	type body struct{ name, text string }
	bodies := make([][]body, len(mods))
	for i, m := range mods {
		files, err := licenceFiles(m.Dir)
		if err != nil || len(files) == 0 {
			t.Fatalf("module %s@%s has no licence file in %s (%v): vet its licence before depending on it", m.Path, m.Version, m.Dir, err)
		}
		var ids []string
		for _, f := range files {
			raw, err := os.ReadFile(filepath.Join(m.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			text := strings.TrimSpace(strings.ReplaceAll(string(raw), "\r\n", "\n"))
			if id := classify(text); id != "" && !contains(ids, id) {
				ids = append(ids, id)
			}
			bodies[i] = append(bodies[i], body{f, text})
		}
		if len(ids) == 0 {
			t.Fatalf("module %s@%s: licence not recognised (%v); add its kind to licenceKinds after checking it allows redistribution", m.Path, m.Version, files)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", m.Path, m.Version, strings.Join(ids, ", "))
	}
	for i, m := range mods {
		fmt.Fprintf(&b, "\n### %s %s\n", m.Path, m.Version)
		for _, f := range bodies[i] {
			fmt.Fprintf(&b, "\n%s:\n\n```text\n%s\n```\n", f.name, f.text)
		}
	}
	return b.Bytes()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestThirdPartyNotices(t *testing.T) {
	got := renderNotices(t)
	path := filepath.Join("..", "..", noticesFile)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go test ./cmd/vc-mcp -run TestThirdPartyNotices -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date with the build graph: run go test ./cmd/vc-mcp -run TestThirdPartyNotices -update", noticesFile)
	}
}

func TestClassifyLicences(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"apache", "                                 Apache License\n                           Version 2.0, January 2004", "Apache-2.0"},
		{"mit", "MIT License\n\nPermission is hereby granted, free of charge, to any person", "MIT"},
		{"bsd3", "Redistribution and use in source and binary forms, with or without\n... * Neither the name of Google Inc.", "BSD-3-Clause"},
		{"bsd2", "Redistribution and use in source and binary forms, with or without modification", "BSD-2-Clause"},
		{"unknown", "All rights reserved. Do not copy.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.text); got != tt.want {
				t.Errorf("classify(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

// TestServerJSON checks server.json (the MCP Registry entry) against the
// registry's published schema, vendored under testdata/registry with its
// licence, and keeps its version in step with the CHANGELOG's latest release.
func TestServerJSON(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateServerJSON(raw); err != nil {
		t.Fatalf("server.json does not validate against the registry schema: %v", err)
	}
	var doc struct {
		Version  string `json:"version"`
		Packages []struct {
			Version   string `json:"version"`
			Transport struct {
				Type string `json:"type"`
			} `json:"transport"`
			PackageArguments []struct {
				Value string `json:"value"`
			} `json:"packageArguments"`
			EnvironmentVariables []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"environmentVariables"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	changelog, err := os.ReadFile(filepath.Join("..", "..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[?v?(\d+\.\d+\.\d+[^\]\s]*)\]?`).FindSubmatch(changelog)
	if m == nil {
		t.Fatal("CHANGELOG.md has no release heading like '## [0.2.0] - 2026-11-23'")
	}
	if doc.Version != string(m[1]) {
		t.Errorf("server.json version %q, CHANGELOG's latest release %q: keep them in step", doc.Version, m[1])
	}
	if len(doc.Packages) == 0 {
		t.Fatal("server.json lists no package")
	}
	settings := map[string]bool{}
	for _, k := range settingKeys {
		settings[k.env] = true
	}
	for _, p := range doc.Packages {
		if p.Version != doc.Version {
			t.Errorf("package version %q, server version %q", p.Version, doc.Version)
		}
		if p.Transport.Type != "stdio" {
			t.Errorf("package transport %q, want stdio", p.Transport.Type)
		}
		if len(p.PackageArguments) == 0 || p.PackageArguments[0].Value != "serve" {
			t.Errorf("package arguments %+v, want the serve command first", p.PackageArguments)
		}
		for _, e := range p.EnvironmentVariables {
			if !settings[e.Name] {
				t.Errorf("server.json names %s, which is not a vc-mcp setting", e.Name)
			}
			if e.Description == "" {
				t.Errorf("%s has no description", e.Name)
			}
		}
	}
}

func TestServerJSONSchemaRejects(t *testing.T) {
	tests := []struct {
		name, doc string
	}{
		{"no name", `{"description":"d","version":"1.0.0"}`},
		{"bad name", `{"name":"no-slash","description":"d","version":"1.0.0"}`},
		{"latest package", `{"name":"io.github.a/b","description":"d","version":"1.0.0","packages":[{"registryType":"mcpb","identifier":"https://x/y.mcpb","version":"latest","transport":{"type":"stdio"}}]}`},
		{"long description", `{"name":"io.github.a/b","description":"` + strings.Repeat("x", 101) + `","version":"1.0.0"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := validateServerJSON([]byte(tt.doc)); err == nil {
				t.Errorf("schema accepted %s", tt.doc)
			}
		})
	}
}
