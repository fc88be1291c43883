package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vc-mcp/vc-mcp/memory"
	"github.com/vc-mcp/vc-mcp/memory/bench"
	"github.com/vc-mcp/vc-mcp/pgstore"
)

// setStore validates the store setting: empty, or a PostgreSQL URL.
func setStore(c *settings, v string) error {
	v = strings.TrimSpace(v)
	if v != "" {
		if err := pgstore.Check(v); err != nil {
			return err
		}
	}
	c.Store = v
	return nil
}

// storeDir is the directory memory.Open uses: the data directory, or with a
// shared store, this process's cache of that store inside it (one per store,
// named by a hash of its URL without the password).
func storeDir(cfg settings) string {
	if cfg.Store == "" {
		return cfg.DataDir
	}
	sum := sha256.Sum256([]byte(pgstore.Redact(cfg.Store)))
	return filepath.Join(cfg.DataDir, "pgcache", hex.EncodeToString(sum[:6]))
}

// sharedLogs is the shared store of cfg, or nil. It connects on first use.
func sharedLogs(cfg settings) memory.SharedLogs {
	if cfg.Store == "" {
		return nil
	}
	return pgstore.New(cfg.Store)
}

const migrateUsage = `usage: vc-mcp migrate --from DATA_DIR --to postgres://user@host:5432/db

Copies every conversation of the local memory in DATA_DIR (its master and
decisions logs, line for line) into PostgreSQL, for ` + "`vc-mcp serve --store URL`" + `.
Conversations already there with the same content are skipped; one there with
other content stops the copy (nothing of it is copied). Stop the vc-mcp
processes using DATA_DIR first. DATA_DIR itself is not changed.
`

// runMigrate is `vc-mcp migrate`.
func runMigrate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, migrateUsage) }
	from := fs.String("from", "", "local data directory to copy")
	to := fs.String("to", "", "PostgreSQL URL to copy into")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprint(stderr, migrateUsage)
		return fmt.Errorf("migrate: unexpected argument %q", fs.Arg(0))
	}
	if *from == "" || *to == "" {
		fmt.Fprint(stderr, migrateUsage)
		return fmt.Errorf("migrate: both --from DATA_DIR and --to postgres://... are required")
	}
	logs, err := pgstore.Open(ctx, *to)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer logs.Close()
	start := time.Now()
	res, err := memory.MigrateToShared(ctx, *from, logs, func(done, total int, id string) {
		fmt.Fprintf(stderr, "migrate: %d/%d %s\n", done, total, id)
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Fprintf(stdout, "migrated %d conversations (%d lines) from %s to %s in %s; %d already there\n",
		res.Conversations, res.Lines, *from, pgstore.Redact(*to), time.Since(start).Round(time.Millisecond), res.Skipped)
	return nil
}

// benchOpener opens the benchmarks' memories: in their directory, or with a
// store URL on PostgreSQL, each in a new schema of its own (so runs never
// see each other's conversations; drop the vcbench_* schemas afterwards)
// with the directory as its cache.
func benchOpener(opts memory.Options, store string) bench.OpenFunc {
	if store == "" {
		return bench.StoreOpener(opts)
	}
	var n atomic.Int64
	run := time.Now().UnixNano()
	return func(ctx context.Context, dir string) (bench.Engine, error) {
		u, err := pgstore.WithSchema(ctx, store, fmt.Sprintf("vcbench_%d_%d", run, n.Add(1)))
		if err != nil {
			return nil, err
		}
		o := opts
		o.Shared = pgstore.New(u)
		return bench.StoreOpener(o)(ctx, dir)
	}
}
