package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves s over newline-delimited JSON-RPC on stdin/stdout until
// stdin ends or ctx is cancelled. Nothing but JSON-RPC is written to stdout;
// the library's own error log goes to log.
func ServeStdio(ctx context.Context, s *mcpserver.MCPServer, stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	stdio := mcpserver.NewStdioServer(s)
	stdio.SetErrorLogger(slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	err := stdio.Listen(ctx, stdin, stdout)
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
}

// HTTPHandler serves s over Streamable HTTP at /mcp (with an event store, so
// notifications are never dropped) and legacy SSE at /sse and /message.
type HTTPHandler struct {
	http.Handler
	streamable *mcpserver.StreamableHTTPServer
	sse        *mcpserver.SSEServer
}

// NewHTTPHandler builds the HTTP transports behind an Origin check: mcp-go
// checks only the Host header, while the MCP spec asks servers to refuse
// foreign Origins (DNS rebinding from a browser).
func NewHTTPHandler(s *mcpserver.MCPServer, opts HTTPOptions) *HTTPHandler {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	streamable := mcpserver.NewStreamableHTTPServer(s,
		mcpserver.WithEventStore(mcpserver.NewInMemoryEventStore()),
		mcpserver.WithStreamableHTTPLogger(log),
	)
	sse := mcpserver.NewSSEServer(s)
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamable)
	mux.Handle("/sse", sse.SSEHandler())
	mux.Handle("/message", sse.MessageHandler())
	return &HTTPHandler{
		Handler:    originCheck(mux, opts.AllowedOrigins, log),
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
		if origin != "" && !originAllowed(origin, allowed) {
			log.Warn("request refused: origin not allowed", "origin", origin, "path", r.URL.Path)
			http.Error(w, "origin not allowed: "+origin+" (start vc-mcp with --allow-origin to accept it)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed accepts loopback origins and the listed ones. Requests
// without an Origin (non-browser clients) are not checked here.
func originAllowed(origin string, allowed []string) bool {
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return IsLoopbackHost(u.Hostname())
}

// IsLoopbackHost reports whether host (a name or an IP, without port) is
// the local machine's loopback.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
