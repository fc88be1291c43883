package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/hostguard"
	"github.com/vc-mcp/vc-mcp/memory"
)

// mcpToolName matches the paging tools' MCP names (not already prefixed).
var mcpToolName = regexp.MustCompile(`\b(expand_topic|collapse_topic|find_quote|read_log)\b`)

// maxBody bounds a request body the proxy reads (larger ones are refused
// with 413: no chat request is that big).
const maxBody = 64 << 20

// Server is one proxy instance: an http.Handler that forwards to one
// upstream. Several Servers can share one Memory and one Journal.
type Server struct {
	opts     Options
	upstream *url.URL

	mu       sync.Mutex
	sessions map[string]*session
	bg       sync.WaitGroup

	readOnlyOnce sync.Once // the read-only memory's refusal is logged once
}

// maxSessions bounds the conversations a process remembers tags for.
const maxSessions = 10_000

// session is one conversation seen by this process.
type session struct {
	id string
	// mu serialises the conversation's background stores, in order.
	mu sync.Mutex
	// tags of stored turns, by unitKey, and whether anything was stored;
	// guarded by Server.mu.
	tags   map[[16]byte][]string
	stored bool
	// turns are the stored turn ids of each unit, by unitKey (for the
	// references to dropped history); guarded by Server.mu.
	turns map[[16]byte][]string
	// pending counts the background stores queued or running, and settled
	// is closed when it drops to zero (nil while none is pending); guarded
	// by Server.mu.
	pending int
	settled chan struct{}
	// synced is what the last store sent memory: the history and answer,
	// message by message (alignBatch); guarded by mu.
	synced []msgKey
}

// storeWait bounds how long a paging call waits for the conversation's
// pending stores: the exchange just answered is what it most often asks
// about.
const storeWait = 5 * time.Second

// waitStored waits until the session's background stores are done, at most
// limit (or until ctx ends): the next request's recall and paging calls must
// see the exchange answered just before it. Past limit they go on with what
// memory holds.
func (s *Server) waitStored(ctx context.Context, ss *session, limit time.Duration) {
	s.mu.Lock()
	ch := ss.settled
	s.mu.Unlock()
	if ch == nil {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// storing counts one background store of ss, started or ended (delta 1 or -1).
func (s *Server) storing(ss *session, delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss.pending == 0 && delta > 0 {
		ss.settled = make(chan struct{})
	}
	ss.pending += delta
	if ss.pending == 0 {
		close(ss.settled)
		ss.settled = nil
	}
}

// New checks opts and returns a proxy instance.
func New(opts Options) (*Server, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(opts.Upstream) // checked by setDefaults
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &Server{opts: opts, upstream: u, sessions: map[string]*session{}}, nil
}

// Journal returns the journal this instance records into.
func (s *Server) Journal() *Journal { return s.opts.Journal }

// Label is the instance's name.
func (s *Server) Label() string { return s.opts.Label }

// Drain waits until every exchange answered so far is stored (or ctx ends).
func (s *Server) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// detect picks the dialect of a request, or nil for one the proxy does not
// touch (model lists, token counting, anything else).
func (s *Server) detect(r *http.Request, body []byte) dialect {
	if r.Method != http.MethodPost {
		return nil
	}
	p := r.URL.Path
	var d dialect
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		d = openAI{}
	case strings.HasSuffix(p, "/messages"):
		d = anthropic{}
	case strings.Contains(p, ":generateContent"), strings.Contains(p, ":streamGenerateContent"):
		d = gemini{}
	}
	if s.opts.Format != FormatAuto && d != nil && d.format() != s.opts.Format {
		return nil
	}
	if d == nil {
		return nil
	}
	// The body must have the shape: a JSON object with the history.
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return nil
	}
	if _, ok := probe[d.messagesField()]; !ok {
		return nil
	}
	return d
}

