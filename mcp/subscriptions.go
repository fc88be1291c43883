package mcp

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/yosida95/uritemplate/v3"

	"github.com/vc-mcp/vc-mcp/memory"
)

// updateInterval is the least time between two notification batches to one
// session: changes in between are coalesced (one resources/updated per URI).
const updateInterval = 250 * time.Millisecond

// subscriptions tracks resources/subscribe per session and turns memory's
// committed changes into notifications/resources/updated for the sessions
// subscribed to an affected URI, and notifications/resources/list_changed
// for every session when conversations or tags appear or go.
//
// mcp-go v1.2.1 accepts resources/subscribe but keeps no state for it (no
// built-in session implements SessionWithResourceSubscriptions), so the
// After(Un)Subscribe hooks record it here, keyed by session id, and
// OnUnregisterSession drops it. Notifications go to one session with
// SendNotificationToSpecificClient, which works alike on stdio, Streamable
// HTTP (the session's GET stream, or the next POST's) and SSE.
type subscriptions struct {
	mem      Memory
	log      *slog.Logger
	interval time.Duration

	srv *mcpserver.MCPServer // set before any session starts

	mu       sync.Mutex
	sessions map[string]*sessionSubs
}

type sessionSubs struct {
	uris        map[string]resourceTarget
	dirty       map[string]bool
	listChanged bool
	last        time.Time   // when the last batch went out
	timer       *time.Timer // pending flush, if any
	// blocked counts flushes in a row the session's queue was full for (a
	// Streamable HTTP client with no GET stream and no request in flight):
	// retries back off, up to 32 intervals apart.
	blocked int
}

func newSubscriptions(mem Memory, log *slog.Logger) *subscriptions {
	return &subscriptions{mem: mem, log: log, interval: updateInterval, sessions: map[string]*sessionSubs{}}
}

