package share

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/mcp"
	"github.com/vc-mcp/vc-mcp/memory"
)

// RestartedMessage answers a request that was in flight when the shared
// server went away and cannot safely be sent twice.
const RestartedMessage = "vc-mcp restarted its shared server; retry"

// replayID is the id of the bridge's own initialize, replayed to each new
// owner; its answer is not the host's and is swallowed.
var replayID = json.RawMessage(`"vc-mcp-bridge-initialize"`)

// Bridge connects one stdio host to the shared owner. It answers the host's
// initialize itself (the same answer the owner would give: Local is built
// like the owner's server), so the host never waits for an owner to start,
// and replays that initialize to every owner it connects to.
type Bridge struct {
	Config Config
	// Local answers initialize; only its initialize handler and tool
	// annotations are used.
	Local *mcpserver.MCPServer
	Log   *slog.Logger
	// MaxLineBytes caps a line from the host (0: no cap), as the stdio
	// server's max_line_bytes: a longer one is read through without being
	// kept and answered with an error.
	MaxLineBytes int

	outMu sync.Mutex
	out   io.Writer

	nonceOnce sync.Once
	nonceVal  string

	mu          sync.Mutex
	cond        *sync.Cond
	conn        *Conn // nil while (re)connecting
	refused     error // set while no usable owner can be had
	closed      bool
	initLine    []byte // the host's initialize with replayID
	initialized bool
	poke        chan struct{}
	// subs are the resources the host subscribed to, and logLevel its
	// last logging/setLevel params: session state a new owner is given
	// again, as the initialize is.
	subs     map[string]bool
	logLevel json.RawMessage

	// ifMu guards inflight; it is taken after mu, never before, and the
	// owner reader takes only it, so a slow owner never blocks its own
	// answers.
	ifMu     sync.Mutex
	inflight map[string]pendingReq
}

type pendingReq struct {
	id     json.RawMessage
	line   []byte
	method string
	tool   string
}

// message is what the bridge reads of each line.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// tool is the tool a tools/call names, if its params say.
func (m message) tool() string {
	var p struct {
		Name string `json:"name"`
	}
	if m.Method != string(mcpgo.MethodToolsCall) || json.Unmarshal(m.Params, &p) != nil {
		return ""
	}
	return p.Name
}

// Run forwards stdin to the owner and the owner's messages to stdout until
// stdin ends or ctx is cancelled.
func (b *Bridge) Run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	if b.Log == nil {
		b.Log = slog.New(slog.DiscardHandler)
	}
	b.Config.Log = b.Log
	b.out = stdout
	b.cond = sync.NewCond(&b.mu)
	b.inflight = map[string]pendingReq{}
	b.poke = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { b.supervise(ctx) })
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.closed = true
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	// A read from stdin cannot be interrupted: on cancellation (SIGTERM)
	// Run returns without waiting for it.
	errc := make(chan error, 1)
	go func() { errc <- b.readHost(ctx, stdin) }()
	var err error
	select {
	case err = <-errc:
		if err == nil { // the host closed its input: answer what it sent
			b.drain(ctx, drainWait)
		}
	case <-ctx.Done():
	}
	cancel()
	b.mu.Lock()
	b.closed = true
	if b.conn != nil {
		b.conn.Close()
	}
	b.cond.Broadcast()
	b.mu.Unlock()
	return err
}

// idKey is a JSON-RPC id as the owner writes it back: the server decodes
// and encodes ids again (1.0 comes back as 1, "\u0061" as "a"), so the
// request in flight is found by the id's value, not by its bytes.
func idKey(raw json.RawMessage) string {
	if plainID(raw) { // most hosts' ids: written back byte for byte
		return string(raw)
	}
	var id mcpgo.RequestId
	if err := json.Unmarshal(raw, &id); err != nil {
		return string(raw)
	}
	b, err := json.Marshal(id)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// plainID: an id the owner writes back with the same bytes, a small
// integer without sign or leading zero, or a string of letters, digits
// and -_.: (nothing to escape, not even for HTML).
func plainID(raw []byte) bool {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		for _, c := range raw[1 : n-1] {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
				return false
			}
		}
		return true
	}
	if len(raw) == 0 || len(raw) > 15 || raw[0] == '0' && len(raw) > 1 {
		return false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// replayPrefix begins the ids of the requests a bridge replays to a new
// owner on its own (replayID among them): their answers are not the host's.
var replayPrefix = []byte(`"vc-mcp-bridge-`)

// recordSession keeps what a new owner must be told again of the host's
// session: its resource subscriptions and its log level. b.mu is held.
func (b *Bridge) recordSession(m message) {
	switch m.Method {
	case string(mcpgo.MethodResourcesSubscribe), string(mcpgo.MethodResourcesUnsubscribe):
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.URI == "" {
			return
		}
		if b.subs == nil {
			b.subs = map[string]bool{}
		}
		if m.Method == string(mcpgo.MethodResourcesSubscribe) {
			b.subs[p.URI] = true
		} else {
			delete(b.subs, p.URI)
		}
	case string(mcpgo.MethodSetLogLevel):
		b.logLevel = append(json.RawMessage(nil), m.Params...)
	}
}

// replaySession sends a new owner the host's subscriptions and log level,
// under the bridge's own ids. b.mu is held.
func (b *Bridge) replaySession() {
	n := 0
	send := func(method string, params any) {
		n++
		line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("vc-mcp-bridge-replay-%d", n), "method": method, "params": params})
		if err == nil {
			b.send(append(line, '\n'))
		}
	}
	if b.logLevel != nil {
		send(string(mcpgo.MethodSetLogLevel), b.logLevel)
	}
	for _, uri := range slices.Sorted(maps.Keys(b.subs)) {
		send(string(mcpgo.MethodResourcesSubscribe), map[string]string{"uri": uri})
	}
}

