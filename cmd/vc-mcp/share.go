package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/vc-mcp/vc-mcp/mcp"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/llm"
	"github.com/vc-mcp/vc-mcp/share"
)

// shareConfig says how this process reaches (or starts) the shared server
// of cfg's data directory: the owner is started with the same settings
// flags as this command.
func shareConfig(cfg settings, args []string, log *slog.Logger) share.Config {
	ownerArgs := append([]string{"daemon"}, args...)
	ownerArgs = append(ownerArgs, "--data-dir", cfg.DataDir)
	return share.Config{DataDir: cfg.DataDir, Version: buildVersion(), OwnerArgs: ownerArgs, Env: os.Environ(), Log: log}
}

// runBridge is `vc-mcp serve` over stdio: the host's end of the shared
// server (see package share).
func runBridge(ctx context.Context, cfg settings, args []string, stdin io.Reader, stdout io.Writer, log *slog.Logger) error {
	lc := llmConfig(cfg, os.Getenv)
	sampling := lc.Enabled() && lc.WithDefaults().Provider == llm.ProviderSampling
	// Only the initialize answer and the tools' annotations of this server
	// are used: it has no memory behind it.
	local := mcp.NewServer(nil, mcp.Options{Version: buildVersion(), Logger: log, Sampling: sampling})
	b := &share.Bridge{Config: shareConfig(cfg, args, log), Local: local, Log: log, MaxLineBytes: cfg.MaxLineBytes}
	return b.Run(ctx, stdin, stdout)
}

// openShared opens the store. For `serve --http` (take true), a shared
// daemon holding the data directory is asked to hand it over: its stdio
// hosts reconnect to this process's socket. release lets new daemons start
// again once this process serves the socket.
func openShared(ctx context.Context, cfg settings, opts memory.Options, take bool, log *slog.Logger) (*memory.Store, func(), error) {
	opts.WarmConversations = serverWarmConversations
	store, err := memory.Open(ctx, opts)
	if err == nil || !take || readOnlyDir(cfg) || !errors.Is(err, memory.ErrLocked) {
		// A read-only server takes nothing over: its directory stays with
		// the server writing it.
		return store, func() {}, err
	}
	release, xerr := share.Exclusive(ctx, cfg.DataDir, buildVersion())
	if xerr != nil {
		return nil, nil, errors.Join(err, xerr)
	}
	log.Info("took the data directory over from the shared daemon; its hosts reconnect here")
	opts.LockTimeout = handOverTimeout
	store, err = memory.Open(ctx, opts)
	if err != nil {
		release()
		return nil, nil, err
	}
	return store, release, nil
}

// handOverTimeout bounds the wait for a stopped owner to release the lock.
const handOverTimeout = 30 * time.Second

// serveSocket makes this `serve --http` (kind "http") or proxy (kind
// "proxy") the data directory's shared server for stdio hosts too. A
// failure only costs the sharing, not HTTP.
func serveSocket(ctx context.Context, srv *mcpserver.MCPServer, cfg settings, kind, addr string, log *slog.Logger) (stop func()) {
	l, err := share.Listen(cfg.DataDir, log)
	if err != nil {
		log.Warn("stdio hosts cannot share this server", "err", err)
		return func() {}
	}
	owner := &share.Owner{Server: srv, Version: buildVersion(), Kind: kind, Addr: addr, DataDir: cfg.DataDir, Log: log}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := owner.Serve(ctx, l); err != nil {
			log.Warn("shared socket", "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// exclusive takes the data directory for a command that needs it alone
// (rebuild, summaries regenerate): a running shared daemon is stopped (Stop
// waits until it has exited), its hosts wait and reconnect when release is
// called. The command then opens the store through whileLocked.
func exclusive(ctx context.Context, cfg settings) (release func(), err error) {
	return share.Exclusive(ctx, cfg.DataDir, buildVersion())
}
