package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/internal/hostguard"
	"github.com/vc-mcp/vc-mcp/mcp"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/markdown"
	"github.com/vc-mcp/vc-mcp/share"
)

// lockTimeout bounds how long serve waits for another process to release
// the data directory: a second server should fail fast, naming the holder.
const lockTimeout = 250 * time.Millisecond

// defaultMemoryLimit is the Go heap's soft limit when GOMEMLIMIT is not set:
// the garbage collector works harder near it instead of letting the heap
// double, which keeps a long-running server with a full-size embedding
// model under ~300 MB resident.
const defaultMemoryLimit = 200 << 20

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	cfg, rest, err := loadConfig("serve", args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("serve: unexpected argument %q (flags start with --)", rest[0])
	}
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	defer closeLog()

	// A data directory asked to be read-only, or one in which no shared
	// daemon could keep its socket and log, is served from this process;
	// one this user may not write but which a server already serves (its
	// owner's) is shared as usual.
	shareable := !readOnlyDir(cfg) || (!cfg.ReadOnly && served(ctx, cfg))
	if cfg.HTTPAddr == "" && os.Getenv("VC_SHARE") != "off" && shareable {
		// Every stdio host shares one server per data directory.
		return runBridge(ctx, cfg, args, stdin, stdout, log)
	}

	var httpListener net.Listener
	var httpOpts mcp.HTTPOptions
	if cfg.HTTPAddr != "" {
		if httpOpts, err = httpOptions(cfg, log, stderr); err != nil {
			return err
		}
		// Check and bind before opening the store, so a bad address costs nothing.
		if httpListener, err = listen(cfg); err != nil {
			return err
		}
		defer httpListener.Close()
	}

	opts := memoryOptions(cfg, log)
	if opts.Scrubber, err = scrubberFor(cfg); err != nil {
		return err
	}
	sm, err := wireSeams(ctx, cfg, &opts, log)
	if err != nil {
		return err
	}
	defer sm.close()
	store, release, err := openShared(ctx, cfg, opts, httpListener != nil, log)
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.DataDir, err)
	}
	log.Info("memory opened", "data_dir", cfg.DataDir, "version", buildVersion())

	stopMirror := startMarkdownMirror(ctx, store, cfg, log)
	srv := mcp.NewServer(store, mcp.Options{Version: buildVersion(), Logger: log, Sampling: sm.sampling})
	if httpListener != nil {
		httpOpts.API = store // the REST API: /api/config, /api/status, /api/compact
		stopOwner := func() {}
		if !store.ReadOnly() {
			stopOwner = serveSocket(ctx, srv, cfg, "http", httpListener.Addr().String(), log)
		}
		release()
		err = serveHTTP(ctx, httpListener, srv, cfg, httpOpts, log, stderr)
		stopOwner()
	} else {
		err = mcp.ServeStdioWith(ctx, srv, stdin, stdout, mcp.StdioOptions{Logger: log, MaxLineBytes: cfg.MaxLineBytes})
	}
	stopMirror()
	if cerr := store.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close %s: %w", cfg.DataDir, cerr))
	}
	return err
}

// serverWarmConversations is how many of the conversations written last a
// serving process (serve, the shared daemon, the proxy) loads in the
// background once the store is open, so that the first recall after a
// start does not wait for its conversation to load (about 100 ms at
// 10,000 turns).
const serverWarmConversations = 4

func memoryOptions(cfg settings, log *slog.Logger) memory.Options {
	return memory.Options{
		Dir:                  storeDir(cfg),
		DefaultConversation:  cfg.DefaultConversation,
		ContextWindow:        cfg.ContextWindow,
		SoftThreshold:        cfg.SoftThreshold,
		HardThreshold:        cfg.HardThreshold,
		ProtectedTurns:       cfg.ProtectedTurns,
		MaxMessageBytes:      cfg.MaxMessageBytes,
		SplitMinTurns:        cfg.SplitMinTurns,
		SplitMaxShare:        cfg.SplitMaxShare,
		MaxSplitsPerTurn:     cfg.MaxSplitsPerTurn,
		ContextHintMaxTokens: cfg.ContextHintMaxTokens,
		LockTimeout:          lockTimeout,
		Logger:               log,
		Replacement: memory.ReplacementOptions{
			Disabled: !cfg.SummaryReplacement, KeepLast: cfg.KeepLast, UseSimplePrompt: cfg.UseSimplePrompt,
			NoNotice: !cfg.NotifyUser, SummaryPrompt: cfg.SummaryPrompt, SimplePrompt: cfg.SimplePrompt,
		},
		HintStyle:     memory.HintStyle(cfg.ContextHintStyle),
		ContextItems:  cfg.ContextItems,
		ContextSearch: cfg.ContextSearch,
		Assembly:      cfg.Assembly,
		Shared:        sharedLogs(cfg),
		ReadOnly:      cfg.ReadOnly, // and memory.Open finds a directory it may not write
	}
}

