package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

type secretCase struct {
	Kind    string   `json:"kind"`
	Text    string   `json:"text"`
	Secrets []string `json:"secrets"`
}

func readJSONFile(t *testing.T, path string, dst any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// needles are the byte strings that must appear nowhere: each secret, and
// for multi-line secrets (PEM blocks) each long line of it, since a store
// could hold it JSON-escaped.
func needles(cases []secretCase) [][]byte {
	var out [][]byte
	for _, c := range cases {
		for _, s := range c.Secrets {
			out = append(out, []byte(s))
			for _, line := range strings.Split(s, "\n") {
				if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
					out = append(out, []byte(line))
				}
			}
		}
	}
	return out
}

var longWord = regexp.MustCompile(`[A-Za-z]{6,}`)

// TestSecretsNeverStored ingests a corpus of chat texts holding made-up
// credentials (as user text, assistant content blocks, tool call arguments
// and tool results) over MCP stdio, then checks that no secret is in any
// answer or any file under the data dir, while the words around them are
// still found.
func TestSecretsNeverStored(t *testing.T) {
	var cases []secretCase
	readJSONFile(t, filepath.Join("..", "..", "memory", "scrub", "testdata", "secrets.json"), &cases)
	var ordinary []string
	readJSONFile(t, filepath.Join("..", "..", "memory", "scrub", "testdata", "ordinary.json"), &ordinary)
	dir := t.TempDir()
	srv := startStdio(t, dir)
	c := srv.c
	const conv = "privacy"

	var answers []string
	record := func(res *mcpgo.CallToolResult) {
		b, _ := json.Marshal(res)
		answers = append(answers, string(b))
	}
	redacted := 0
	for i, sc := range cases {
		var m map[string]any
		switch i % 3 {
		case 0:
			m = msg("user", sc.Text)
		case 1:
			m = map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": sc.Text}},
				"tool_calls": []any{map[string]any{"id": "call1", "type": "function", "function": map[string]any{"name": "run", "arguments": `{"cmd":` + jsonString(sc.Text) + `}`}}}}
		default:
			m = map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "tu1", "content": sc.Text}}}
		}
		res := mustOK(t, c, "compact_context", map[string]any{"conversation_id": conv, "messages": []any{m}})
		record(res)
		var out struct {
			Redacted int      `json:"redacted"`
			Tags     []string `json:"tags"`
		}
		structured(t, res, &out)
		if out.Redacted < len(sc.Secrets) && !strings.Contains(sc.Kind, "private-key") {
			t.Errorf("%s: redacted %d, want at least %d", sc.Kind, out.Redacted, len(sc.Secrets))
		}
		redacted += out.Redacted
		for _, tag := range out.Tags {
			// Tags may be words of the text ("client-secret"), never a placeholder.
			if strings.Contains(tag, "secret:") || strings.ContainsAny(tag, "[]") {
				t.Errorf("%s: placeholder became tag %q", sc.Kind, tag)
			}
		}
	}
	if !strings.Contains(text(mustOK(t, c, "compact_context", map[string]any{"conversation_id": conv,
		"messages": []any{msg("user", cases[0].Text)}})), "Redacted") {
		t.Errorf("compact_context reply does not say it redacted")
	}
	// Ordinary technical text is stored untouched.
	var batch []any
	for _, l := range ordinary {
		batch = append(batch, msg("user", l))
	}
	res := mustOK(t, c, "compact_context", map[string]any{"conversation_id": conv, "messages": batch, "force": true})
	var ob struct {
		Redacted int `json:"redacted"`
		Stored   int `json:"stored"`
	}
	structured(t, res, &ob)
	if ob.Redacted != 0 || ob.Stored != len(ordinary) {
		t.Errorf("ordinary corpus: redacted %d, stored %d; want 0 and %d", ob.Redacted, ob.Stored, len(ordinary))
	}
	if got := text(mustOK(t, c, "find_quote", map[string]any{"conversation_id": conv, "query": "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"})); !strings.Contains(got, "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3") {
		t.Errorf("find_quote for a commit id lost it: %s", got)
	}

	// The words around each secret are still recalled.
	found := 0
	for _, sc := range cases {
		rest := sc.Text
		for _, s := range sc.Secrets {
			rest = strings.ReplaceAll(rest, s, " ")
		}
		words := longWord.FindAllString(rest, -1)
		if len(words) == 0 {
			continue
		}
		q := strings.Join(words[:min(4, len(words))], " ")
		fq := mustOK(t, c, "find_quote", map[string]any{"conversation_id": conv, "query": q, "max_results": 10})
		record(fq)
		if strings.Contains(text(fq), words[0]) {
			found++
		}
		record(mustOK(t, c, "recall_context", map[string]any{"conversation_id": conv, "message": q, "max_tokens": 4000}))
	}
	if found < len(cases)*9/10 {
		t.Errorf("surrounding words found for %d of %d texts, want at least 90%%", found, len(cases))
	}
	t.Logf("%d secrets redacted over MCP; surrounding words found for %d of %d texts", redacted, found, len(cases))

	st := mustOK(t, c, "domain_status", map[string]any{"conversation_id": conv})
	record(st)
	answers = append(answers, readAllResources(t, c, conv)...)
	for _, a := range answers {
		if strings.Contains(a, dir) {
			t.Fatalf("an answer reveals the data directory's absolute path: %.300s", a)
		}
		for _, n := range needles(cases) {
			if strings.Contains(a, string(n)) {
				t.Fatalf("secret %.20q... reached an answer: %.300s", n, a)
			}
		}
	}
	if strings.Contains(text(st), "secret:") {
		t.Errorf("domain_status lists a placeholder tag: %s", text(st))
	}

	srv.c.Close()
	srv.cmd.Wait()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err == nil && path != dir && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v; want owner-only", path, fi.Mode().Perm())
		}
		if !d.Type().IsRegular() { // directories, and the shared server's socket
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, n := range needles(cases) {
			if bytes.Contains(b, n) {
				t.Errorf("secret %.20q... is in %s", n, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("walked %d files under the data dir; want the log, vc.db and the index", files)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// readAllResources reads every listed resource and the domain of every tag.
func readAllResources(t *testing.T, c *client.Client, conv string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	list, err := c.ListResources(ctx, mcpgo.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	uris := []string{"virtualcontext://domains?conversation=" + conv}
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	read := func(uri string) string {
		req := mcpgo.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := c.ReadResource(ctx, req)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		b, _ := json.Marshal(res)
		return string(b)
	}
	for _, u := range uris {
		out = append(out, read(u))
	}
	var dl struct {
		Tags []struct {
			Tag string `json:"tag"`
		} `json:"tags"`
	}
	body := out[0]
	var rr struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal([]byte(body), &rr); err == nil && len(rr.Contents) > 0 {
		json.Unmarshal([]byte(rr.Contents[0].Text), &dl)
	}
	if len(dl.Tags) == 0 {
		t.Fatalf("no tags listed for %s: %.300s", conv, body)
	}
	for _, tg := range dl.Tags {
		out = append(out, read("virtualcontext://conversations/"+conv+"/domains/"+tg.Tag))
	}
	return out
}

func TestAllowRemoteNeedsToken(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--data-dir", t.TempDir(), "--http", "0.0.0.0:0", "--allow-remote")
	cmd.Env = childEnv(t)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "auth_token_file") {
		t.Errorf("got %v, output %q; want a refusal naming auth_token_file", err, out)
	}
}
