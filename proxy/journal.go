package proxy

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Record is what the proxy did with one request, for the dashboard and
// the session export. It holds conversation text (the injected context):
// it is served on loopback only and never logged.
type Record struct {
	ID           int64     `json:"id"`
	Time         time.Time `json:"time"`
	Instance     string    `json:"instance"`
	Session      string    `json:"session"`
	Turn         int       `json:"turn"`
	Format       Format    `json:"format"`
	Model        string    `json:"model"`
	Path         string    `json:"path"`
	Stream       bool      `json:"stream"`
	Status       int       `json:"status"`
	InboundTags  []string  `json:"inbound_tags"`
	ResponseTags []string  `json:"response_tags"`
	Broad        bool      `json:"broad"`
	Temporal     bool      `json:"temporal"`
	// MessagesIn is the client's history, MessagesOut what went upstream.
	MessagesIn   int `json:"messages_in"`
	MessagesOut  int `json:"messages_out"`
	Dropped      int `json:"dropped"`
	TurnsDropped int `json:"turns_dropped"`
	// Tokens are estimates (4 bytes a token) of the client's and the
	// forwarded payloads; InjectedTokens is exact (cl100k).
	TokensIn       int                   `json:"tokens_in"`
	TokensOut      int                   `json:"tokens_out"`
	InjectedTokens int                   `json:"injected_tokens"`
	Injected       string                `json:"injected,omitempty"`
	Breakdown      memory.TokenBreakdown `json:"breakdown"`
	Included       []memory.Inclusion    `json:"included,omitempty"`
	// RecallExcluded counts the recalled turns left out because the
	// client's own history already carries them.
	RecallExcluded int           `json:"recall_excluded,omitempty"`
	Messages       []MessageInfo `json:"messages"`
	Window         int           `json:"window"`
	// PrepareMS is the time before the request went upstream, OverheadMS
	// all the proxy's own time, UpstreamMS the upstream's.
	PrepareMS  float64        `json:"prepare_ms"`
	OverheadMS float64        `json:"overhead_ms"`
	UpstreamMS float64        `json:"upstream_ms"`
	Rounds     int            `json:"rounds"`
	Paging     []PagingCall   `json:"paging,omitempty"`
	Tools      []ToolDecision `json:"tools,omitempty"`
	// Passthrough says why the request went upstream unmodified ("" = it
	// did not).
	Passthrough string `json:"passthrough,omitempty"`
	FirstSight  bool   `json:"first_sight"`
	ReplyChars  int    `json:"reply_chars"`
	Stored      int    `json:"stored"`
	Compacted   bool   `json:"compacted"`
	StoreError  string `json:"store_error,omitempty"`
}

// MessageInfo describes one message of the client's history.
type MessageInfo struct {
	Role      string   `json:"role"`
	Blocks    []string `json:"blocks"`
	Tokens    int      `json:"tokens"`
	Kept      bool     `json:"kept"`
	Protected bool     `json:"protected"`
	Turn      int      `json:"turn"`
}