// plan is a request ready to go upstream.
type plan struct {
	d        dialect
	path     string
	body     map[string]json.RawMessage
	msgs     []json.RawMessage
	all      []message
	sess     *session
	stream   bool
	paging   bool
	first    bool // the conversation is new to memory: store its history
	model    string
	tokensIn int
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The same policy as /mcp: a web page (DNS rebinding, or a form posting
	// text/plain, which needs no CORS preflight) would otherwise read and
	// write the memory of a conversation it names, with the user's key.
	if why := hostguard.Refusal(r, s.opts.AllowedOrigins); why != "" {
		s.opts.Log.Warn("proxy: request refused", "instance", s.opts.Label, "path", r.URL.Path, "why", why)
		proxyError(w, http.StatusForbidden, why)
		return
	}
	start := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		http.Error(w, "proxy: reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxBody {
		http.Error(w, fmt.Sprintf("proxy: request body over %d MiB", maxBody>>20), http.StatusRequestEntityTooLarge)
		return
	}
	d := s.detect(r, body)
	if d == nil {
		_, err := s.passthrough(w, r, body)
		abortIfBroken(err)
		return
	}
	rec := Record{Time: s.opts.Now(), Instance: s.opts.Label, Format: d.format(), Path: r.URL.Path}
	p, err := s.prepareBounded(r.Context(), d, r.URL.Path, body, &rec)
	rec.PrepareMS = ms(time.Since(start))
	if err != nil {
		// The engine failed: the request goes upstream as the client sent it.
		rec.Passthrough = err.Error()
		s.opts.Log.Warn("proxy: forwarding unmodified", "instance", s.opts.Label, "err", err)
		up := time.Now()
		status, perr := s.passthrough(w, r, body)
		rec.Status, rec.UpstreamMS = status, ms(time.Since(up))
		rec.OverheadMS = ms(time.Since(start)) - rec.UpstreamMS
		s.opts.Journal.add(rec, body)
		s.line(rec)
		abortIfBroken(perr)
		return
	}
	var upstream time.Duration
	rep, status, err := s.exchange(w, r, p, &rec, &upstream)
	rec.Status, rec.UpstreamMS = status, ms(upstream)
	rec.OverheadMS = ms(time.Since(start)) - rec.UpstreamMS
	rec.ReplyChars = len(rep.text)
	if errors.Is(err, errBroken) {
		rec.StoreError = "not stored: " + err.Error()
	}
	id := s.opts.Journal.add(rec, body)
	s.line(rec)
	if err != nil {
		s.opts.Log.Warn("proxy: exchange", "instance", s.opts.Label, "err", err)
		abortIfBroken(err)
		return
	}
	if status/100 == 2 {
		s.store(p, rep, id)
	}
}

// abortIfBroken ends the client's response without its end (no final
// chunk), as the upstream's ended, when err is errBroken: a response that
// ended cleanly would pass the part the client got for a whole answer.
func abortIfBroken(err error) {
	if errors.Is(err, errBroken) {
		panic(http.ErrAbortHandler) // net/http closes the connection, logging nothing
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// line writes the one terminal line per request.
func (s *Server) line(r Record) {
	if s.opts.LineOut == nil {
		return
	}
	tags := strings.Join(r.InboundTags, ",")
	if tags == "" {
		tags = "-"
	}
	extra := ""
	if r.Passthrough != "" {
		extra = " passthrough"
	}
	if len(r.Paging) > 0 {
		extra += fmt.Sprintf(" paging=%d", len(r.Paging))
	}
	fmt.Fprintf(s.opts.LineOut, "vc-proxy %s turn=%d format=%s stream=%t status=%d tags=%s msgs=%d dropped=%d injected=%dt overhead=%.1fms upstream=%.1fms%s\n",
		s.opts.Label, r.Turn, r.Format, r.Stream, r.Status, tags, r.MessagesIn, r.Dropped, r.InjectedTokens, r.OverheadMS, r.UpstreamMS, extra)
}

// prepareBounded runs prepare within the engine timeout, recovering from
// any panic: a failure of vc-mcp must never fail the user's request.
func (s *Server) prepareBounded(ctx context.Context, d dialect, path string, body []byte, rec *Record) (*plan, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.EngineTimeout)
	defer cancel()
	type result struct {
		p   *plan
		rec Record
		err error
	}
	ch := make(chan result, 1)
	local := *rec
	go func() {
		var res result
		defer func() {
			if v := recover(); v != nil {
				res = result{err: fmt.Errorf("internal error: %v", v)}
			}
			ch <- res
		}()
		res.p, res.err = s.prepare(ctx, d, path, body, &local)
		res.rec = local
	}()
	select {
	case res := <-ch:
		if res.err == nil && ctx.Err() != nil {
			// Done, but past the budget: the user is not kept waiting for it.
			res.err = fmt.Errorf("memory took longer than %s", s.opts.EngineTimeout)
		}
		if res.err == nil {
			*rec = res.rec
		}
		return res.p, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("memory took longer than %s", s.opts.EngineTimeout)
	}
}

func (s *Server) prepare(ctx context.Context, d dialect, path string, body []byte, rec *Record) (*plan, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(top[d.messagesField()], &raws); err != nil {
		return nil, fmt.Errorf("%s: %w", d.messagesField(), err)
	}
	p := &plan{d: d, path: path, body: top, model: d.model(path, top), stream: d.streaming(path, top), tokensIn: len(body) / 4}
	rec.Model, rec.Stream, rec.TokensIn = p.model, p.stream, p.tokensIn
	rec.Window = ContextWindow(p.model, s.opts.ContextWindows)

	// Parse, stripping session markers.
	sessionID := ""
	for i, raw := range raws {
		clean, id := d.strip(raw)
		if id != "" {
			sessionID, raws[i] = id, clean
		}
		m, err := d.parse(raws[i])
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", d.messagesField(), i, err)
		}
		p.all = append(p.all, m)
	}
	us := units(p.all)
	if len(us) == 0 {
		return nil, errors.New("no user message")
	}
	cur := us[len(us)-1]
	query := p.all[cur.start].text
	rec.Turn = len(us)
	rec.MessagesIn = len(p.all)

	known := sessionID != ""
	if !known {
		sessionID = fingerprint(p.all, us[0])
	}
	p.sess = s.session(sessionID)
	p.first = !known && !s.stored(p.sess)
	rec.Session, rec.FirstSight = sessionID, p.first

	keep := make([]bool, len(p.all))
	for i := range keep {
		keep[i] = true
	}
	inject := ""
	if !p.first && strings.TrimSpace(query) != "" {
		// The messages forwarded whatever the filter decides (the system
		// prompt, the protected recent turns; everything when the filter
		// is off) reach the model anyway: recall spends its budget on what
		// the model would not see. Older history may still be filtered out,
		// so recall may bring it back.
		from := 0
		if !s.opts.NoFilter {
			from = us[max(0, len(us)-1-s.opts.ProtectedTurns)].start
		}
		held := make([]string, 0, len(p.all))
		for i, m := range p.all {
			if i < us[0].start || i >= from {
				held = append(held, m.text)
			}
		}
		// Half the engine's budget at most: a recall that misses the last
		// exchange (still forwarded in the history) beats none.
		s.waitStored(ctx, p.sess, s.opts.EngineTimeout/2)
		res, err := s.opts.Memory.Recall(ctx, memory.RecallRequest{ConversationID: sessionID, Message: query, MaxTokens: s.opts.RecallTokens, Exclude: held, Client: p.model})
		switch {
		case errors.Is(err, memory.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("recall: %w", err)
		default:
			rec.InboundTags, rec.Broad, rec.Temporal = res.MatchedTags, res.Broad, res.Temporal
			rec.Breakdown, rec.Included, rec.RecallExcluded = res.Breakdown, res.Included, res.Excluded
			if strings.TrimSpace(res.Text) != "" {
				inject = res.Text
				rec.InjectedTokens = res.Tokens
			}
			if !s.opts.NoFilter && !res.Broad && !res.Temporal {
				s.learnTags(ctx, p.sess, p.all, us)
				keep = filter(filterInput{msgs: p.all, units: us, protected: s.opts.ProtectedTurns, inbound: res.MatchedTags, tagsOf: s.tagsOf(p.sess)})
			}
		}
	}
	var droppedIDs []string
	for _, u := range us {
		if !keep[u.start] {
			rec.TurnsDropped++
			droppedIDs = append(droppedIDs, s.turnIDs(p.sess, u.key)...)
		}
	}
	if inject != "" && len(droppedIDs) > 0 {
		// Say what was left out of the history, and where it is.
		refs, err := s.opts.Memory.TurnRefs(ctx, sessionID, droppedIDs)
		if err != nil {
			s.opts.Log.Warn("proxy: references to dropped turns", "instance", s.opts.Label, "err", err)
		} else if len(refs) > 0 {
			var b strings.Builder
			b.WriteString("\n## Left out of the history below (read_log reads them back)\n")
			for _, r := range refs {
				b.WriteString(r.Note() + "\n")
			}
			inject += strings.TrimRight(b.String(), "\n")
		}
	}
	protectedFrom := len(us) - 1 - s.opts.ProtectedTurns
	rec.Messages = make([]MessageInfo, len(p.all))
	turn := 0
	for i, m := range p.all {
		if m.role == "user" && !m.onlyResults {
			turn++
		}
		rec.Messages[i] = MessageInfo{Role: m.role, Blocks: m.blocks, Tokens: len(m.raw) / 4, Kept: keep[i], Protected: turn > 0 && turn-1 >= protectedFrom, Turn: turn}
		if keep[i] {
			p.msgs = append(p.msgs, raws[i])
		} else {
			rec.Dropped++
		}
	}

	// Tools: narrow the client's (seed 002), then offer the paging ones.
	if s.opts.Tools != nil {
		rec.Tools = s.narrowTools(p, query)
	}
	if !s.opts.NoPaging && !p.first {
		p.paging = d.addTools(p.body, pagingTools)
	}
	if inject != "" {
		text := "<virtual-context>\nRelevant memory of this conversation (earlier turns may be left out of the history below):\n" + inject + "\n</virtual-context>"
		if p.paging {
			// memory's hint names its MCP tools; here they carry the vc_ prefix.
			text = mcpToolName.ReplaceAllString(text, "vc_$1")
			text += "\nMemory tools: vc_find_quote finds exact past words, names and numbers; vc_expand_topic reads a topic in full; vc_collapse_topic frees room; vc_read_log reads a [truncated: ...] reference back."
		}
		rec.Injected = text
		var err error
		if p.msgs, err = d.system(p.body, p.msgs, text); err != nil {
			return nil, err
		}
	}
	rec.MessagesOut = len(p.msgs)
	out, err := p.encode()
	if err != nil {
		return nil, err
	}
	rec.TokensOut = len(out) / 4
	return p, nil
}

// encode renders the body to forward.
func (p *plan) encode() ([]byte, error) {
	p.body[p.d.messagesField()] = mustJSON(p.msgs)
	return marshal(p.body)
}

// fingerprint names a conversation without a marker by its first user
// message (and the system prompt before it): what a client resends, every
// time, at the head of the history.
func fingerprint(all []message, first unit) string {
	h := sha256.New()
	for _, m := range all[:first.start] {
		h.Write([]byte(m.text))
		h.Write([]byte{0})
	}
	h.Write([]byte(all[first.start].text))
	return "px-" + hex.EncodeToString(h.Sum(nil)[:10])
}

// session returns the session, new or known to this process.
func (s *Server) session(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[id]; ok {
		return ss
	}
	if len(s.sessions) >= maxSessions {
		// Forget some other session: its turns' tags are only a filter hint
		// (unknown tags keep a turn), and memory keeps everything.
		for k := range s.sessions {
			delete(s.sessions, k)
			break
		}
	}
	ss := &session{id: id, tags: map[[16]byte][]string{}, turns: map[[16]byte][]string{}}
	s.sessions[id] = ss
	return ss
}

// stored reports whether an exchange of the session has gone to memory
// (so its earlier history has too): until then a request without a marker
// is a first sight, even after one that failed.
func (s *Server) stored(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ss.stored
}

func (s *Server) tagsOf(ss *session) func([16]byte) ([]string, bool) {
	return func(k [16]byte) ([]string, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		t, ok := ss.tags[k]
		return t, ok
	}
}

// learnTags asks memory for the topics of history turns this process did
// not store itself (it restarted, or another process stored them), so the
// filter can drop the off-topic ones instead of keeping every turn whose
// tags it does not know.
func (s *Server) learnTags(ctx context.Context, ss *session, all []message, us []unit) {
	known := s.tagsOf(ss)
	var missing []unit
	var texts []string
	for _, u := range us[:len(us)-1] {
		if _, ok := known(u.key); ok {
			continue
		}
		missing = append(missing, u)
		for _, m := range all[u.start:u.end] {
			texts = append(texts, m.text)
		}
	}
	if len(missing) == 0 {
		return
	}
	found, err := s.opts.Memory.TagsOfTexts(ctx, ss.id, texts)
	if err != nil {
		if !errors.Is(err, memory.ErrNotFound) {
			s.opts.Log.Debug("proxy: topics of earlier turns unknown", "session", ss.id, "err", err)
		}
		return
	}
	for _, u := range missing {
		var tags []string
		hit := false
		for _, m := range all[u.start:u.end] {
			if t, ok := found[m.text]; ok {
				hit = true
				for _, tag := range t {
					if !slices.Contains(tags, tag) {
						tags = append(tags, tag)
					}
				}
			}
		}
		if hit {
			s.setTags(ss, u.key, tags)
		}
	}
}

func (s *Server) turnIDs(ss *session, k [16]byte) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ss.turns[k]
}

func (s *Server) setTurns(ss *session, k [16]byte, ids []string) {
	if len(ids) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.turns[k] = ids
}

func (s *Server) setTags(ss *session, k [16]byte, tags []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.tags[k] = tags
}

// hopHeaders are not forwarded (RFC 9110 7.6.1), nor are Host and
// Content-Length (recomputed) and Accept-Encoding (the transport asks for
// gzip itself and decodes it, so the proxy can read the answer).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Host", "Content-Length", "Accept-Encoding"}

// newRequest builds the upstream request. Credentials (Authorization,
// x-api-key, x-goog-api-key, ?key=) go through untouched.
func (s *Server) newRequest(ctx context.Context, r *http.Request, body []byte) (*http.Request, error) {
	u := *s.upstream
	u.Path = s.upstream.Path + r.URL.Path
	u.RawPath = ""
	u.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.ContentLength = int64(len(body))
	return req, nil
}

func copyHeaders(w http.ResponseWriter, resp *http.Response, dropLength bool) {
	for k, v := range resp.Header {
		if k == "Connection" || k == "Transfer-Encoding" || (dropLength && k == "Content-Length") {
			continue
		}
		w.Header()[k] = v
	}
}

// passthrough forwards a request as it came and its answer as it comes.
// The error is errBroken when the answer broke off after its status went
// to the client.
func (s *Server) passthrough(w http.ResponseWriter, r *http.Request, body []byte) (int, error) {
	req, err := s.newRequest(r.Context(), r, body)
	if err != nil {
		upstreamError(w, err)
		return http.StatusBadGateway, nil
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		upstreamError(w, err)
		return http.StatusBadGateway, nil
	}
	defer resp.Body.Close()
	copyHeaders(w, resp, resp.ContentLength < 0 || resp.Uncompressed)
	w.WriteHeader(resp.StatusCode)
	return resp.StatusCode, copyFlushing(w, resp.Body, nil)
}

// copyFlushing copies src to w as it arrives, flushing each read; the
// bytes are also kept in keep when it is not nil. It returns errBroken
// when reading src fails (the client going away is not an error here).
func copyFlushing(w http.ResponseWriter, src io.Reader, keep *bytes.Buffer) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil
			}
			_ = rc.Flush() // a writer that cannot flush still gets the bytes
			if keep != nil {
				keep.Write(buf[:n])
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("%w: %w", errBroken, err)
		}
	}
}

