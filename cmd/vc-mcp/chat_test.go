package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestChatNeedsProvider: without a model, chat says what to set.
func TestChatNeedsProvider(t *testing.T) {
	cmd := exec.Command(binary, "chat", "--data-dir", t.TempDir(), "--config", filepath.Join("testdata", "replay", "empty.yaml"))
	cmd.Env = append(os.Environ(), "VC_LLM_PROVIDER=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("chat without a provider succeeded: %s", out)
	}
	for _, want := range []string{"chat needs a model", "VC_LLM_PROVIDER", "VC_LLM_MODEL", "--llm-provider"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	// A model but no terminal: told to use one, or replay.
	cmd = exec.Command(binary, "chat", "--data-dir", t.TempDir(), "--config", filepath.Join("testdata", "replay", "empty.yaml"))
	cmd.Env = append(os.Environ(), "VC_LLM_PROVIDER=openai", "VC_LLM_MODEL=m", "VC_LLM_BASE_URL=http://127.0.0.1:9/v1")
	cmd.Stdin = strings.NewReader("hello\n")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not a terminal") {
		t.Errorf("chat without a terminal: %v, %s", err, out)
	}
}