// drainWait bounds how long a bridge whose host closed its input waits
// for the answers to the requests it had sent.
var drainWait = 30 * time.Second

// drain waits until every request sent to an owner is answered, ctx ends,
// or wait passes: a host (or a script: printf ... | vc-mcp serve) that
// writes its requests and closes its input still gets their answers.
func (b *Bridge) drain(ctx context.Context, wait time.Duration) {
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		b.ifMu.Lock()
		n := len(b.inflight)
		b.ifMu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	b.Log.Warn("the host closed its input; answers still owed were not received in time", "waited", wait)
}

func (b *Bridge) readHost(ctx context.Context, stdin io.Reader) error {
	r := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, answer, n, err := mcp.ReadRequestLine(r, b.MaxLineBytes)
		if answer != nil {
			b.Log.Warn("stdio: request line over the limit dropped", "bytes", n, "limit", b.MaxLineBytes)
			b.writeOut(append(answer, '\n'))
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if len(line) == 0 || line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			b.fromHost(ctx, line)
		}
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("stdin: %w", err)
		}
	}
}

// fromHost handles one line from the host. A request is recorded as in
// flight only when it is written to an owner, so a reconnection replays
// exactly the requests that owner may not have answered.
func (b *Bridge) fromHost(ctx context.Context, line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		b.writeOut(mcpgo.NewJSONRPCError(mcpgo.NewRequestId(nil), mcpgo.PARSE_ERROR, "Parse error: each line must be one JSON-RPC message", nil))
		return
	}
	isRequest := m.Method != "" && len(m.ID) > 0
	switch m.Method {
	case string(mcpgo.MethodInitialize):
		b.writeOut(b.Local.HandleMessage(ctx, line))
		if rewritten, err := withID(line, replayID); err == nil {
			line = rewritten
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.initLine, b.initialized = line, false
		if b.conn != nil {
			b.send(line)
		}
		return
	case string(mcpgo.MethodNotificationInitialized):
		b.mu.Lock()
		defer b.mu.Unlock()
		b.initialized = true
		if b.conn != nil {
			b.send(line)
		}
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.conn == nil && b.refused == nil && !b.closed {
		b.cond.Wait()
	}
	switch {
	case b.closed:
		return
	case b.conn == nil:
		if isRequest {
			b.writeOut(errorResponse(m.ID, b.refused.Error()))
		}
		select {
		case b.poke <- struct{}{}:
		default:
		}
		return
	}
	if isRequest && m.tool() == "compact_context" {
		line = b.stampMessageIDs(m, line)
	}
	b.recordSession(m)
	if isRequest {
		b.ifMu.Lock()
		b.inflight[idKey(m.ID)] = pendingReq{id: m.ID, line: line, method: m.Method, tool: m.tool()}
		b.ifMu.Unlock()
	}
	b.send(line)
}

// send writes to the current owner, with b.mu held. A failed write is left
// to the owner reader, which sees the connection end.
func (b *Bridge) send(line []byte) {
	if _, err := b.conn.Write(line); err != nil {
		b.Log.Debug("write to the shared server failed", "err", err)
		b.conn.Close()
	}
}

func (b *Bridge) writeOut(msg any) {
	if msg == nil {
		return
	}
	var line []byte
	switch v := msg.(type) {
	case []byte:
		line = v
	default:
		var err error
		if line, err = json.Marshal(v); err != nil {
			b.Log.Error("encode a message for the host", "err", err)
			return
		}
		line = append(line, '\n')
	}
	b.outMu.Lock()
	defer b.outMu.Unlock()
	if _, err := b.out.Write(line); err != nil {
		b.Log.Debug("write to the host failed", "err", err)
	}
}

// supervise keeps a connection to an owner: it connects (starting an owner
// if none runs), replays the host's initialize and the requests in flight,
// and starts over when the owner goes.
func (b *Bridge) supervise(ctx context.Context) {
	for ctx.Err() == nil {
		c, err := ConnectOrStart(ctx, b.Config)
		if err == nil && c.Hello.Version != b.Config.Version {
			c.Close()
			err = versionError(b.Config, c.Hello)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			b.Log.Error("no shared vc-mcp server", "err", err)
			b.refuse(err)
			select {
			case <-ctx.Done():
				return
			case <-b.poke:
			case <-time.After(5 * time.Second):
			}
			continue
		}
		b.Log.Info("connected to the shared vc-mcp server", "pid", c.Hello.PID, "version", c.Hello.Version, "kind", c.Hello.Kind)
		if !b.install(c) {
			c.Close()
			return
		}
		b.readOwner(c)
		b.mu.Lock()
		b.conn = nil
		closed := b.closed
		b.mu.Unlock()
		c.Close()
		if closed {
			return
		}
		b.Log.Warn("the shared vc-mcp server went away; reconnecting", "pid", c.Hello.PID)
	}
}

// refuse answers every request in flight with err and keeps answering new
// ones so until an owner is usable again.
func (b *Bridge) refuse(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refused = err
	b.ifMu.Lock()
	defer b.ifMu.Unlock()
	for k, p := range b.inflight {
		delete(b.inflight, k)
		b.writeOut(errorResponse(p.id, err.Error()))
	}
	b.cond.Broadcast()
}

// install makes c the current owner after replaying the session to it.
func (b *Bridge) install(c *Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.conn, b.refused = c, nil
	if b.initLine != nil {
		b.send(b.initLine)
		if b.initialized {
			b.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
			b.replaySession()
		}
	}
	b.ifMu.Lock()
	defer b.ifMu.Unlock()
	for k, p := range b.inflight {
		if b.retryable(p) {
			b.Log.Info("retrying a request the previous server did not answer", "method", p.method, "tool", p.tool)
			b.send(p.line)
			continue
		}
		delete(b.inflight, k)
		b.writeOut(errorResponse(p.id, RestartedMessage))
	}
	b.cond.Broadcast()
	return true
}

// retryable: everything but tool calls reads; a tool call is sent again
// when the tool says it is read-only or idempotent (compact_context is by
// design: messages it already stored are not stored twice).
func (b *Bridge) retryable(p pendingReq) bool {
	if p.method != string(mcpgo.MethodToolsCall) {
		return true
	}
	t := b.Local.GetTool(p.tool)
	if t == nil {
		return false
	}
	a := t.Tool.Annotations
	return (a.ReadOnlyHint != nil && *a.ReadOnlyHint) || (a.IdempotentHint != nil && *a.IdempotentHint)
}

// readOwner copies the owner's messages to the host until the connection
// ends, settling the requests they answer.
func (b *Bridge) readOwner(c *Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if m, ok := peek(line); ok && m.Method == "" && len(m.ID) > 0 {
				if bytes.HasPrefix(m.ID, replayPrefix) { // answers to the bridge's own replays
					continue
				}
				b.ifMu.Lock()
				delete(b.inflight, idKey(m.ID))
				b.ifMu.Unlock()
			}
			b.writeOut(line)
		}
		if err != nil {
			return
		}
	}
}

