package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

// cliRun runs the binary with env and stdin; it returns stdout, stderr
// and the exit code.
func cliRun(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env, cmd.Dir = env, "/"
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("vc-mcp %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// cliOK runs the binary and wants exit status 0.
func cliOK(t *testing.T, env []string, stdin string, args ...string) string {
	t.Helper()
	out, stderr, code := cliRun(t, env, stdin, args...)
	if code != 0 {
		t.Fatalf("vc-mcp %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return out
}

func cliJSON(t *testing.T, env []string, dst any, args ...string) {
	t.Helper()
	out := cliOK(t, env, "", append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), dst); err != nil {
		t.Fatalf("vc-mcp %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

const cliMessages = `[
 {"role":"user","content":"We store everything in PostgreSQL; the database driver is pgx."},
 {"role":"assistant","content":"Noted: the database is PostgreSQL, accessed with pgx."},
 {"role":"user","content":"Authentication uses OAuth tokens with refresh rotation."},
 {"role":"assistant","content":"OAuth with refresh-token rotation handles authentication."}
]`

// TestCLIMemoryCommands drives the seed-000 commands on a data directory
// no server holds: compact from a file and from stdin, then every reader,
// in text and JSON.
func TestCLIMemoryCommands(t *testing.T) {
	env := childEnv(t)
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "msgs.json")
	if err := os.WriteFile(file, []byte(cliMessages), 0o600); err != nil {
		t.Fatal(err)
	}
	var ing memory.IngestResult
	cliJSON(t, env, &ing, "compact", "-i", file, "--data-dir", dir, "--conversation", "proj")
	if ing.Stored != 4 || ing.ConversationID != "proj" || !strings.Contains(strings.Join(ing.Tags, ","), "database") {
		t.Fatalf("compact: %+v", ing)
	}
	out := cliOK(t, env, cliMessages, "compact", "-i", "-", "--data-dir", dir, "--conversation", "proj")
	if !strings.Contains(out, "Stored 0 message(s)") || !strings.Contains(out, "4 duplicate(s)") {
		t.Errorf("compact from stdin again: %q, want 4 duplicates", out)
	}
	// A message without text is stored (in its place in the log), not
	// skipped, whatever the old wording said.
	out = cliOK(t, env, `[{"role":"user","content":""}]`, "compact", "-i", "-", "--data-dir", dir, "--conversation", "empties")
	if !strings.Contains(out, "Stored 1 message(s)") || !strings.Contains(out, "1 of them without text: kept in the log, not searchable") || strings.Contains(out, "skipped") {
		t.Errorf("compact of an empty message: %q", out)
	}

	out = cliOK(t, env, "", "status", "--data-dir", dir, "--conversation", "proj")
	for _, want := range []string{"conversation proj", "turns: 4", "store opened directly", "database"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	var tags []struct {
		Tag   string `json:"tag"`
		Turns int    `json:"turns"`
	}
	cliJSON(t, env, &tags, "tags", "--data-dir", dir, "--conversation", "proj")
	counts := map[string]int{}
	for _, tg := range tags {
		counts[tg.Tag] = tg.Turns
	}
	if counts["database"] != 2 {
		t.Errorf("tags: %v, want database on 2 turns", counts)
	}
	if out := cliOK(t, env, "", "tags", "--data-dir", dir); !strings.Contains(out, "no tags in default") {
		t.Errorf("tags of the empty default conversation: %q", out)
	}
	out = cliOK(t, env, "", "domains", "--data-dir", dir, "--conversation", "proj")
	if !strings.Contains(out, "TAG") || !strings.Contains(out, "database") {
		t.Errorf("domains: %q", out)
	}
	var d recallTagOutput
	cliJSON(t, env, &d, "recall", "database", "--data-dir", dir, "--conversation", "proj")
	if d.Tag != "database" || d.Status.Turns != 2 || !strings.Contains(d.Text, "database") {
		t.Errorf("recall database: %+v", d)
	}

	var rr memory.RecallResult
	cliJSON(t, env, &rr, "retrieve", "-m", "which database driver do we use?", "--data-dir", dir, "--conversation", "proj")
	if !strings.Contains(strings.Join(rr.MatchedTags, ","), "database") || !strings.Contains(strings.Join(rr.TurnIDs, ","), "t1") {
		t.Errorf("retrieve: tags %v turns %v, want database and t1", rr.MatchedTags, rr.TurnIDs)
	}
	out = cliOK(t, env, "", "transform", "-m", "which database driver do we use?", "--data-dir", dir, "--conversation", "proj")
	if !strings.Contains(out, "# tags: database") || !strings.Contains(out, "the database driver is pgx") {
		t.Errorf("transform: %s", out)
	}

	// Mistakes are usage errors (exit 2) that say what to do.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"retrieve", "--data-dir", dir}, "-m TEXT is required"},
		{[]string{"compact", "--data-dir", dir}, "-i FILE is required"},
		{[]string{"recall", "--data-dir", dir}, "TAG is missing"},
		{[]string{"tags", "--bogus"}, "unknown flag: --bogus"},
	} {
		_, stderr, code := cliRun(t, env, "", tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "Usage:") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q with the usage", tt.args, code, stderr, tt.want)
		}
	}
	if _, stderr, code := cliRun(t, env, "", "recall", "nosuch", "--data-dir", dir, "--conversation", "proj"); code != 1 || !strings.Contains(stderr, `no tag "nosuch"`) || strings.Contains(stderr, "internal error") {
		t.Errorf("recall of an unknown tag: exit %d, %q", code, stderr)
	}
	if _, stderr, code := cliRun(t, env, "[{", "compact", "-i", "-", "--data-dir", dir); code != 1 || !strings.Contains(stderr, "standard input is not a JSON array") {
		t.Errorf("compact of bad JSON: exit %d, %q", code, stderr)
	}
}

// TestCLIWhileHostConnected: with a host connected (so a shared daemon owns
// the data directory), the commands go through it: they see what the host
// stored, and what they store the host sees.
func TestCLIWhileHostConnected(t *testing.T) {
	home := t.TempDir()
	env := hostEnv(home)
	stopOwner(t, env)
	h := startHost(t, env, "host-a")
	mustOK(t, h.c, "compact_context", map[string]any{"messages": []any{
		msg("user", "Our deployment target is Kubernetes on three nodes."),
		msg("assistant", "Kubernetes on three nodes for deployment."),
	}})
	out := cliOK(t, env, "", "status")
	if !strings.Contains(out, "served by: the shared vc-mcp server") || !strings.Contains(out, "turns: 2") {
		t.Fatalf("status while a host is connected:\n%s", out)
	}
	// check cannot read vc.db while the shared server holds it: it checks
	// the logs and says so.
	if out := cliOK(t, env, "", "check"); !strings.Contains(out, "vc.db: in_use") || !strings.Contains(out, "held by a running vc-mcp") || !strings.Contains(out, "vc-mcp daemon stop: pid") || !strings.Contains(out, "2 records") || !strings.Contains(out, "0 problem(s)") {
		t.Errorf("check while a host is connected:\n%s", out)
	}
	out, stderr, code := cliRun(t, env, "", "tags")
	if code != 0 || !strings.Contains(out, "kubernetes") {
		t.Errorf("tags through the shared server: exit %d, %q\n%s", code, out, stderr)
	}
	// Closing its connection to the shared server is no error to show.
	if strings.Contains(stderr, "ERROR") {
		t.Errorf("tags through the shared server printed an error on a clean exit:\n%s", stderr)
	}
	cliOK(t, env, `[{"role":"user","content":"The staging cluster runs Kubernetes 1.31 with Cilium networking."}]`, "compact", "-i", "-")
	got := text(mustOK(t, h.c, "find_quote", map[string]any{"query": "Cilium networking"}))
	if !strings.Contains(got, "Cilium") {
		t.Errorf("the host does not see what the CLI stored: %s", got)
	}
	out = cliOK(t, env, "", "transform", "-m", "what runs on the kubernetes cluster?")
	if !strings.Contains(out, "Cilium") || !strings.Contains(out, "three nodes") {
		t.Errorf("transform through the shared server: %s", out)
	}
	// aliases add pauses the shared server; the host reconnects and its
	// next turn that says the alias gets the tag.
	if out := cliOK(t, env, "", "aliases", "add", "k8s", "kubernetes"); !strings.Contains(out, "k8s now stands for kubernetes") {
		t.Errorf("aliases add: %q", out)
	}
	var ing memory.IngestResult
	structured(t, mustOK(t, h.c, "compact_context", map[string]any{"messages": []any{msg("user", "Upgrade k8s before Friday.")}}), &ing)
	if !strings.Contains(strings.Join(ing.Tags, ","), "kubernetes") {
		t.Errorf("after aliases add k8s -> kubernetes, the host's turn got tags %v", ing.Tags)
	}
	var aliases map[string]string
	cliJSON(t, env, &aliases, "aliases", "list")
	if aliases["k8s"] != "kubernetes" {
		t.Errorf("aliases list: %v", aliases)
	}
}

func TestSuggestAliases(t *testing.T) {
	tags := []memory.TagStatus{
		{Tag: "database", Turns: 9}, {Tag: "databases", Turns: 2}, {Tag: "databse", Turns: 1},
		{Tag: "api-keys", Turns: 3}, {Tag: "api-key", Turns: 4}, {Tag: "kubernetes", Turns: 5}, {Tag: "kubernets", Turns: 1}, {Tag: "bus", Turns: 2}, {Tag: "buses", Turns: 1},
		{Tag: "policies", Turns: 1}, {Tag: "policy", Turns: 2}, {Tag: "go", Turns: 3}, {Tag: "js", Turns: 3},
	}
	got := map[string]string{}
	for _, s := range suggestAliases(tags, 0) {
		got[s.Alias] = s.Canonical + " (" + s.Reason + ")"
	}
	want := map[string]string{
		"databases": "database (plural)", "databse": "database (edit distance 1)",
		"api-keys": "api-key (plural)", "policies": "policy (plural)", "kubernets": "kubernetes (edit distance 1)", "buses": "bus (plural)",
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for a, c := range want {
		if got[a] != c {
			t.Errorf("%s: got %q, want %q", a, got[a], c)
		}
	}
}