func upstreamError(w http.ResponseWriter, err error) {
	proxyError(w, http.StatusBadGateway, "upstream unreachable: "+err.Error())
}

// proxyError answers with the proxy's own error, in the shape the SDKs
// read a message from.
func proxyError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(mustJSON(map[string]any{"error": map[string]string{"type": "proxy_error", "message": "vc-mcp proxy: " + msg}}))
}

// exchange sends the plan upstream, answers paging calls, and writes the
// answer to the client. It returns the model's whole reply (for storing),
// the status the client got, and the time spent waiting on the upstream.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request, p *plan, rec *Record, upstream *time.Duration) (reply, int, error) {
	marker := markerText(p.sess.id)
	var prior []reply
	var held [][]byte
	offset := 0
	headerSent := false
	rc := http.NewResponseController(w)
	var full reply  // text and client-visible calls across rounds
	used := usage{} // the paging rounds' token usage, added to the answer's
	for round := 0; ; round++ {
		rec.Rounds = round + 1
		last := round == s.opts.MaxRounds-1
		if p.paging && last {
			p.d.forceNoTools(p.body)
		}
		body, err := p.encode()
		if err != nil {
			return full, 0, err
		}
		req, err := s.newRequest(r.Context(), r, body)
		if err != nil {
			return full, 0, err
		}
		t0 := time.Now()
		resp, err := s.opts.Client.Do(req)
		if err != nil {
			*upstream += time.Since(t0)
			if headerSent {
				writeAll(w, held)
				return full, http.StatusOK, fmt.Errorf("continuation: %w", err)
			}
			upstreamError(w, err)
			return full, http.StatusBadGateway, nil
		}
		isSSE := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
		if resp.StatusCode/100 != 2 || (!isSSE && p.stream) {
			// Errors pass through unchanged; so does a stream that is not SSE
			// (Gemini without alt=sse).
			if headerSent {
				resp.Body.Close()
				*upstream += time.Since(t0)
				writeAll(w, held)
				return full, http.StatusOK, fmt.Errorf("continuation: upstream status %d", resp.StatusCode)
			}
			copyHeaders(w, resp, true)
			w.WriteHeader(resp.StatusCode)
			var kept bytes.Buffer
			cerr := copyFlushing(w, resp.Body, &kept)
			resp.Body.Close()
			*upstream += time.Since(t0)
			if cerr != nil {
				return full, resp.StatusCode, cerr
			}
			if resp.StatusCode/100 == 2 {
				if !json.Valid(kept.Bytes()) {
					// Cut short: the client cannot read it either, and retries.
					return full, resp.StatusCode, fmt.Errorf("%w: the streamed JSON answer is incomplete", errBroken)
				}
				full = streamedArray(p.d, kept.Bytes())
				full.resent = p.d.resent(nil, full, true, "") // passed through: no marker
			}
			return full, resp.StatusCode, nil
		}
		if !isSSE {
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			*upstream += time.Since(t0)
			if err != nil {
				upstreamError(w, err)
				return full, http.StatusBadGateway, nil
			}
			if !json.Valid(data) {
				// Cut short, or not an answer: the client gets it as it came,
				// and nothing is stored (its retry will be).
				copyHeaders(w, resp, true)
				w.WriteHeader(resp.StatusCode)
				_, _ = w.Write(data)
				return full, resp.StatusCode, errors.New("the upstream's answer is not JSON: not stored")
			}
			rep, perr := p.d.parseReply(data)
			if perr == nil && p.paging && !last && onlyPaging(rep.calls) {
				if err := s.continueWith(r.Context(), p, rep, round, rec); err != nil {
					return full, 0, err
				}
				prior = append(prior, rep)
				full.text += rep.text
				ru := usage{}
				ru.observe(data)
				used.add(ru)
				continue
			}
			out := data
			if perr == nil {
				full.text += rep.text
				full.calls = append(full.calls, rep.calls...)
				full.resent = p.d.resent(prior, rep, false, marker)
				if marked, err := p.d.markReply(data, prior, marker); err == nil {
					out = used.bump(marked)
				}
			}
			copyHeaders(w, resp, true)
			w.WriteHeader(resp.StatusCode)
			_, err = w.Write(out)
			return full, resp.StatusCode, err
		}

		// A stream: events go to the client as they arrive.
		if !headerSent {
			copyHeaders(w, resp, true)
			w.WriteHeader(resp.StatusCode)
			_ = rc.Flush() // an unflushable writer still gets the bytes
			headerSent = true
		}
		st := p.d.newStream(round, offset)
		holding, markerSent := false, false
		held = held[:0]
		sr := bufio.NewReaderSize(resp.Body, 64<<10)
		roundUse := usage{}
		var werr, rerr error
		for {
			var raw, data []byte
			raw, data, rerr = nextEvent(sr)
			if len(raw) > 0 {
				act, out := st.event(raw, data)
				if out == nil {
					out = raw
				}
				roundUse.observe(data)
				out = used.bumpEvent(out, roundUse) // after paging rounds only: else unchanged
				switch {
				case holding:
					held = append(held, out)
				case act == actHold:
					holding = true
					held = append(held, out)
				case act == actSkip:
				case act == actStop:
					if !markerSent {
						markerSent = true
						_, werr = w.Write(st.marker(marker))
					}
					if werr == nil {
						_, werr = w.Write(out)
					}
				default:
					_, werr = w.Write(out)
				}
				if werr != nil {
					break
				}
				if !holding {
					_ = rc.Flush()
				}
			}
			if rerr != nil {
				break
			}
		}
		resp.Body.Close()
		*upstream += time.Since(t0)
		if werr != nil {
			return full, resp.StatusCode, fmt.Errorf("client went away: %w", werr)
		}
		if err := broken(st, rerr); err != nil {
			// No marker, no terminal events: the client must see the failure.
			return full, resp.StatusCode, fmt.Errorf("round %d: %w", round+1, err)
		}
		rep := st.reply()
		full.text += rep.text
		if holding && p.paging && !last && onlyPaging(rep.calls) {
			if err := s.continueWith(r.Context(), p, rep, round, rec); err != nil {
				writeAll(w, held)
				return full, resp.StatusCode, err
			}
			offset = st.forwarded()
			used.add(roundUse)
			prior = append(prior, rep)
			continue
		}
		full.calls = append(full.calls, rep.calls...)
		full.resent = p.d.resent(prior, rep, true, marker)
		if holding {
			// Paging calls mixed with the client's own: the client gets the
			// answer as the model gave it.
			writeAll(w, held)
		} else if !markerSent {
			// Gemini has no event before which the marker goes: it ends the stream.
			_, _ = w.Write(st.marker(marker)) // the client may be gone; nothing to undo
		}
		_ = rc.Flush()
		return full, resp.StatusCode, nil
	}
}