// hook registers the session and subscription hooks.
func (m *subscriptions) hook(h *mcpserver.Hooks) {
	h.AddOnRegisterSession(func(ctx context.Context, s mcpserver.ClientSession) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.session(s.SessionID())
	})
	h.AddOnUnregisterSession(func(ctx context.Context, s mcpserver.ClientSession) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if ss := m.sessions[s.SessionID()]; ss != nil && ss.timer != nil {
			ss.timer.Stop()
		}
		delete(m.sessions, s.SessionID())
	})
	h.AddAfterSubscribe(func(ctx context.Context, id any, req *mcpgo.SubscribeRequest, _ *mcpgo.EmptyResult) {
		s := mcpserver.ClientSessionFromContext(ctx)
		if s == nil {
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.session(s.SessionID()).uris[req.Params.URI] = parseTarget(req.Params.URI, m.mem.DefaultConversation())
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, id any, req *mcpgo.UnsubscribeRequest, _ *mcpgo.EmptyResult) {
		s := mcpserver.ClientSessionFromContext(ctx)
		if s == nil {
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if ss := m.sessions[s.SessionID()]; ss != nil {
			delete(ss.uris, req.Params.URI)
			delete(ss.dirty, req.Params.URI)
		}
	})
}

// session returns a session's state, creating it. m.mu is held.
func (m *subscriptions) session(id string) *sessionSubs {
	ss := m.sessions[id]
	if ss == nil {
		ss = &sessionSubs{uris: map[string]resourceTarget{}, dirty: map[string]bool{}}
		m.sessions[id] = ss
	}
	return ss
}

// run delivers memory's changes until the watch ends (the store closed).
func (m *subscriptions) run(changes <-chan memory.Change) {
	for ch := range changes {
		m.apply(ch)
	}
}

// apply marks the URIs a change affects, per session, and schedules their
// flush.
func (m *subscriptions) apply(ch memory.Change) {
	listChanged := ch.NewConversation || ch.GoneConversation || len(ch.NewTags) > 0 || len(ch.GoneTags) > 0
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, ss := range m.sessions {
		marked := false
		for uri, t := range ss.uris {
			if t.affectedBy(ch) {
				ss.dirty[uri] = true
				marked = true
			}
		}
		if listChanged {
			ss.listChanged = true
			marked = true
		}
		if marked {
			m.schedule(id, ss)
		}
	}
}

// schedule arranges a flush no sooner than interval after the last one.
// m.mu is held.
func (m *subscriptions) schedule(id string, ss *sessionSubs) {
	if ss.timer != nil {
		return
	}
	delay := max(0, time.Until(ss.last.Add(m.interval<<min(ss.blocked, 5))))
	ss.timer = time.AfterFunc(delay, func() { m.flush(id) })
}

// flush sends a session's pending notifications. One the session's queue
// cannot take now is kept for the next batch.
func (m *subscriptions) flush(id string) {
	m.mu.Lock()
	ss, srv := m.sessions[id], m.srv
	if ss == nil {
		m.mu.Unlock()
		return
	}
	uris := make([]string, 0, len(ss.dirty))
	for u := range ss.dirty {
		uris = append(uris, u)
	}
	slices.Sort(uris)
	listChanged := ss.listChanged
	ss.dirty, ss.listChanged, ss.timer, ss.last = map[string]bool{}, false, nil, time.Now()
	m.mu.Unlock()

	var retry []string
	retryList := false
	send := func(method string, params map[string]any) bool {
		err := srv.SendNotificationToSpecificClient(id, method, params)
		switch {
		case err == nil:
			return true
		case errors.Is(err, mcpserver.ErrNotificationChannelBlocked):
			return false
		default: // the session is gone or not initialized yet
			m.log.Debug("resource notification not sent", "session", id, "method", method, "err", err)
			return true
		}
	}
	if listChanged && !send(string(mcpgo.MethodNotificationResourcesListChanged), nil) {
		retryList = true
	}
	for _, u := range uris {
		if !send(string(mcpgo.MethodNotificationResourceUpdated), map[string]any{"uri": u}) {
			retry = append(retry, u)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ss = m.sessions[id]; ss == nil {
		return
	}
	if len(retry) == 0 && !retryList {
		ss.blocked = 0
		return
	}
	ss.blocked++
	for _, u := range retry {
		if _, ok := ss.uris[u]; ok {
			ss.dirty[u] = true
		}
	}
	ss.listChanged = ss.listChanged || retryList
	m.schedule(id, ss)
}

// targetTemplates are the templates a subscribed URI is matched against,
// with the variables naming its conversation and its tag or turn.
var targetTemplates = []struct {
	template         *uritemplate.Template
	kind, conv, name string
}{
	{uritemplate.MustNew(turnTemplate), "turn", "conversation", "turn"},
	{uritemplate.MustNew(conversationDomainTemplate), "domain", "conversation", "tag"},
	{uritemplate.MustNew(domainTemplate), "domain", "", "tag"},
	{uritemplate.MustNew(domainsQueryTemplate), "domains", "conversation", ""},
}

// resourceTarget is what a subscribed URI watches.
type resourceTarget struct {
	kind       string // "conversations", "domains", "domain", "turn" or "" (nothing of ours)
	conv, name string // conversation; tag or turn id
}

// parseTarget reads a subscribed URI the way resources/read would match it.
// A URI that names nothing of ours may still be subscribed to (a resource
// can be subscribed to before it exists); it is simply never updated.
func parseTarget(uri, defaultConv string) resourceTarget {
	switch uri {
	case conversationsURI:
		return resourceTarget{kind: "conversations"}
	case domainsURI:
		return resourceTarget{kind: "domains", conv: defaultConv}
	}
	orDefault := func(c string) string {
		if c == "" {
			return defaultConv
		}
		return c
	}
	for _, tm := range targetTemplates {
		if !tm.template.Regexp().MatchString(uri) {
			continue
		}
		vals := tm.template.Match(uri)
		t := resourceTarget{kind: tm.kind}
		if tm.conv != "" {
			t.conv = vals.Get(tm.conv).String()
		}
		t.conv = orDefault(t.conv)
		if tm.name != "" {
			t.name = vals.Get(tm.name).String()
			if t.name == "" {
				return resourceTarget{}
			}
		}
		return t
	}
	return resourceTarget{}
}

// affectedBy reports whether a change alters what reading the target gives.
func (t resourceTarget) affectedBy(ch memory.Change) bool {
	switch t.kind {
	case "conversations":
		return ch.Kind == memory.ChangeStored || ch.Kind == memory.ChangeForgotten || ch.NewConversation || ch.GoneConversation
	case "domains":
		return t.conv == ch.ConversationID
	case "domain":
		return t.conv == ch.ConversationID && (ch.GoneConversation ||
			slices.ContainsFunc(ch.Tags, func(tag string) bool { return strings.EqualFold(tag, t.name) }))
	case "turn":
		return t.conv == ch.ConversationID && (ch.GoneConversation || slices.Contains(ch.TurnIDs, t.name))
	}
	return false
}
