package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/vc-mcp/vc-mcp/internal/hostguard"
	"github.com/vc-mcp/vc-mcp/memory"
)

// API is what the REST API (/api/...) needs of the memory engine.
// *memory.Store implements it.
type API interface {
	Replacer
	Settings() memory.Settings
	SettingsOverridden() []string
	UpdateSettings(p memory.SettingsPatch) (memory.Settings, error)
	ResetSettings() (memory.Settings, error)
	Usage(ctx context.Context) ([]memory.ConversationUsage, error)
}

var _ API = (*memory.Store)(nil)

// ConfigResponse is GET/POST/DELETE /api/config's answer: the settings in
// force and which of them were changed at run time (kept in the data
// directory; they override the configuration until DELETE /api/config).
type ConfigResponse struct {
	memory.Settings
	Overridden []string `json:"overridden"`
}

// StatusResponse is GET /api/status's answer.
type StatusResponse struct {
	// Enabled is the summary-replacement switch.
	Enabled       bool                       `json:"enabled"`
	Conversations []memory.ConversationUsage `json:"conversations"`
}

// bodyWords turns the tool decoder's wording into the API's.
var bodyWords = strings.NewReplacer("arguments are", "the body is", "arguments must", "the body must",
	"arguments could", "the body could", "unknown argument", "unknown field")

// httpError answers an HTTP-level refusal: JSON under /api/, plain text
// elsewhere (the MCP transports' clients expect that).
func httpError(w http.ResponseWriter, r *http.Request, msg string, code int) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, code, apiError{Error: msg})
		return
	}
	http.Error(w, msg, code)
}

// apiError is every error's body: a message a person can act on.
type apiError struct {
	Error string `json:"error"`
}

// newAPIHandler serves the REST API under /api/. Authentication, body
// limits and the Origin check come from the transport's wrappers (the same
// as /mcp); the DNS-rebinding Host check is done here, as mcp-go does it
// for /mcp.
func newAPIHandler(mem API, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/config", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, ConfigResponse{Settings: mem.Settings(), Overridden: mem.SettingsOverridden()})
		case http.MethodPost:
			var p memory.SettingsPatch
			if !decodeBody(w, r, &p, "a JSON object of settings to change, e.g. {\"soft_threshold\": 0.6, \"enabled\": true}") {
				return
			}
			if _, err := mem.UpdateSettings(p); err != nil {
				writeMemoryError(w, log, "change the settings", err)
				return
			}
			writeJSON(w, http.StatusOK, ConfigResponse{Settings: mem.Settings(), Overridden: mem.SettingsOverridden()})
		case http.MethodDelete:
			if _, err := mem.ResetSettings(); err != nil {
				writeMemoryError(w, log, "reset the settings", err)
				return
			}
			writeJSON(w, http.StatusOK, ConfigResponse{Settings: mem.Settings(), Overridden: mem.SettingsOverridden()})
		default:
			methodNotAllowed(w, "GET, POST, DELETE")
		}
	})
	mux.HandleFunc("/api/status", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		u, err := mem.Usage(r.Context())
		if err != nil {
			writeMemoryError(w, log, "read the status", err)
			return
		}
		writeJSON(w, http.StatusOK, StatusResponse{Enabled: mem.Settings().Enabled, Conversations: u})
	})
	mux.HandleFunc("/api/compact", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		req, err := decodeCompactMessages(body)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{Error: bodyWords.Replace(err.Error())})
			return
		}
		res, err := mem.CompactMessages(r.Context(), req)
		if err != nil {
			writeMemoryError(w, log, "compact", err)
			return
		}
		writeJSON(w, http.StatusOK, replaceOutput(res))
	})
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, apiError{Error: fmt.Sprintf("no endpoint %s; the REST API has GET/POST/DELETE /api/config, GET /api/status and POST /api/compact", r.URL.Path)})
	})
	return hostCheck(mux, log)
}

// hostCheck refuses, on a loopback listener, a Host that is not loopback:
// a web page on a rebound DNS name must not reach the API.
func hostCheck(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hostguard.Rebound(r) {
			log.Warn("request refused: non-loopback Host on a loopback listener", "host", r.Host, "path", r.URL.Path)
			writeJSON(w, http.StatusForbidden, apiError{Error: "Host " + r.Host + " refused: this server listens on loopback only (use 127.0.0.1 or localhost)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readBody reads the body (already capped by the transport's body limit).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSON(w, http.StatusRequestEntityTooLarge, apiError{Error: fmt.Sprintf("request body over %d bytes (max_body_bytes); send fewer messages per call", mbe.Limit)})
			return nil, false
		}
		writeJSON(w, http.StatusBadRequest, apiError{Error: "could not read the request body: " + err.Error()})
		return nil, false
	}
	return b, true
}

// decodeBody decodes a JSON object strictly into dst, answering 400 with
// what was wrong and what is expected.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any, want string) bool {
	b, ok := readBody(w, r)
	if !ok {
		return false
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "empty body: send " + want})
		return false
	}
	if err := decodeStrict(b, dst); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: bodyWords.Replace(err.Error()) + "; send " + want})
		return false
	}
	return true
}

// writeMemoryError maps memory's errors: the caller's mistakes are 400 (413
// for too large) with memory's message; faults are logged and answered
// with what to do.
func writeMemoryError(w http.ResponseWriter, log *slog.Logger, what string, err error) {
	switch {
	case errors.Is(err, memory.ErrForbidden): // another owner's conversation
		writeJSON(w, http.StatusForbidden, apiError{Error: err.Error()})
	case errors.Is(err, memory.ErrInvalid), errors.Is(err, memory.ErrNotFound):
		writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error()})
	case errors.Is(err, memory.ErrTooLarge):
		writeJSON(w, http.StatusRequestEntityTooLarge, apiError{Error: err.Error()})
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "could not " + what + ": the request was cancelled before it finished; nothing was lost, send it again"})
	case errors.Is(err, memory.ErrReadOnly):
		writeJSON(w, http.StatusForbidden, apiError{Error: "could not " + what + ": " + err.Error()})
	case errors.Is(err, memory.ErrClosed):
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "could not " + what + ": the memory store is closed (the server is shutting down)"})
	case errors.Is(err, memory.ErrStorage):
		log.Error("api request failed", "what", what, "err", err)
		writeJSON(w, http.StatusInternalServerError, apiError{Error: "could not " + what + ": " + err.Error()})
	default:
		log.Error("api request failed", "what", what, "err", err)
		writeJSON(w, http.StatusInternalServerError, apiError{Error: "could not " + what + ": an unexpected failure (details in the server log); stored memory is unaffected"})
	}
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeJSON(w, http.StatusMethodNotAllowed, apiError{Error: "method not allowed; use " + allow})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to do
}
