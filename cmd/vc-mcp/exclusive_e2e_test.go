package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/vc-mcp/vc-mcp/internal/syncbuf"
	"github.com/vc-mcp/vc-mcp/share"
)

// TestExclusiveAgainstHTTPOwner: the commands that need the data directory
// alone (export, rebuild) and `daemon stop`, run while a `serve --http` or a
// `vc-mcp proxy` owns the directory, fail at once naming that process, and
// leave it serving: its shared socket still answers (`vc-mcp status` goes
// through it) and its HTTP clients keep their session.
func TestExclusiveAgainstHTTPOwner(t *testing.T) {
	for _, owner := range []string{"serve --http", "proxy"} {
		t.Run(strings.ReplaceAll(owner, " ", ""), func(t *testing.T) {
			dir := t.TempDir()
			var base string
			if owner == "proxy" {
				// No model request is made: the upstream is never reached.
				base = startProxy(t, "http://127.0.0.1:9", "--data-dir", dir).base
			} else {
				base, _ = startHTTP(t, dir)
			}
			hc, err := client.NewStreamableHttpClient(base + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { hc.Close() })
			if err := hc.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			initialize(t, hc)
			mustOK(t, hc, "compact_context", map[string]any{"conversation_id": "c1", "messages": []any{msg("user", "The heron survey starts in April.")}})
			st, err := share.Status(context.Background(), dir)
			if err != nil {
				t.Fatalf("status of the owner: %v", err)
			}

			for _, args := range [][]string{
				{"export", "--format", "jsonl", "--out", filepath.Join(t.TempDir(), "out.jsonl"), "--conversation", "c1"},
				{"rebuild"},
				{"daemon", "stop"},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				cmd := exec.CommandContext(ctx, binary, append(args, "--data-dir", dir)...)
				cmd.Env = childEnv(t)
				start := time.Now()
				out, err := cmd.CombinedOutput()
				timedOut := ctx.Err() != nil
				cancel()
				if timedOut {
					t.Fatalf("vc-mcp %s against %s: still waiting after %s\n%s", strings.Join(args, " "), owner, time.Since(start).Round(time.Second), out)
				}
				var exit *exec.ExitError
				want := "served by `vc-mcp " + owner + "` (pid "
				if !errors.As(err, &exit) || !strings.Contains(string(out), want) || !strings.Contains(string(out), "stop it first") {
					t.Errorf("vc-mcp %s against %s: err %v, output %q; want a refusal containing %q and \"stop it first\"", strings.Join(args, " "), owner, err, out, want)
				}

				// The owner still serves its socket and its HTTP clients.
				if now, err := share.Status(context.Background(), dir); err != nil || now.PID != st.PID {
					t.Fatalf("after vc-mcp %s: shared socket: %+v, %v; want pid %d to answer", args[0], now, err, st.PID)
				}
				ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
				status := exec.CommandContext(ctx, binary, "status", "--conversation", "c1", "--data-dir", dir)
				status.Env = childEnv(t)
				sout, err := status.CombinedOutput()
				cancel()
				if err != nil || !strings.Contains(string(sout), "served by: the shared vc-mcp server") {
					t.Errorf("vc-mcp status after vc-mcp %s: %v\n%s", args[0], err, sout)
				}
				mustOK(t, hc, "domain_status", map[string]any{"conversation_id": "c1"})
			}
		})
	}
}

// TestLockWaitNamesHolder: a command run while a process that serves no
// shared socket (a stdio `serve` with VC_SHARE=off) holds the data
// directory says at once that it waits and for whom, instead of waiting
// silently (rebuild and aliases, which open the store their own way,
// too).
func TestLockWaitNamesHolder(t *testing.T) {
	dir := t.TempDir()
	env := append(childEnv(t), "VC_SHARE=off")
	var holder *exec.Cmd
	tr := transport.NewStdioWithOptions(binary, nil, []string{"serve", "--data-dir", dir}, transport.WithCommandFunc(
		func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			holder = exec.Command(command, args...)
			holder.Env = env
			return holder, nil
		}))
	c := client.NewClient(tr)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c) // the store is open
	want := fmt.Sprintf("in use by pid %d", holder.Process.Pid)

	// check reads the logs beside it, and names whom to stop for a full
	// check (not the shared daemon's stop, which would not stop it).
	cmd := exec.Command(binary, "check", "--data-dir", dir)
	cmd.Env = childEnv(t)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), fmt.Sprintf("stop pid %d (", holder.Process.Pid)) {
		t.Errorf("check while pid %d holds the data directory:\n%s\nwant it named as the process to stop", holder.Process.Pid, out)
	}

	for _, args := range [][]string{
		{"status"},
		{"export", "--format", "jsonl", "--out", filepath.Join(t.TempDir(), "out.jsonl")},
		{"rebuild"},
		{"aliases", "list"},
	} {
		cmd := exec.Command(binary, append(args, "--data-dir", dir)...)
		cmd.Env = childEnv(t)
		out := &syncbuf.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), want) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		cmd.Process.Kill()
		cmd.Wait()
		if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "waiting up to") {
			t.Errorf("vc-mcp %s while pid %d holds the data directory: after 10s the output is %q; want a note that it waits (\"waiting up to\"), naming the holder (%q)", args[0], holder.Process.Pid, out.String(), want)
		}
	}
}
