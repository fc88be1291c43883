package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/internal/hostguard"
)

// ServeStdio serves s over newline-delimited JSON-RPC on stdin/stdout until
// stdin ends or ctx is cancelled, with the default limits (StdioOptions).
func ServeStdio(ctx context.Context, s *mcpserver.MCPServer, stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	return ServeStdioWith(ctx, s, stdin, stdout, StdioOptions{Logger: log})
}

// StdioOptions configure ServeStdioWith.
type StdioOptions struct {
	// MaxLineBytes caps one JSON-RPC line (default DefaultMaxLineBytes): a
	// longer line is read through, dropped, and answered with a JSON-RPC
	// error; the server keeps serving.
	MaxLineBytes int
	// Logger receives transport logs (default: discard).
	Logger *slog.Logger
}

// ServeStdioWith is ServeStdio with options. Nothing but JSON-RPC is
// written to stdout; the library's own error log goes to the logger.
func ServeStdioWith(ctx context.Context, s *mcpserver.MCPServer, stdin io.Reader, stdout io.Writer, opts StdioOptions) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	out := &lockedWriter{w: stdout}
	in := lineCap(ctx, stdin, out, opts.MaxLineBytes, log)
	defer in.Close()
	stdio := mcpserver.NewStdioServer(s)
	stdio.SetErrorLogger(slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	err := stdio.Listen(ctx, in, out)
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("stdio: %w", err)
}

// HTTPOptions configure NewHTTPHandler.
type HTTPOptions struct {
	// AllowedOrigins are browser origins accepted besides loopback ones
	// (e.g. "https://app.example"); "*" accepts any.
	AllowedOrigins []string
	// Logger receives transport logs (default: discard).
	Logger *slog.Logger
	// AuthToken, when set, is the bearer token every request must carry
	// (401 otherwise).
	AuthToken string
	// AuthTokens are bearer tokens that each act for an owner: a request
	// carrying one reaches memory as that owner (memory.WithOwner), which
	// sees only its own conversations and unowned ones. With AuthToken
	// too, either is accepted (AuthToken's requests have no owner).
	AuthTokens []AuthToken
	// MaxBodyBytes caps a request body (default DefaultMaxBodyBytes; 413).
	MaxBodyBytes int64
	// SessionIdleTTL expires Streamable HTTP sessions without requests for
	// that long (default DefaultSessionIdleTTL).
	SessionIdleTTL time.Duration
	// MaxSessions caps live sessions (default DefaultMaxSessions; 503).
	MaxSessions int
	// API, when set, serves the REST API at /api/ (config, status,
	// compact) behind the same token, body limit and Origin check.
	API API
}

// HTTPHandler serves s over Streamable HTTP at /mcp (with an event store, so
// notifications are never dropped) and legacy SSE at /sse and /message.
type HTTPHandler struct {
	http.Handler
	streamable *mcpserver.StreamableHTTPServer
	sse        *mcpserver.SSEServer
	sessions   *sessions
}

// LiveSessions counts the Streamable HTTP sessions that have not expired.
func (h *HTTPHandler) LiveSessions() int { return h.sessions.live() }

func (o *HTTPOptions) setDefaults() {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.SessionIdleTTL <= 0 {
		o.SessionIdleTTL = DefaultSessionIdleTTL
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
}

// NewHTTPHandler builds the HTTP transports behind an Origin check: mcp-go
// checks only the Host header, while the MCP spec asks servers to refuse
// foreign Origins (DNS rebinding from a browser).
func NewHTTPHandler(s *mcpserver.MCPServer, opts HTTPOptions) *HTTPHandler {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts.setDefaults()
	st := newSessions(opts.SessionIdleTTL)
	streamable := mcpserver.NewStreamableHTTPServer(s,
		mcpserver.WithEventStore(mcpserver.NewInMemoryEventStore()),
		mcpserver.WithStreamableHTTPLogger(log),
		mcpserver.WithSessionIdManager(st),
		mcpserver.WithSessionIdleTTL(opts.SessionIdleTTL),
	)
	sse := mcpserver.NewSSEServer(s)
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamable)
	mux.Handle("/sse", sse.SSEHandler())
	mux.Handle("/message", sse.MessageHandler())
	if opts.API != nil {
		mux.Handle("/api/", newAPIHandler(opts.API, log))
	}
	var h http.Handler = sessionCap(mux, st, opts.MaxSessions, log)
	h = bodyLimit(originCheck(h, opts.AllowedOrigins, log), opts.MaxBodyBytes, log)
	if opts.AuthToken != "" || len(opts.AuthTokens) > 0 {
		tokens := opts.AuthTokens
		if opts.AuthToken != "" {
			tokens = append([]AuthToken{{Token: opts.AuthToken}}, tokens...)
		}
		h = bearerAuth(h, tokens, log)
	}
	return &HTTPHandler{
		Handler:    h,
		sessions:   st,
		streamable: streamable,
		sse:        sse,
	}
}

// Shutdown closes the transports' sessions.
func (h *HTTPHandler) Shutdown(ctx context.Context) error {
	return errors.Join(h.streamable.Shutdown(ctx), h.sse.Shutdown(ctx))
}

func originCheck(next http.Handler, allowed []string, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !hostguard.OriginAllowed(origin, allowed) {
			log.Warn("request refused: origin not allowed", "origin", origin, "path", r.URL.Path)
			httpError(w, r, "origin not allowed: "+origin+" (start vc-mcp with --allow-origin to accept it)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