// errBroken marks an answer the upstream did not finish (the stream broke
// off, was reset, or carried an error event). Such an exchange is not
// stored, since the client retries it and the retry is stored, and the
// client's connection is aborted, so its SDK raises instead of taking the
// part it got for a whole answer.
var errBroken = errors.New("the upstream's answer broke off")

// broken says why a streamed answer is not whole (nil when it is): the
// body ended by an error, or before the format's last event, or after an
// error event.
func broken(st streamer, rerr error) error {
	switch {
	case rerr != nil && !errors.Is(rerr, io.EOF):
		return fmt.Errorf("%w: %w", errBroken, rerr)
	case !st.done():
		return fmt.Errorf("%w: the stream ended without the answer's end, or with an error event", errBroken)
	}
	return nil
}

func writeAll(w http.ResponseWriter, events [][]byte) {
	for _, e := range events {
		if _, err := w.Write(e); err != nil {
			return
		}
	}
	_ = http.NewResponseController(w).Flush()
}

// continueWith answers a round of paging calls and appends the round to the
// plan's history for the next request.
func (s *Server) continueWith(ctx context.Context, p *plan, rep reply, round int, rec *Record) error {
	s.waitStored(ctx, p.sess, storeWait)
	answers := make([]toolAnswer, len(rep.calls))
	for i, c := range rep.calls {
		cctx, cancel := context.WithTimeout(ctx, s.opts.EngineTimeout)
		answers[i] = answer(cctx, s.opts.Memory, p.sess.id, c)
		cancel()
		rec.Paging = append(rec.Paging, PagingCall{Round: round + 1, Tool: c.Name, Args: c.Args, Chars: len(answers[i].text), IsError: answers[i].isError})
	}
	msgs, err := p.d.appendRound(p.msgs, rep, answers)
	if err != nil {
		return err
	}
	p.msgs = msgs
	return nil
}

