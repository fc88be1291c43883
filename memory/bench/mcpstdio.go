package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// stdioSession is an MCP client over a child process's stdin and stdout:
// JSON-RPC lines, as a host speaks to a stdio server. It times tool calls
// through the real protocol (framing, JSON, the pipe, the server's own
// dispatch) rather than the engine alone.
type stdioSession struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	sc     *bufio.Scanner
	stderr *bytes.Buffer
	nextID int
	// initTook is the time from just before exec to the initialize answer.
	initTook time.Duration
}

// startStdio starts binary with args and completes the MCP handshake.
func startStdio(ctx context.Context, binary string, env []string, args ...string) (*stdioSession, error) {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	s := &stdioSession{cmd: cmd, stderr: &bytes.Buffer{}, nextID: 1}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	s.sc = bufio.NewScanner(stdout)
	s.sc.Buffer(make([]byte, 64*1024), 16<<20)
	if _, err := s.call("initialize", json.RawMessage(`{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"vc-mcp-bench","version":"1"}}`)); err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", binary, err), s.Close())
	}
	s.initTook = time.Since(start)
	if _, err := io.WriteString(s.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		return nil, errors.Join(fmt.Errorf("send initialized: %w", err), s.Close())
	}
	return s, nil
}

// call sends one request and returns its result, skipping notifications.
func (s *stdioSession) call(method string, params any) (json.RawMessage, error) {
	s.nextID++
	id := s.nextID
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	if _, err := s.stdin.Write(append(req, '\n')); err != nil {
		return nil, fmt.Errorf("send %s: %w", method, err)
	}
	want := fmt.Sprint(id)
	for s.sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(s.sc.Bytes(), &msg) != nil || string(msg.ID) != want {
			continue
		}
		if len(msg.Error) > 0 {
			return nil, fmt.Errorf("%s failed: %s", method, msg.Error)
		}
		return msg.Result, nil
	}
	return nil, fmt.Errorf("no answer to %s (stderr: %q): %w", method, tail(s.stderr.String(), 300), s.sc.Err())
}

// callTool calls a tool and fails on a tool error result.
func (s *stdioSession) callTool(name string, args map[string]any) (string, error) {
	res, err := s.call("tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return "", err
	}
	var out struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return "", fmt.Errorf("decode %s result: %w", name, err)
	}
	text := ""
	for _, c := range out.Content {
		text += c.Text
	}
	if out.IsError {
		return "", fmt.Errorf("%s: %s", name, text)
	}
	return text, nil
}

// Close ends the session: EOF on stdin, then a wait bounded to 5 s.
func (s *stdioSession) Close() error { return stopChild(s.cmd, s.stdin) }

// kill ends the session as a crash does: SIGKILL, no EOF first.
func (s *stdioSession) kill() error {
	if err := s.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	_ = s.cmd.Wait() // "signal: killed" is the point; Wait closes the pipes
	return nil
}

// timeTool calls tool once per query (args builds the arguments) and
// returns the latency of each call in milliseconds and the answers' mean
// size in bytes.
func (s *stdioSession) timeTool(name string, queries []string, args func(q string) map[string]any) ([]float64, float64, error) {
	ms := make([]float64, 0, len(queries))
	var bytes int
	for _, q := range queries {
		start := time.Now()
		text, err := s.callTool(name, args(q))
		if err != nil {
			return nil, 0, err
		}
		ms = append(ms, msSince(start))
		bytes += len(text)
	}
	return ms, float64(bytes) / float64(max(1, len(queries))), nil
}
