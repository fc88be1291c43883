package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
)

// runRebuild recreates vc.db and the index of the data directory from its
// master logs. A shared server using it is stopped first; its hosts
// reconnect when the rebuild is done.
func runRebuild(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, rest, err := loadConfig("rebuild", args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("rebuild: unexpected argument %q", rest[0])
	}
	log, closeLog, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	start := time.Now()
	last := time.Time{}
	progress := func(done, total int, message string) {
		if time.Since(last) < 500*time.Millisecond && done != total {
			return
		}
		last = time.Now()
		fmt.Fprintf(stderr, "rebuild: %d/%d %s\n", done, total, message)
	}
	opts := memoryOptions(cfg, log)
	if err := memory.Rebuildable(opts); err != nil {
		return fmt.Errorf("rebuild %s: %w", cfg.DataDir, err)
	}
	release, err := exclusive(ctx, cfg)
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", cfg.DataDir, err)
	}
	defer release()
	if err := whileLocked(ctx, "rebuild", cfg, opts, stderr, func(opts memory.Options) error {
		return memory.Rebuild(ctx, opts, progress)
	}); err != nil {
		return fmt.Errorf("rebuild %s: %w", cfg.DataDir, err)
	}
	fmt.Fprintf(stderr, "rebuild: %s rebuilt from its master logs in %s\n", cfg.DataDir, time.Since(start).Round(time.Millisecond))
	return nil
}
