// Package dashboard serves the proxy's live dashboard at /dashboard: the
// request grid, a turn inspector, session stats, the stored history's
// topics, the last raw request bodies, and JSON exports, updated live over
// server-sent events. Its assets are embedded in the binary (plain HTML,
// JS and CSS, no build step). It answers loopback requests only.
package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/hostguard"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/proxy"
)

//go:embed assets
var assets embed.FS

// Memory is what the dashboard reads of the memory engine: a
// conversation's topics. *memory.Store implements it.
type Memory interface {
	Status(ctx context.Context, conversationID string) (memory.Status, error)
}

var _ Memory = (*memory.Store)(nil)

// Options configure New.
type Options struct {
	// Journal is the proxy's record of requests. Required.
	Journal *proxy.Journal
	// Memory, when set, gives the ingested history's topics.
	Memory Memory
	// AllowedOrigins are browser origins accepted besides loopback ones.
	AllowedOrigins []string
	// Logger receives refusals (default: discard).
	Logger *slog.Logger
	// Heartbeat is the SSE keep-alive interval (default 15s).
	Heartbeat time.Duration
}

// Handler serves /dashboard and /dashboard/...
type Handler struct {
	opts   Options
	static http.Handler
	mux    *http.ServeMux
}

// New returns the dashboard's handler; mount it at /dashboard and /dashboard/.
func New(opts Options) (*Handler, error) {
	if opts.Journal == nil {
		return nil, errors.New("dashboard: no journal")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	h := &Handler{opts: opts, static: http.StripPrefix("/dashboard/", http.FileServer(http.FS(sub))), mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /dashboard", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/dashboard/", http.StatusMovedPermanently)
	})
	h.mux.Handle("GET /dashboard/", h.static)
	h.mux.HandleFunc("GET /dashboard/api/snapshot", h.snapshot)
	h.mux.HandleFunc("GET /dashboard/api/export", h.export)
	h.mux.HandleFunc("GET /dashboard/api/bodies", h.bodies)
	h.mux.HandleFunc("GET /dashboard/api/history", h.history)
	h.mux.HandleFunc("GET /dashboard/api/events", h.events)
	return h, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !hostguard.LoopbackHost(hostguard.HostOnly(r.Host)) {
		h.opts.Logger.Warn("dashboard: refused a non-loopback Host", "host", r.Host)
		http.Error(w, "dashboard: only served to localhost (Host "+r.Host+" refused)", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !hostguard.OriginAllowed(o, h.opts.AllowedOrigins) {
		h.opts.Logger.Warn("dashboard: refused a foreign Origin", "origin", o)
		http.Error(w, "dashboard: origin not allowed: "+o, http.StatusForbidden)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:")
	h.mux.ServeHTTP(w, r)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client may be gone; nothing to undo
}

func (h *Handler) snapshot(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, h.opts.Journal.Snapshot())
}

// Export is the session export: what the proxy did for one session (or
// all), with the memory's view of each session's topics.
type Export struct {
	Exported time.Time                `json:"exported"`
	Session  string                   `json:"session,omitempty"`
	Records  []proxy.Record           `json:"records"`
	Sessions []proxy.SessionStats     `json:"sessions"`
	Memory   map[string]memory.Status `json:"memory,omitempty"`
}

func (h *Handler) export(w http.ResponseWriter, r *http.Request) {
	snap := h.opts.Journal.Snapshot()
	id := r.URL.Query().Get("session")
	ex := Export{Exported: time.Now().UTC(), Session: id, Records: []proxy.Record{}, Sessions: []proxy.SessionStats{}, Memory: map[string]memory.Status{}}
	for _, rec := range snap.Records {
		if id == "" || rec.Session == id {
			ex.Records = append(ex.Records, rec)
		}
	}
	for _, s := range snap.Sessions {
		if id == "" || s.ID == id {
			ex.Sessions = append(ex.Sessions, s)
			if h.opts.Memory != nil {
				if st, err := h.opts.Memory.Status(r.Context(), s.ID); err == nil {
					ex.Memory[s.ID] = st
				}
			}
		}
	}
	name := "vc-session.json"
	if id != "" {
		name = "vc-session-" + id + ".json"
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	writeJSON(w, ex)
}

func (h *Handler) bodies(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("download") != "" {
		w.Header().Set("Content-Disposition", `attachment; filename="vc-request-bodies.json"`)
	}
	writeJSON(w, h.opts.Journal.Snapshot().Bodies)
}

func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("session")
	if h.opts.Memory == nil || id == "" {
		http.Error(w, "history: give ?session=ID", http.StatusBadRequest)
		return
	}
	st, err := h.opts.Memory.Status(r.Context(), id)
	switch {
	case errors.Is(err, memory.ErrNotFound) || errors.Is(err, memory.ErrInvalid):
		http.Error(w, "history: "+err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, "history: memory unavailable", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, st)
}

// events streams journal changes as server-sent events.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	ch, cancel := h.opts.Journal.Subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, ": connected\n\n"); err != nil {
		return
	}
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(h.opts.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
		case ev := <-ch:
			data, err := json.Marshal(ev.Record)
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Kind, data); err != nil {
				return
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
}