// streamedArray reads a non-SSE streamed answer (a JSON array of chunks)
// for storing.
func streamedArray(d dialect, data []byte) reply {
	if r, err := d.parseReply(data); err == nil {
		return r
	}
	var chunks []json.RawMessage
	if json.Unmarshal(data, &chunks) != nil {
		return reply{}
	}
	var out reply
	for _, c := range chunks {
		if r, err := d.parseReply(c); err == nil {
			out.text += r.text
			out.calls = append(out.calls, r.calls...)
		}
	}
	return out
}

// nextEvent reads one SSE event: its raw bytes through the blank line
// that ends it, and its data (data lines joined by newlines).
func nextEvent(r *bufio.Reader) (raw, data []byte, err error) {
	var dataLines [][]byte
	for {
		line, err := r.ReadBytes('\n')
		raw = append(raw, line...)
		trimmed := bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
			dataLines = append(dataLines, bytes.TrimPrefix(v, []byte(" ")))
		}
		if err != nil {
			return raw, bytes.Join(dataLines, []byte("\n")), err
		}
		if len(trimmed) == 0 {
			return raw, bytes.Join(dataLines, []byte("\n")), nil
		}
	}
}

// store ingests the exchange in the background, in order per conversation,
// forcing compaction past the model's soft threshold, and records the
// stored turns' tags. What is new is decided by alignBatch against what
// the session stored last; when that says nothing (the session's first
// store in this process), the history's earlier turns one by one on a
// first sight, then the new turn with the model's answer, as memory lines
// each up with what it holds.
func (s *Server) store(p *plan, rep reply, id int64) {
	s.mu.Lock()
	p.sess.stored = true
	s.mu.Unlock()
	s.storing(p.sess, 1)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer s.storing(p.sess, -1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		p.sess.mu.Lock()
		defer p.sess.mu.Unlock()
		us := units(p.all)
		hist, n := s.history(p, us, rep)
		var batches [][]histMsg
		if start, ok := alignBatch(p.sess.synced, keysOf(hist), n); ok {
			batches = [][]histMsg{hist[max(start, len(hist)-maxBatch):]}
		} else {
			batches = byTurn(hist, p.first)
		}
		window := ContextWindow(p.model, s.opts.ContextWindows)
		force := float64(p.tokensIn) >= s.opts.SoftThreshold*float64(window)
		stored, sent := 0, false
		var res memory.IngestResult
		for i, b := range batches {
			if len(b) == 0 {
				continue
			}
			sent = true
			s.warnRefused(p.sess.id, b)
			var err error
			res, err = s.opts.Memory.Ingest(ctx, memory.IngestRequest{ConversationID: p.sess.id, Messages: messagesOf(b), Force: force && i == len(batches)-1})
			if err != nil {
				s.storeFailed(id, err)
				return
			}
			stored += res.Stored
			s.remember(p.sess, us, b, res)
		}
		if sent {
			p.sess.synced = keysOf(hist)
		}
		s.opts.Journal.update(id, func(r *Record) {
			r.ResponseTags = res.Tags
			r.Stored = stored
			r.Compacted = res.Compacted
		})
	}()
}

