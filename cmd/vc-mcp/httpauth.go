package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/vc-mcp/vc-mcp/mcp"
)

// minTokenLen is the shortest bearer token accepted: a guessable token is
// no protection.
const minTokenLen = 16

// httpOptions builds the HTTP transport's limits and authentication from
// the settings. With allow_remote, a token is required; on loopback
// without one, a warning says that any local process can use the memory.
func httpOptions(cfg settings, log *slog.Logger, stderr io.Writer) (mcp.HTTPOptions, error) {
	opts := mcp.HTTPOptions{
		AllowedOrigins: cfg.AllowOrigins,
		Logger:         log,
		MaxBodyBytes:   int64(cfg.MaxBodyBytes),
		SessionIdleTTL: cfg.SessionIdleTTL,
		MaxSessions:    cfg.MaxSessions,
	}
	if cfg.AuthTokenFile != "" {
		b, err := os.ReadFile(cfg.AuthTokenFile)
		if err != nil {
			return opts, fmt.Errorf("auth_token_file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if len(tok) < minTokenLen || strings.ContainsAny(tok, " \t\r\n") {
			return opts, fmt.Errorf("auth_token_file %s: the token must be one line of at least %d characters without spaces (e.g. openssl rand -hex 32)", cfg.AuthTokenFile, minTokenLen)
		}
		opts.AuthToken = tok
	}
	switch {
	case cfg.AllowRemote && opts.AuthToken == "":
		return opts, fmt.Errorf("allow_remote needs auth_token_file: a memory reachable from other hosts must require a token (see \"Remote access and auth\" in the README)")
	case opts.AuthToken == "":
		fmt.Fprintln(stderr, "vc-mcp: warning: HTTP without auth_token_file: any process on this machine can read and write this memory")
	}
	return opts, nil
}