func errorResponse(id json.RawMessage, msg string) any {
	return struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{-32000, msg}}
}

// withID returns line with its id replaced.
func withID(line []byte, id json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, err
	}
	m["id"] = id
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// stampMessageIDs gives every message of a compact_context call that has no
// id one unique to this bridge, this request, its place in the batch and
// its content, so
// that re-sending the call after a hand-over (the previous server may have
// stored it before it died) stores each message exactly once. Without ids,
// a single new message sent again would be kept as a repeated message.
func (b *Bridge) stampMessageIDs(m message, line []byte) []byte {
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil {
		return line
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(params["arguments"], &args) != nil {
		return line
	}
	var msgs []map[string]json.RawMessage
	if json.Unmarshal(args["messages"], &msgs) != nil {
		return line
	}
	changed := false
	for i, msg := range msgs {
		if msg == nil {
			continue
		}
		if _, ok := msg["id"]; ok {
			continue
		}
		// The message's own digest too: a host that reuses a request id
		// (JSON-RPC allows it once answered) sends other messages under it.
		raw, _ := json.Marshal(msg)
		sum := sha256.Sum256(raw)
		id, _ := json.Marshal(fmt.Sprintf("%s%s:%s:%d:%x", memory.StampedIDPrefix, b.nonce(), m.ID, i, sum[:4]))
		msg["id"] = id
		changed = true
	}
	if !changed {
		return line
	}
	var err error
	if args["messages"], err = json.Marshal(msgs); err != nil {
		return line
	}
	if params["arguments"], err = json.Marshal(args); err != nil {
		return line
	}
	var whole map[string]json.RawMessage
	if json.Unmarshal(line, &whole) != nil {
		return line
	}
	if whole["params"], err = json.Marshal(params); err != nil {
		return line
	}
	out, err := json.Marshal(whole)
	if err != nil {
		return line
	}
	if bytes.HasSuffix(line, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// nonce is this bridge's random id, made once.
func (b *Bridge) nonce() string {
	b.nonceOnce.Do(func() {
		var r [8]byte
		_, _ = rand.Read(r[:])
		b.nonceVal = hex.EncodeToString(r[:])
	})
	return b.nonceVal
}
