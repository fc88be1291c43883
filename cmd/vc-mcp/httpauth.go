package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
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
		if opts.AuthToken, opts.AuthTokens, err = parseTokenFile(string(b)); err != nil {
			return opts, fmt.Errorf("auth_token_file %s: %w", cfg.AuthTokenFile, err)
		}
	}
	authed := opts.AuthToken != "" || len(opts.AuthTokens) > 0
	switch {
	case cfg.AllowRemote && !authed:
		return opts, fmt.Errorf("allow_remote needs auth_token_file: a memory reachable from other hosts must require a token (see \"Remote access and auth\" in the README)")
	case !authed && cfg.ReadOnly:
		fmt.Fprintln(stderr, "vc-mcp: warning: HTTP without auth_token_file: any process on this machine can read this memory")
	case !authed:
		fmt.Fprintln(stderr, "vc-mcp: warning: HTTP without auth_token_file: any process on this machine can use this memory")
	}
	return opts, nil
}

// validOwner is an owner's name in a token file.
var validOwner = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// parseTokenFile reads auth_token_file: either one token (the whole file,
// one word: every request may use every conversation, as before owners
// existed), or one "OWNER TOKEN" per line (blank lines and lines starting
// with # are skipped): a request carrying a token acts for its owner.
func parseTokenFile(text string) (single string, owned []mcp.AuthToken, err error) {
	if f := strings.Fields(text); len(f) == 1 {
		if len(f[0]) < minTokenLen {
			return "", nil, fmt.Errorf("the token must be at least %d characters (e.g. openssl rand -hex 32)", minTokenLen)
		}
		return f[0], nil, nil
	}
	seenTok, seenOwner := map[string]int{}, map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		n := i + 1
		switch {
		case len(f) != 2:
			return "", nil, fmt.Errorf("line %d: want \"OWNER TOKEN\" (two words), or a file holding a single token", n)
		case !validOwner.MatchString(f[0]):
			return "", nil, fmt.Errorf("line %d: owner %q: use letters, digits and . _ @ - (at most 64)", n, f[0])
		case len(f[1]) < minTokenLen:
			return "", nil, fmt.Errorf("line %d: the token of %s must be at least %d characters (e.g. openssl rand -hex 32)", n, f[0], minTokenLen)
		case seenTok[f[1]] != 0:
			return "", nil, fmt.Errorf("line %d: the same token as line %d: each owner needs its own", n, seenTok[f[1]])
		case seenOwner[f[0]] != 0:
			return "", nil, fmt.Errorf("line %d: owner %s already has a token on line %d", n, f[0], seenOwner[f[0]])
		}
		seenTok[f[1]], seenOwner[f[0]] = n, n
		owned = append(owned, mcp.AuthToken{Owner: f[0], Token: f[1]})
	}
	if len(owned) == 0 {
		return "", nil, fmt.Errorf("no token in the file")
	}
	return "", owned, nil
}
