package main

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		check   func(t *testing.T, out string)
	}{
		{"plain", []string{"version"}, false, func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "vc-mcp ") || !strings.Contains(out, runtime.GOOS+"/"+runtime.GOARCH) {
				t.Errorf("got %q, want vc-mcp <version> ... %s/%s", out, runtime.GOOS, runtime.GOARCH)
			}
		}},
		{"json", []string{"version", "--json"}, false, func(t *testing.T, out string) {
			var bi buildInfo
			if err := json.Unmarshal([]byte(out), &bi); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if bi.Version == "" || bi.Commit == "" || bi.Go != runtime.Version() || bi.OS != runtime.GOOS || bi.Arch != runtime.GOARCH {
				t.Errorf("got %+v", bi)
			}
		}},
		{"stray argument", []string{"version", "extra"}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v (stderr %q)", err, tt.wantErr, stderr.String())
			}
			if tt.check != nil {
				tt.check(t, stdout.String())
			}
		})
	}
}

// The release build stamps version and commit through -ldflags.
func TestVersionStamped(t *testing.T) {
	oldV, oldC := version, commit
	t.Cleanup(func() { version, commit = oldV, oldC })
	version, commit = "v9.8.7", "0123abcd"
	bi := currentBuild()
	if bi.Version != "v9.8.7" || bi.Commit != "0123abcd" {
		t.Errorf("got %+v, want v9.8.7 / 0123abcd", bi)
	}
}
