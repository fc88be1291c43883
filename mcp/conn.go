package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// ConnOptions configure ServeConn.
type ConnOptions struct {
	// SessionID names the session; it must be unique within the server.
	SessionID string
	// Logger receives transport errors (default: discard).
	Logger *slog.Logger
	// OnInitialize is called with the client's info once it has sent
	// initialize.
	OnInitialize func(mcpgo.Implementation)
	// MaxConcurrent bounds the requests handled at once (default 16).
	MaxConcurrent int
	// Drain is how long requests already started may run once ctx is
	// cancelled or the connection ends (default 30 s).
	Drain time.Duration
}

// ServeConn serves s over newline-delimited JSON-RPC on conn, as one MCP
// session of its own, until conn ends or ctx is cancelled. Unlike mcp-go's
// stdio transport (whose session is a package-level singleton), any number
// of ServeConn sessions can share one server: each has its own client info,
// log level, sampling requests and cancellation scope. Cancelling ctx stops
// reading; requests already started are answered (see Drain).
func ServeConn(ctx context.Context, s *mcpserver.MCPServer, conn io.ReadWriteCloser, opts ConnOptions) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 16
	}
	sess := newConnSession(opts, conn)
	if err := s.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("register session %s: %w", sess.id, err)
	}
	defer s.UnregisterSession(context.WithoutCancel(ctx), sess.id)
	// Handlers outlive ctx by up to Drain: a stopping server answers what
	// it has started instead of failing it.
	hctx, hcancel := context.WithCancel(s.WithContext(context.WithoutCancel(ctx), sess))
	defer hcancel()
	stopReading := context.AfterFunc(ctx, func() {
		if d, ok := conn.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Now()) == nil {
			return
		}
		conn.Close()
	})
	defer stopReading()
	defer conn.Close()

	var notifier sync.WaitGroup
	defer notifier.Wait()
	defer hcancel()
	notifier.Go(func() {
		for {
			select {
			case n := <-sess.notifications:
				if err := sess.write(n); err != nil {
					log.Debug("conn: notification not sent", "session", sess.id, "err", err)
				}
			case <-hctx.Done():
				return
			}
		}
	})

	var handlers sync.WaitGroup
	sem := make(chan struct{}, opts.MaxConcurrent)
	r := bufio.NewReader(conn)
	var readErr error
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && ctx.Err() == nil {
			sess.dispatch(hctx, s, line, sem, &handlers, log)
		}
		if err != nil {
			readErr = err
			break
		}
	}
	drained := make(chan struct{})
	go func() { handlers.Wait(); close(drained) }()
	drain := opts.Drain
	if drain <= 0 {
		drain = 30 * time.Second
	}
	select {
	case <-drained:
	case <-time.After(drain):
		log.Warn("conn: requests still running after the drain period; cancelling them", "session", sess.id)
		hcancel()
		<-drained
	}
	if errors.Is(readErr, io.EOF) || ctx.Err() != nil || errors.Is(readErr, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("conn %s: %w", sess.id, readErr)
}

type samplingAnswer struct {
	result *mcpgo.CreateMessageResult
	err    error
}

// connSession is one connection's MCP session.
type connSession struct {
	id            string
	notifications chan mcpgo.JSONRPCNotification
	initialized   atomic.Bool
	level         atomic.Value // mcpgo.LoggingLevel
	onInit        func(mcpgo.Implementation)

	infoMu  sync.RWMutex
	info    mcpgo.Implementation
	infoSet bool
	caps    mcpgo.ClientCapabilities

	wmu sync.Mutex
	w   io.Writer

	nextID    atomic.Int64
	pendingMu sync.Mutex
	pending   map[int64]chan samplingAnswer
}

var (
	_ mcpserver.ClientSession         = (*connSession)(nil)
	_ mcpserver.SessionWithLogging    = (*connSession)(nil)
	_ mcpserver.SessionWithClientInfo = (*connSession)(nil)
	_ mcpserver.SessionWithSampling   = (*connSession)(nil)
)

func (c *connSession) SessionID() string { return c.id }
func (c *connSession) NotificationChannel() chan<- mcpgo.JSONRPCNotification {
	return c.notifications
}
func (c *connSession) Initialize() {
	c.level.Store(mcpgo.LoggingLevelError)
	c.initialized.Store(true)
}
func (c *connSession) Initialized() bool                    { return c.initialized.Load() }
func (c *connSession) SetLogLevel(level mcpgo.LoggingLevel) { c.level.Store(level) }
func (c *connSession) GetLogLevel() mcpgo.LoggingLevel {
	if l, ok := c.level.Load().(mcpgo.LoggingLevel); ok {
		return l
	}
	return mcpgo.LoggingLevelError
}

func (c *connSession) GetClientInfo() mcpgo.Implementation {
	c.infoMu.RLock()
	defer c.infoMu.RUnlock()
	return c.info
}

// SetClientInfo records the client's info. mcp-go calls it at initialize
// and, for clients of the stateless protocol revisions, with every request
// (each carries the client's info): onInit runs only when the info is new.
func (c *connSession) SetClientInfo(info mcpgo.Implementation) {
	c.infoMu.Lock()
	changed := !c.infoSet || !reflect.DeepEqual(c.info, info)
	c.info, c.infoSet = info, true
	c.infoMu.Unlock()
	if changed && c.onInit != nil {
		c.onInit(info)
	}
}