// maxBatch is the most messages memory takes in one Ingest.
const maxBatch = 1000

// histMsg is one message of a history for memory: unit is the index of
// its turn (units), first whether it opens the turn, size the bytes of a
// message over the limit (stored as a refusal, refused).
type histMsg struct {
	msg   memory.Message
	key   msgKey
	unit  int
	first bool
	size  int
}

// history is the request's history for memory, from its first turn on
// (what comes before, the system prompt, is not stored): n messages, then
// the answer when it has anything to store.
func (s *Server) history(p *plan, us []unit, rep reply) (hist []histMsg, n int) {
	var out []histMsg
	for ui, u := range us {
		for i := u.start; i < u.end; i++ {
			if m, ok := p.d.toMemory(p.all[i]); ok {
				out = append(out, s.histMsg(m, ui, i == u.start))
			}
		}
	}
	n = len(out)
	if a, ok := answerMessage(p.d, rep); ok {
		out = append(out, s.histMsg(a, len(us)-1, false))
	}
	return out, n
}

// histMsg makes m a message of the history. A message over memory's
// limit, which memory refuses (failing the whole batch), is replaced by
// one that says it was not stored, with its size and the limit: the same
// every time the client resends it, so it lines up as any other.
func (s *Server) histMsg(m memory.Message, unit int, first bool) histMsg {
	h := histMsg{msg: m, unit: unit, first: first}
	if size := len(m.Content) + len(m.ToolCalls); size > s.opts.MaxMessageBytes {
		h.size = size
		h.msg = memory.Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID, Content: mustJSON(fmt.Sprintf(
			"[a message of %d bytes, over memory's limit of %d bytes (max_message_bytes): not stored]", size, s.opts.MaxMessageBytes))}
	}
	h.key = keyOf(h.msg)
	return h
}

