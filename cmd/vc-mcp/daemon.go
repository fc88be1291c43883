package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/vc-mcp/vc-mcp/mcp"
	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/share"
)

const daemonUsage = `usage:
  vc-mcp daemon status [flags]   who serves the data directory, since when, and which hosts are connected
  vc-mcp daemon stop [flags]     ask it to close its sessions and exit (hosts reconnect to a new one)
  vc-mcp daemon [flags]          run the shared server yourself (stdio hosts start it when needed)

The shared server exits after VC_DAEMON_IDLE (default 5m) without hosts.
Flags are the common settings (--data-dir, --config, ...).
`

// runDaemon runs "vc-mcp daemon ...".
func runDaemon(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	sub := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "run":
		return runOwner(ctx, args, stderr)
	case "status", "stop":
		cfg, rest, err := loadConfig("daemon "+sub, args, os.Getenv, stderr)
		if err != nil {
			return err
		}
		if len(rest) > 0 {
			return fmt.Errorf("daemon %s: unexpected argument %q", sub, rest[0])
		}
		if sub == "status" {
			return daemonStatus(ctx, cfg.DataDir, stdout)
		}
		h, err := share.Stop(ctx, cfg.DataDir, buildVersion())
		if errors.Is(err, share.ErrNoOwner) {
			fmt.Fprintf(stdout, "no vc-mcp process serves %s\n", cfg.DataDir)
			return nil
		}
		if err != nil {
			return fmt.Errorf("daemon stop: %w", err)
		}
		fmt.Fprintf(stdout, "stopped vc-mcp %s (pid %d) serving %s; connected hosts reconnect to a new server by themselves\n", h.Version, h.PID, cfg.DataDir)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, daemonUsage)
		return nil
	default:
		fmt.Fprint(stderr, daemonUsage)
		return fmt.Errorf("daemon: unknown subcommand %q (want status, stop or run)", sub)
	}
}

func daemonStatus(ctx context.Context, dataDir string, stdout io.Writer) error {
	h, err := share.Status(ctx, dataDir)
	if errors.Is(err, share.ErrNoOwner) {
		if memory.NotWritableDir(dataDir) != nil {
			fmt.Fprintf(stdout, "no vc-mcp process serves %s; it cannot be written, so each host serves it read-only from its own process\n", dataDir)
			return nil
		}
		fmt.Fprintf(stdout, "no vc-mcp process serves %s (the first host to start will start one)\n", dataDir)
		return nil
	}
	if err != nil {
		return fmt.Errorf("daemon status: %w", err)
	}
	what := h.Command()
	if h.Addr != "" {
		what += " " + h.Addr
	}
	fmt.Fprintf(stdout, "%s (pid %d, version %s) serves %s since %s (%s)\nsocket: %s\n",
		what, h.PID, h.Version, h.DataDir, h.Since.Local().Format(time.RFC3339), time.Since(h.Since).Round(time.Second), share.SocketPath(dataDir))
	fmt.Fprintf(stdout, "hosts connected: %d\n", len(h.Hosts))
	for _, host := range h.Hosts {
		name := host.Name
		if name == "" {
			name = "(not initialized yet)"
		}
		fmt.Fprintf(stdout, "  %s %s  session %s, bridge pid %d, since %s\n", name, host.Version, host.Session, host.PID, host.Connected.Local().Format(time.RFC3339))
	}
	return nil
}

// daemonIdle is the shared server's idle timeout: VC_DAEMON_IDLE or
// share.DefaultIdle.
func daemonIdle() (time.Duration, error) {
	v := os.Getenv("VC_DAEMON_IDLE")
	if v == "" {
		return share.DefaultIdle, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("VC_DAEMON_IDLE: want a duration such as 5m or 30s, got %q", v)
	}
	return d, nil
}

// ownerListening is called once a starting owner has the store and its
// socket (tests take the data directory at that moment).
var ownerListening = func() {}

// runOwner is the shared server: it opens the store (or exits quietly when
// another process holds it: that one is the owner) and serves every
// connection on the data directory's socket.
func runOwner(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, rest, err := loadConfig("daemon", args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("daemon: unexpected argument %q", rest[0])
	}
	idle, err := daemonIdle()
	if err != nil {
		return err
	}
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	log = log.With("daemon_pid", os.Getpid())
	if err := share.WaitHold(ctx, cfg.DataDir, log); err != nil {
		return nil
	}
	opts := memoryOptions(cfg, log)
	sm, err := wireSeams(ctx, cfg, &opts, log)
	if err != nil {
		return err
	}
	defer sm.close()
	opts.WarmConversations = serverWarmConversations
	store, err := memory.Open(ctx, opts)
	if errors.Is(err, memory.ErrLocked) {
		log.Info("another vc-mcp process owns the data directory; leaving it the job", "data_dir", cfg.DataDir)
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.DataDir, err)
	}
	l, err := share.Listen(cfg.DataDir, log)
	if err != nil {
		store.Close()
		return err
	}
	ownerListening()
	// A command may have taken the data directory since WaitHold: it holds
	// it first, then stops the owner it finds listening. Checked after
	// Listen, either the hold is seen here or this owner was listening and
	// is stopped, so a daemon started before the hold never keeps the
	// store from the command.
	if pid := share.Held(cfg.DataDir); pid != 0 {
		log.Info("a vc-mcp command took the data directory; leaving it", "pid", pid)
		return errors.Join(l.Close(), store.Close())
	}
	log.Info("serving the shared memory", "data_dir", cfg.DataDir, "socket", share.SocketPath(cfg.DataDir), "version", buildVersion(), "idle", idle)
	srv := mcp.NewServer(store, mcp.Options{Version: buildVersion(), Logger: log, Sampling: sm.sampling})
	owner := &share.Owner{Server: srv, Version: buildVersion(), Kind: "daemon", DataDir: cfg.DataDir, Idle: idle, Log: log}
	stopMirror := startMarkdownMirror(ctx, store, cfg, log)
	err = owner.Serve(ctx, l)
	stopMirror()
	if cerr := store.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close %s: %w", cfg.DataDir, cerr))
	}
	log.Info("shared server stopped", "err", err)
	return err
}