// served reports whether a shared server answers for cfg's data directory.
func served(ctx context.Context, cfg settings) bool {
	_, err := share.Status(ctx, cfg.DataDir)
	return err == nil
}

// readOnlyDir reports whether this process keeps nothing in cfg's data
// directory: it was asked to be read-only (read_only), or it may not
// create files there. It is for the decisions taken before the store
// opens: whether to start or join a shared server (its socket and log),
// to take the directory over (the hold file), to record LLM usage. Whether
// the store can write its logs is for the store to find when it opens
// (memory.NotWritable, a question per log); after that, ask it
// (Store.ReadOnly).
func readOnlyDir(cfg settings) bool {
	return cfg.ReadOnly || memory.NotWritableDir(storeDir(cfg)) != nil
}

// listen binds the HTTP address, refusing a non-loopback one unless
// allow_remote is set: the server has no authentication of its own.
func listen(cfg settings) (net.Listener, error) {
	host, _, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("http: %q is not host:port (e.g. 127.0.0.1:5757): %w", cfg.HTTPAddr, err)
	}
	if !cfg.AllowRemote && !hostguard.LoopbackHost(host) {
		return nil, fmt.Errorf("http: refusing to listen on %s, which is not a loopback address; use 127.0.0.1:PORT, or --allow-remote with --auth-token-file", cfg.HTTPAddr)
	}
	l, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	return l, nil
}

func serveHTTP(ctx context.Context, l net.Listener, srv *mcpserver.MCPServer, cfg settings, opts mcp.HTTPOptions, log *slog.Logger, stderr io.Writer) error {
	h := mcp.NewHTTPHandler(srv, opts)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	base := "http://" + l.Addr().String()
	fmt.Fprintf(stderr, "vc-mcp: listening on %s (Streamable HTTP %s/mcp, legacy SSE %s/sse, REST API %s/api/); data in %s\n", base, base, base, base, cfg.DataDir)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := errors.Join(h.Shutdown(shutdownCtx), hs.Shutdown(shutdownCtx))
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		log.Warn("http shutdown", "err", err)
	}
	return nil
}

// newLogger logs JSON lines to stderr or to log_file. In stdio mode stdout
// carries JSON-RPC only, so nothing here may touch it.
func newLogger(cfg settings, stderr io.Writer) (*slog.Logger, func(), error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return nil, nil, fmt.Errorf("log_level: %w", err)
	}
	w, closeFn := stderr, func() {}
	if cfg.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.LogFile), 0o755); err != nil {
			return nil, nil, fmt.Errorf("log_file: %w", err)
		}
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("log_file: %w", err)
		}
		w, closeFn = f, func() { f.Close() }
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})), closeFn, nil
}

// startMarkdownMirror runs the Markdown mirror when markdown_mirror is set;
// the returned function stops it after it has written what is pending (call
// it before closing the store).
func startMarkdownMirror(ctx context.Context, store *memory.Store, cfg settings, log *slog.Logger) func() {
	if cfg.MarkdownMirror == "" {
		return func() {}
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	m := &markdown.Mirror{Src: store, Dir: cfg.MarkdownMirror, Logger: log}
	go func() {
		defer close(done)
		if err := m.Run(mctx); err != nil {
			log.Error("markdown mirror stopped", "dir", cfg.MarkdownMirror, "err", err)
		}
	}()
	log.Info("markdown mirror", "dir", cfg.MarkdownMirror)
	return func() {
		cancel()
		<-done
	}
}
