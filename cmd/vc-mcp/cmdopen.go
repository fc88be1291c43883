package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/markdown"
	"github.com/vc-mcp/vc-mcp/share"
)

// What the one-shot commands (export, import, forget, scan, summaries,
// context-stats) share: their own flags beside the common settings, and
// opening the data directory while a shared server may hold it.

// ownFlags splits this command's flags (names: true when the flag takes a
// value) from the common settings flags.
func ownFlags(cmd string, args []string, names map[string]bool) (map[string][]string, []string, error) {
	own := map[string][]string{}
	var common []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes, ok := names[name]
		if !strings.HasPrefix(a, "-") || !ok {
			common = append(common, a)
			continue
		}
		if !takes {
			if !hasValue {
				value = "true"
			}
			own[name] = append(own[name], value)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("%s: --%s needs a value", cmd, name)
			}
			i++
			value = args[i]
		}
		own[name] = append(own[name], value)
	}
	return own, common, nil
}

func lastFlag(own map[string][]string, name string) string {
	if v := own[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// lastFlags keeps the last value of each flag given more than once.
func lastFlags(own map[string][]string) map[string]string {
	out := make(map[string]string, len(own))
	for name := range own {
		out[name] = lastFlag(own, name)
	}
	return out
}

func boolFlag(cmd string, own map[string][]string, name string) (bool, error) {
	v := lastFlag(own, name)
	switch strings.ToLower(v) {
	case "":
		return false, nil
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	}
	return false, fmt.Errorf("%s: --%s=%q: want true or false", cmd, name, v)
}

// commandConfig loads the settings from a command's common arguments,
// which must all be settings.
func commandConfig(name string, common []string, stderr io.Writer) (settings, error) {
	cfg, extra, err := loadConfig(name, common, os.Getenv, stderr)
	if err != nil {
		return cfg, err
	}
	if len(extra) > 0 {
		return cfg, fmt.Errorf("%s: unexpected argument %q", name, extra[0])
	}
	return cfg, nil
}

// openForCommand opens cfg's data directory for a one-shot command: a
// logger, the memory options as configured and then adjusted by prep (nil:
// as configured; its cleanup, if any, runs at done), the hand-over from a
// shared server holding the directory (its hosts wait and reconnect), and
// the store. done closes all of it; call it once.
func openForCommand(ctx context.Context, name string, cfg settings, stderr io.Writer,
	prep func(opts *memory.Options, log *slog.Logger) (cleanup func(), err error)) (store *memory.Store, done func(), err error) {
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return nil, nil, err
	}
	undo := []func(){closeLog}
	unwind := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	opts := memoryOptions(cfg, log)
	if prep != nil {
		cleanup, err := prep(&opts, log)
		if err != nil {
			unwind()
			return nil, nil, err
		}
		if cleanup != nil {
			undo = append(undo, cleanup)
		}
	}
	if readOnlyDir(cfg) {
		// No hand-over: a server holding the directory keeps it, and
		// Open says it is in use.
		store, err = memory.Open(ctx, opts)
	} else {
		var release func()
		release, err = exclusive(ctx, cfg)
		if err != nil {
			unwind()
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		undo = append(undo, release)
		store, err = openExclusive(ctx, name, cfg, opts, stderr)
	}
	if err != nil {
		unwind()
		return nil, nil, fmt.Errorf("open %s: %w", cfg.DataDir, err)
	}
	return store, func() {
		_ = store.Close() // callers that care close first and check
		unwind()
	}, nil
}

// openMaintenance opens the data directory for a maintenance command
// (summaries, context-stats, forget, scan): settings from common, the
// configured summariser and tagger (summaries are remade) and no
// embeddings (vectors of what is kept stay; new ones are the server's job).
func openMaintenance(ctx context.Context, name string, common []string, stderr io.Writer) (*memory.Store, settings, func(), error) {
	cfg, err := commandConfig(name, common, stderr)
	if err != nil {
		return nil, cfg, nil, err
	}
	store, done, err := openForCommand(ctx, name, cfg, stderr, func(opts *memory.Options, log *slog.Logger) (func(), error) {
		sm, err := wireSeams(ctx, cfg, opts, log)
		if err != nil {
			return nil, err
		}
		opts.Embedder = nil
		return sm.close, nil
	})
	return store, cfg, done, err
}

// refreshMirror rewrites the Markdown mirror's pages (markdown_mirror) of
// the conversations a maintenance command rewrote (forget, scan --redact):
// no server runs the mirror meanwhile, and its pages must not show what
// was forgotten or redacted until the next one starts.
func refreshMirror(ctx context.Context, store *memory.Store, cfg settings, stderr io.Writer, ids ...string) {
	if cfg.MarkdownMirror == "" || len(ids) == 0 {
		return
	}
	log, closeLog, err := newLogger(cfg, stderr) // the command's log_level and log_file
	if err != nil {
		fmt.Fprintf(stderr, "vc-mcp: %v\n", err)
		return
	}
	defer closeLog()
	(&markdown.Mirror{Src: store, Dir: cfg.MarkdownMirror, Logger: log}).Refresh(ctx, ids...)
}

// openExclusive opens the store after exclusive() (see whileLocked).
func openExclusive(ctx context.Context, name string, cfg settings, opts memory.Options, stderr io.Writer) (*memory.Store, error) {
	var store *memory.Store
	err := whileLocked(ctx, name, cfg, opts, stderr, func(opts memory.Options) (err error) {
		store, err = memory.Open(ctx, opts)
		return err
	})
	return store, err
}

// whileLocked runs open (an open of the store with opts, as memory.Open or
// memory.Rebuild) after exclusive(), and again while the data directory is
// locked, until handOverTimeout. A shared daemon that a host started just
// before the hold was taken may have passed its wait for the hold and
// taken the lock after exclusive() found no owner to stop; it listens by
// then, so on ErrLocked it is asked again to hand over. The holder may
// also be a process that serves no socket (a stdio `serve` with
// VC_SHARE=off, another command): the user is told once, at the first
// refusal, whom the command waits for.
func whileLocked(ctx context.Context, name string, cfg settings, opts memory.Options, stderr io.Writer, open func(memory.Options) error) error {
	deadline := time.Now().Add(handOverTimeout)
	opts.LockTimeout = 2 * time.Second
	for try := 0; ; try++ {
		err := open(opts)
		if err == nil || !errors.Is(err, memory.ErrLocked) || time.Now().After(deadline) {
			return err
		}
		if try == 0 {
			noteWaiting(stderr, name, err)
		}
		// The hold file is this process's already; only the stop matters.
		if _, xerr := share.Exclusive(ctx, cfg.DataDir, buildVersion()); xerr != nil {
			return errors.Join(err, xerr)
		}
	}
}

// noteWaiting tells the user that the command (name, or "" for the CLI's
// own) waits up to handOverTimeout for the holder of the data directory,
// which lockErr (memory.ErrLocked) names.
func noteWaiting(stderr io.Writer, name string, lockErr error) {
	if name != "" {
		name += ": "
	}
	fmt.Fprintf(stderr, "vc-mcp: %swaiting up to %s for the data directory: %v\n", name, handOverTimeout, lockErr)
}