func (c *connSession) GetClientCapabilities() mcpgo.ClientCapabilities {
	c.infoMu.RLock()
	defer c.infoMu.RUnlock()
	return c.caps
}

func (c *connSession) SetClientCapabilities(caps mcpgo.ClientCapabilities) {
	c.infoMu.Lock()
	defer c.infoMu.Unlock()
	c.caps = caps
}

// write sends one JSON-RPC message as a line.
func (c *connSession) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(b)
	return err
}

// newConnSession makes a connection's session. Its requests to the client
// (sampling) are numbered from a random start, not from 1: a host behind
// the shared server's bridge keeps one conversation with it across server
// restarts, and its late answer to a request of the server before must not
// match a request of the server after.
func newConnSession(opts ConnOptions, w io.Writer) *connSession {
	sess := &connSession{
		id:            opts.SessionID,
		w:             w,
		notifications: make(chan mcpgo.JSONRPCNotification, 100),
		pending:       map[int64]chan samplingAnswer{},
		onInit:        opts.OnInitialize,
	}
	sess.nextID.Store(rand.Int64N(1 << 52)) // ids stay exact in any JSON number
	return sess
}

// RequestSampling asks this session's client for a completion.
func (c *connSession) RequestSampling(ctx context.Context, req mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	id := c.nextID.Add(1)
	ch := make(chan samplingAnswer, 1)
	c.pendingMu.Lock()
	c.pending[id] = ch
	c.pendingMu.Unlock()
	defer func() {
		c.pendingMu.Lock()
		delete(c.pending, id)
		c.pendingMu.Unlock()
	}()
	msg := struct {
		JSONRPC string                    `json:"jsonrpc"`
		ID      int64                     `json:"id"`
		Method  string                    `json:"method"`
		Params  mcpgo.CreateMessageParams `json:"params"`
	}{mcpgo.JSONRPC_VERSION, id, string(mcpgo.MethodSamplingCreateMessage), req.CreateMessageParams}
	if err := c.write(msg); err != nil {
		return nil, fmt.Errorf("send sampling request: %w", err)
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case a := <-ch:
		return a.result, a.err
	}
}

// header is what dispatch needs to know of a message.
type header struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *connSession) dispatch(ctx context.Context, s *mcpserver.MCPServer, line []byte, sem chan struct{}, wg *sync.WaitGroup, log *slog.Logger) {
	var h header
	if err := json.Unmarshal(line, &h); err != nil {
		if len(bytes.TrimSpace(line)) == 0 {
			return
		}
		_ = c.write(mcpgo.NewJSONRPCError(mcpgo.NewRequestId(nil), mcpgo.PARSE_ERROR, "Parse error: each line must be one JSON-RPC message", nil))
		return
	}
	if h.Method == "" && len(h.ID) > 0 {
		// A client's answer to one of our requests.
		if id, err := strconv.ParseInt(string(h.ID), 10, 64); err == nil {
			c.pendingMu.Lock()
			ch := c.pending[id]
			c.pendingMu.Unlock()
			if ch != nil {
				var a samplingAnswer
				if h.Error != nil {
					a.err = fmt.Errorf("client refused sampling: %s (code %d)", h.Error.Message, h.Error.Code)
				} else {
					var res mcpgo.CreateMessageResult
					if err := json.Unmarshal(h.Result, &res); err != nil {
						a.err = fmt.Errorf("client's sampling answer: %w", err)
					} else {
						a.result = &res
					}
				}
				select {
				case ch <- a:
				default: // a second answer to one request: the first stands
				}
				return
			}
		}
		log.Debug("conn: answer to no pending request", "session", c.id, "id", string(h.ID))
		return
	}
	raw := json.RawMessage(append([]byte(nil), line...))
	handle := func() {
		// mcp-go recovers tool and resource handlers only: a panic in a
		// prompt, a completion or a hook must not end every host's
		// session with the process.
		defer func() {
			if p := recover(); p != nil {
				log.Error("conn: a request's handler panicked", "session", c.id, "method", h.Method, "panic", fmt.Sprint(p))
				var id mcpgo.RequestId
				if len(h.ID) == 0 || json.Unmarshal(h.ID, &id) != nil {
					return
				}
				_ = c.write(mcpgo.NewJSONRPCError(id, mcpgo.INTERNAL_ERROR, h.Method+" failed on a bug in vc-mcp (details in the server log); other requests are not affected, and nothing stored was lost", nil))
			}
		}()
		resp := s.HandleMessage(ctx, raw)
		if resp != nil {
			if err := c.write(resp); err != nil {
				log.Debug("conn: response not sent", "session", c.id, "err", err)
			}
		}
	}
	if len(h.ID) == 0 || h.Method == string(mcpgo.MethodInitialize) {
		// Notifications (cancellation among them) and initialize are
		// handled in order.
		handle()
		return
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	wg.Go(func() {
		defer func() { <-sem }()
		handle()
	})
}