// warnRefused says which messages of a batch were over the limit: the
// client is not told (its answer is gone), so the log is.
func (s *Server) warnRefused(conv string, batch []histMsg) {
	for _, m := range batch {
		if m.size > 0 {
			s.opts.Log.Warn("proxy: a message over memory's max_message_bytes was not stored; a turn saying so stands in its place",
				"instance", s.opts.Label, "conversation", conv, "role", m.msg.Role, "bytes", m.size, "limit", s.opts.MaxMessageBytes)
		}
	}
}

// byTurn is the fallback's batches: on a first sight each earlier turn,
// then the last turn with the answer; else the last turn with the answer.
func byTurn(hist []histMsg, first bool) [][]histMsg {
	var out [][]histMsg
	for i := 0; i < len(hist); {
		j := i + 1
		for j < len(hist) && hist[j].unit == hist[i].unit {
			j++
		}
		if first || j == len(hist) {
			out = append(out, hist[i:j])
		}
		i = j
	}
	return out
}

func keysOf(h []histMsg) []msgKey {
	out := make([]msgKey, len(h))
	for i, m := range h {
		out[i] = m.key
	}
	return out
}

func messagesOf(h []histMsg) []memory.Message {
	out := make([]memory.Message, len(h))
	for i, m := range h {
		out[i] = m.msg
	}
	return out
}

