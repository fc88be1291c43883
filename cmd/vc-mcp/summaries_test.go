package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestSummariesRegenerateCLI(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		wantErr string
		wantOut string
	}{
		{"no subcommand", []string{}, "usage", ""},
		{"unknown subcommand", []string{"frobnicate"}, "unknown subcommand", ""},
		{"missing value", []string{"regenerate", "--data-dir", dir, "--tag"}, "needs a value", ""},
		{"empty store", []string{"regenerate", "--data-dir", dir}, "", "regenerated 0 segment"},
		{"unknown conversation", []string{"regenerate", "--data-dir=" + dir, "--conversation=nope"}, "no stored messages", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"summaries"}, tt.args...), strings.NewReader(""), &stdout, &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error()+stderr.String(), tt.wantErr) {
					t.Fatalf("err = %v (stderr %q), want %q", err, stderr.String(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v (stderr %q)", err, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantOut) {
				t.Fatalf("stdout %q, want %q", stdout.String(), tt.wantOut)
			}
		})
	}
}
