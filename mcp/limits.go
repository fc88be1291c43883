package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Defaults of the HTTP and stdio limits (HTTPOptions, StdioOptions).
const (
	DefaultMaxBodyBytes   = 4 << 20
	DefaultSessionIdleTTL = 30 * time.Minute
	DefaultMaxSessions    = 256
	DefaultMaxLineBytes   = 8 << 20
)

// AuthToken is a bearer token and the owner its requests act for ("" for
// none: every conversation).
type AuthToken struct {
	Owner, Token string
}

// bearerAuth refuses requests without "Authorization: Bearer <token>" for
// one of tokens, and passes the matching token's owner on in the request's
// context (memory.WithOwner). The comparison is constant-time over SHA-256
// digests, against every token, so neither a token's bytes nor its length
// nor which one matched leak through timing.
func bearerAuth(next http.Handler, tokens []AuthToken, log *slog.Logger) http.Handler {
	want := make([][sha256.Size]byte, len(tokens))
	for i, t := range tokens {
		want[i] = sha256.Sum256([]byte(t.Token))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		const prefix = "Bearer "
		ok := len(got) > len(prefix) && equalFoldASCII(got[:len(prefix)], prefix)
		owner := ""
		if ok {
			sum := sha256.Sum256([]byte(got[len(prefix):]))
			match := 0
			for i := range want {
				eq := subtle.ConstantTimeCompare(sum[:], want[i][:])
				if eq == 1 {
					owner = tokens[i].Owner
				}
				match |= eq
			}
			ok = match == 1
		}
		if ok && owner != "" {
			r = r.WithContext(memory.WithOwner(r.Context(), owner))
		}
		if !ok {
			log.Warn("request refused: missing or wrong bearer token", "path", r.URL.Path, "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="vc-mcp"`)
			httpError(w, r, "unauthorized: send Authorization: Bearer <token> (the token in the server's --auth-token-file)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// bodyLimit reads a request body up to max bytes before the transports see
// it: a longer one gets 413 and is never held in memory (mcp-go reads
// bodies with io.ReadAll).
func bodyLimit(next http.Handler, max int64, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Method == http.MethodGet || r.Method == http.MethodDelete {
			next.ServeHTTP(w, r)
			return
		}
		tooLarge := func() {
			log.Warn("request refused: body too large", "path", r.URL.Path, "limit", max)
			w.Header().Set("Connection", "close")
			httpError(w, r, fmt.Sprintf("request body too large: the limit is %d bytes (max_body_bytes); send fewer or smaller messages per call", max), http.StatusRequestEntityTooLarge)
		}
		if r.ContentLength > max {
			tooLarge()
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				tooLarge()
				return
			}
			httpError(w, r, "reading request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// sessions is the Streamable HTTP session id manager: ids are random, known
// to this process, and expire after ttl without a request. It counts live
// sessions so that new ones can be refused beyond a cap. A session that no
// request has named since its initialize (a client that sent the
// initialize and went away before reading the id: it can neither use nor
// delete the session) expires after unusedTTL, or it would hold a place
// under the cap for the whole ttl.
type sessions struct {
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	last map[string]sessionSeen
}

// sessionSeen is when a session was last named, and whether any request
// has named it since its initialize.
type sessionSeen struct {
	at   time.Time
	used bool
}

// unusedTTL is how long a session nothing has named since its initialize
// lives: a client sends notifications/initialized at once.
const unusedTTL = time.Minute

func newSessions(ttl time.Duration) *sessions {
	return &sessions{ttl: ttl, now: time.Now, last: map[string]sessionSeen{}}
}

func (s *sessions) Generate() string {
	id := "vc-" + uuid.NewString()
	s.mu.Lock()
	s.last[id] = sessionSeen{at: s.now()}
	s.mu.Unlock()
	return id
}

// expired reports whether a session last seen as seen is gone at now.
func (s *sessions) expired(seen sessionSeen, now time.Time) bool {
	ttl := s.ttl
	if !seen.used {
		ttl = min(ttl, unusedTTL)
	}
	return now.Sub(seen.at) > ttl
}

var errUnknownSession = errors.New("unknown or expired session")

// Validate accepts a live session and records its activity. An expired or
// unknown one is an error (404: the client starts a new session).
func (s *sessions) Validate(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, ok := s.last[id]
	if !ok {
		return false, errUnknownSession
	}
	now := s.now()
	if s.expired(seen, now) {
		delete(s.last, id)
		return false, errUnknownSession
	}
	s.last[id] = sessionSeen{at: now, used: true}
	return false, nil
}

func (s *sessions) Terminate(id string) (bool, error) {
	s.mu.Lock()
	delete(s.last, id)
	s.mu.Unlock()
	return false, nil
}

// live counts sessions that have not expired, dropping the expired ones.
func (s *sessions) live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, seen := range s.last {
		if s.expired(seen, now) {
			delete(s.last, id)
		}
	}
	return len(s.last)
}

// sessionCap refuses to start a session beyond max live ones: a Streamable
// HTTP POST without Mcp-Session-Id (an initialize) or a new legacy SSE
// stream gets 503 with Retry-After. Only an initialize starts a Streamable
// HTTP session: a GET stream without Mcp-Session-Id gets 400, and one with
// an id no initialize gave (or an expired one) 404, as the MCP spec says
// (mcp-go would open a session for it that outlives the stream).
func sessionCap(next http.Handler, st *sessions, max int, log *slog.Logger) http.Handler {
	var sse atomic.Int64
	refuse := func(w http.ResponseWriter, r *http.Request) {
		log.Warn("session refused: too many live sessions", "path", r.URL.Path, "max", max)
		w.Header().Set("Retry-After", "60")
		http.Error(w, fmt.Sprintf("too many live sessions (max_sessions %d); idle ones expire, retry later", max), http.StatusServiceUnavailable)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/mcp" && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "":
			if st.live()+int(sse.Load()) >= max {
				refuse(w, r)
				return
			}
			// mcp-go mints the session before it answers the initialize,
			// and sends its id with an error too: such a session was never
			// opened, and counts no more.
			iw := &initWriter{ResponseWriter: w}
			next.ServeHTTP(iw, r)
			if id := w.Header().Get("Mcp-Session-Id"); id != "" && iw.failed() {
				_, _ = st.Terminate(id)
				log.Debug("initialize failed; its session is dropped", "session", id, "status", iw.status)
			}
			return
		case r.URL.Path == "/mcp" && r.Method == http.MethodGet && !mcpgo.IsModernProtocol(r.Header.Get(mcpgo.HeaderProtocolVersion)):
			// (2026-07-28 clients have no GET stream; mcp-go says so.)
			id := r.Header.Get("Mcp-Session-Id")
			if id == "" {
				log.Warn("GET stream refused: no Mcp-Session-Id", "remote", r.RemoteAddr)
				http.Error(w, "GET /mcp needs the Mcp-Session-Id header of a session: POST an initialize first", http.StatusBadRequest)
				return
			}
			if _, err := st.Validate(id); err != nil {
				http.Error(w, "unknown or expired session: POST an initialize for a new one", http.StatusNotFound)
				return
			}
		case r.URL.Path == "/sse" && r.Method == http.MethodGet:
			if st.live()+int(sse.Add(1)) > max {
				sse.Add(-1)
				refuse(w, r)
				return
			}
			defer sse.Add(-1)
		}
		next.ServeHTTP(w, r)
	})
}

// maxInitAnswer is how much of an initialize's answer initWriter keeps: an
// error is far shorter; a longer answer is a result.
const maxInitAnswer = 64 << 10

// initWriter passes an initialize's answer on and keeps its status and the
// start of its body, to tell whether it opened a session.
type initWriter struct {
	http.ResponseWriter
	status int
	head   []byte
}

func (w *initWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *initWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if room := maxInitAnswer - len(w.head); room > 0 {
		w.head = append(w.head, p[:min(len(p), room)]...)
	}
	return w.ResponseWriter.Write(p)
}

func (w *initWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *initWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// failed reports whether the answer holds no initialize result: an HTTP
// error, or a JSON-RPC error (as JSON, or as the last event of a stream).
func (w *initWriter) failed() bool {
	if w.status != http.StatusOK {
		return true
	}
	if len(w.head) == maxInitAnswer {
		return false
	}
	body := w.head
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		i := bytes.LastIndex(body, []byte("data:"))
		if i < 0 {
			return true
		}
		body, _, _ = bytes.Cut(body[i+len("data:"):], []byte("\n"))
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
	}
	return json.Unmarshal(body, &answer) != nil || len(answer.Result) == 0 || string(answer.Result) == "null"
}

// lineCap copies newline-delimited JSON-RPC from in to the returned reader,
// replacing each line longer than max bytes by a JSON-RPC error written to
// out (through the same lock as every other write): the line is read
// through and dropped, never held whole in memory, and serving goes on.
// The error carries the request's id wherever it stands in the line
// (clients that put it after the params are common), so the client's
// wait ends.
func lineCap(ctx context.Context, in io.Reader, out *lockedWriter, max int, log *slog.Logger) *io.PipeReader {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, answer, n, err := ReadRequestLine(br, max)
			if answer != nil {
				log.Warn("stdio: request line over the limit dropped", "bytes", n, "limit", max)
				out.writeLine(answer)
			}
			if len(line) > 0 {
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// ReadRequestLine reads one line, its newline included, from br (as
// bufio.Reader.ReadBytes does). A line over max bytes (max > 0) is read
// through without being kept: line is nil, n is its length, and answer is
// the JSON-RPC error to send back (without a newline), under the
// request's own id. lineCap reads the stdio server's lines with it, and
// the shared server's bridge the host's.
func ReadRequestLine(br *bufio.Reader, max int) (line, answer []byte, n int64, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		if max <= 0 || len(line)+len(chunk) <= max {
			line = append(line, chunk...)
			if errors.Is(rerr, bufio.ErrBufferFull) {
				continue
			}
			return line, nil, int64(len(line)), rerr
		}
		var ids idScanner
		ids.feed(line)
		ids.feed(chunk)
		n = int64(len(line) + len(chunk))
		for errors.Is(rerr, bufio.ErrBufferFull) {
			chunk, rerr = br.ReadSlice('\n')
			ids.feed(chunk)
			n += int64(len(chunk))
		}
		return nil, oversizeError(ids.id(), n, max), n, rerr
	}
}

// idScanner finds the value of a JSON object's top-level "id" member in
// bytes fed to it piece by piece, holding nothing but that value (at most
// maxIDBytes): an "id" inside the params (a message's own) is not it.
type idScanner struct {
	depth    int
	inString bool
	escaped  bool
	// expectKey is set where a member name may start (after '{' or ','
	// of the top-level object); key collects that name's first bytes.
	expectKey, inKey, keyIsID, keyLong bool
	key                                []byte
	// inValue is set while the top-level id's value is read into value.
	inValue, valueDone bool
	value              []byte
	overflow           bool
}

// maxIDBytes bounds the id kept; maxKeyBytes the member names compared.
const (
	maxIDBytes  = 4096
	maxKeyBytes = 32
)

// keyIs reports whether the member name read (escapes and all) is name.
func (s *idScanner) keyIs(name string) bool {
	if !bytes.ContainsRune(s.key, '\\') {
		return string(s.key) == name
	}
	var got string
	return json.Unmarshal(append(append([]byte{'"'}, s.key...), '"'), &got) == nil && got == name
}

func (s *idScanner) feed(b []byte) {
	for _, c := range b {
		if s.inValue {
			if s.inString || c != ',' && c != '}' || s.depth > 1 {
				if len(s.value) < maxIDBytes {
					s.value = append(s.value, c)
				} else {
					s.overflow = true
				}
			}
		}
		if s.inString {
			switch {
			case s.escaped:
				s.escaped = false
			case c == '\\':
				s.escaped = true
			case c == '"':
				s.inString = false
				if s.inKey {
					s.inKey = false
					s.keyIsID = !s.keyLong && s.keyIs("id")
				}
				continue
			}
			if s.inKey {
				if len(s.key) < maxKeyBytes {
					s.key = append(s.key, c) // raw, escapes and all: see keyIs
				} else {
					s.keyLong = true
				}
			}
			continue
		}
		switch c {
		case '"':
			s.inString = true
			if s.depth == 1 && s.expectKey {
				s.expectKey, s.inKey, s.keyIsID, s.keyLong, s.key = false, true, false, false, s.key[:0]
			}
		case '{', '[':
			s.depth++
			if s.depth == 1 && c == '{' {
				s.expectKey = true
			}
		case '}', ']':
			if s.depth == 1 && s.inValue {
				s.inValue, s.valueDone = false, true
			}
			s.depth--
		case ':':
			if s.depth == 1 && s.keyIsID {
				// The last id wins, as JSON decoders take it.
				s.inValue, s.valueDone, s.overflow, s.value = true, false, false, s.value[:0]
			}
		case ',':
			if s.depth == 1 {
				if s.inValue {
					s.inValue, s.valueDone = false, true
				}
				s.expectKey, s.keyIsID = true, false
			}
		}
	}
}

// id is the top-level id found, or null.
func (s *idScanner) id() json.RawMessage {
	v := bytes.TrimSpace(s.value)
	if !s.valueDone || s.overflow || !json.Valid(v) || len(v) == 0 || v[0] == '{' || v[0] == '[' {
		return json.RawMessage("null")
	}
	return json.RawMessage(v)
}

// oversizeError is the JSON-RPC answer to a dropped line.
func oversizeError(id json.RawMessage, n int64, max int) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32600, "message": fmt.Sprintf(
			"request is %d bytes; the limit is %d bytes per line (max_line_bytes): send fewer or smaller messages per call", n, max)},
	})
	return b
}

// lockedWriter serialises whole writes: mcp-go writes each message with
// one Write call, and lineCap's errors go through the same lock.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) writeLine(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(append(b, '\n'))
}