// remember records the stored turns' ids and tags by their turn's key.
// Memory stores the end of a batch (what follows the resend it lines up),
// so the last res.TurnIDs messages are the new turns. A turn stored in
// parts (a tool loop's messages come one request after another) adds to
// what its earlier parts got. Tags are those of all the new turns: kept
// only when they are one turn's (else learnTags asks memory later).
func (s *Server) remember(ss *session, us []unit, batch []histMsg, res memory.IngestResult) {
	fresh := batch[max(0, len(batch)-len(res.TurnIDs)):]
	ids := map[int][]string{}
	whole := map[int]bool{}
	for i, m := range fresh {
		ids[m.unit] = append(ids[m.unit], res.TurnIDs[i])
		whole[m.unit] = whole[m.unit] || m.first
	}
	for u, turnIDs := range ids {
		k := us[u].key
		if !whole[u] {
			turnIDs = append(slices.Clone(s.turnIDs(ss, k)), turnIDs...)
		}
		s.setTurns(ss, k, turnIDs)
		if len(ids) > 1 {
			continue
		}
		tags := res.Tags
		if !whole[u] {
			old, _ := s.tagsOf(ss)(k)
			tags = slices.Clone(old)
			for _, t := range res.Tags {
				if !slices.Contains(tags, t) {
					tags = append(tags, t)
				}
			}
		}
		s.setTags(ss, k, tags)
	}
}

func (s *Server) storeFailed(id int64, err error) {
	s.opts.Journal.update(id, func(r *Record) { r.StoreError = err.Error() })
	if errors.Is(err, memory.ErrReadOnly) {
		// Every exchange would say it again: once is enough.
		s.readOnlyOnce.Do(func() {
			s.opts.Log.Warn("proxy: the memory is read-only: exchanges are forwarded and recalled from, not stored", "instance", s.opts.Label, "err", err)
		})
		return
	}
	s.opts.Log.Warn("proxy: storing the exchange", "instance", s.opts.Label, "err", err)
}

func (s *Server) toMemory(d dialect, msgs []message) []memory.Message {
	var out []memory.Message
	for _, m := range msgs {
		if mm, ok := d.toMemory(m); ok {
			out = append(out, mm)
		}
	}
	return out
}

// answerMessage is the model's answer for memory: made from the message
// the client sends back (its marker stripped) as the client's history is,
// so the two are the same message to memory.
func answerMessage(d dialect, r reply) (memory.Message, bool) {
	if r.resent == nil {
		return memory.Message{}, false
	}
	raw, _ := d.strip(r.resent)
	m, err := d.parse(raw)
	if err != nil {
		return memory.Message{}, false
	}
	return d.toMemory(m)
}