// PagingCall is one paging tool call the proxy answered.
type PagingCall struct {
	Round   int             `json:"round"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Chars   int             `json:"chars"`
	IsError bool            `json:"is_error"`
}

// ToolDecision says whether one of the client's tools was forwarded, and why.
type ToolDecision struct {
	Name  string  `json:"name"`
	Mode  string  `json:"mode"`
	Score float64 `json:"score"`
	Kept  bool    `json:"kept"`
	Why   string  `json:"why"`
}

// SessionStats sums a session's requests.
type SessionStats struct {
	ID             string    `json:"id"`
	Instance       string    `json:"instance"`
	Requests       int       `json:"requests"`
	Turns          int       `json:"turns"`
	Stored         int       `json:"stored"`
	InjectedTokens int       `json:"injected_tokens"`
	Dropped        int       `json:"dropped"`
	PagingCalls    int       `json:"paging_calls"`
	Passthroughs   int       `json:"passthroughs"`
	Tags           []string  `json:"tags"`
	FirstSeen      time.Time `json:"first_seen"`
	LastSeen       time.Time `json:"last_seen"`
}

// RawBody is one request body as the client sent it. Only the body and the
// path are kept: headers and the query string (where credentials travel)
// never are.
type RawBody struct {
	ID   int64           `json:"id"`
	Time time.Time       `json:"time"`
	Path string          `json:"path"`
	Body json.RawMessage `json:"body"`
}

// Snapshot is the journal's content, newest first.
type Snapshot struct {
	Records  []Record       `json:"records"`
	Sessions []SessionStats `json:"sessions"`
	Bodies   []RawBody      `json:"bodies"`
}

// Event is a change: a new or updated record.
type Event struct {
	Kind   string `json:"kind"` // "request" or "update"
	Record Record `json:"record"`
}

// Journal keeps the recent records, the last 50 raw bodies and per-session
// stats, and tells subscribers about changes. It is safe for concurrent use
// and shared by every proxy instance of a process.
type Journal struct {
	mu       sync.Mutex
	limit    int
	next     int64
	records  []Record // oldest first
	bodies   []RawBody
	sessions map[string]*SessionStats
	subs     map[chan Event]struct{}
}

// maxBodies is how many raw request bodies are kept, maxKeptBody the
// largest one kept whole.
const (
	maxBodies   = 50
	maxKeptBody = 2 << 20
)

// NewJournal keeps the last limit records (default 500).
func NewJournal(limit int) *Journal {
	if limit <= 0 {
		limit = 500
	}
	return &Journal{limit: limit, sessions: map[string]*SessionStats{}, subs: map[chan Event]struct{}{}}
}

func (j *Journal) add(r Record, body []byte) int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.next++
	r.ID = j.next
	j.records = append(j.records, r)
	if len(j.records) > j.limit {
		j.records = j.records[len(j.records)-j.limit:]
	}
	if json.Valid(body) {
		// Kept as sent; Snapshot redacts what it shows. (Redacting here
		// cost every proxied request 0.5 ms a 17 KB body, under the lock.)
		kept := append(json.RawMessage(nil), body...)
		if len(body) > maxKeptBody {
			kept, _ = json.Marshal(fmt.Sprintf("(a body of %d bytes: over the %d kept)", len(body), maxKeptBody))
		}
		j.bodies = append(j.bodies, RawBody{ID: r.ID, Time: r.Time, Path: r.Path, Body: kept})
		if len(j.bodies) > maxBodies {
			j.bodies = j.bodies[len(j.bodies)-maxBodies:]
		}
	}
	if r.Session != "" {
		s := j.sessions[r.Session]
		if s == nil {
			s = &SessionStats{ID: r.Session, Instance: r.Instance, FirstSeen: r.Time}
			j.sessions[r.Session] = s
		}
		s.Requests++
		s.Turns = max(s.Turns, r.Turn)
		s.InjectedTokens += r.InjectedTokens
		s.Dropped += r.Dropped
		s.PagingCalls += len(r.Paging)
		if r.Passthrough != "" {
			s.Passthroughs++
		}
		s.LastSeen = r.Time
	}
	j.publish(Event{Kind: "request", Record: r})
	return r.ID
}

// update changes a record (response tags arrive after the answer).
func (j *Journal) update(id int64, f func(r *Record)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	i := sort.Search(len(j.records), func(i int) bool { return j.records[i].ID >= id })
	if i == len(j.records) || j.records[i].ID != id {
		return
	}
	before := j.records[i].Stored
	f(&j.records[i])
	r := j.records[i]
	if s := j.sessions[r.Session]; s != nil {
		s.Stored += r.Stored - before
		for _, t := range r.ResponseTags {
			s.Tags = appendNew(s.Tags, t)
		}
	}
	j.publish(Event{Kind: "update", Record: r})
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// publish never blocks: a subscriber too slow to keep up misses events
// (the dashboard reloads the snapshot when it reconnects).
func (j *Journal) publish(e Event) {
	for ch := range j.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

// Subscribe returns a channel of changes and a function that ends the
// subscription.
func (j *Journal) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 64)
	j.mu.Lock()
	j.subs[ch] = struct{}{}
	j.mu.Unlock()
	return ch, func() {
		j.mu.Lock()
		delete(j.subs, ch)
		j.mu.Unlock()
	}
}

// Snapshot copies the journal, newest first. The bodies' secrets are
// redacted, as the store keeps them (the built-in rules, not a configured
// scrubber), after the lock is let go.
func (j *Journal) Snapshot() Snapshot {
	s := j.snapshot()
	for i := range s.Bodies {
		s.Bodies[i].Body = memory.RedactSecretsJSON(s.Bodies[i].Body)
	}
	return s
}

func (j *Journal) snapshot() Snapshot {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := Snapshot{Records: make([]Record, 0, len(j.records)), Bodies: make([]RawBody, 0, len(j.bodies))}
	for i := len(j.records) - 1; i >= 0; i-- {
		s.Records = append(s.Records, j.records[i])
	}
	for i := len(j.bodies) - 1; i >= 0; i-- {
		s.Bodies = append(s.Bodies, j.bodies[i])
	}
	for _, st := range j.sessions {
		c := *st
		c.Tags = append([]string(nil), st.Tags...)
		s.Sessions = append(s.Sessions, c)
	}
	sort.Slice(s.Sessions, func(a, b int) bool { return s.Sessions[a].LastSeen.After(s.Sessions[b].LastSeen) })
	return s
}
