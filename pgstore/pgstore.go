// Package pgstore keeps vc-mcp's append-only logs in PostgreSQL, so several
// vc-mcp processes (on one machine or many) share one memory. It implements
// memory.SharedLogs.
//
// Schema (created on first use, in the connection's search_path):
//
//	vc_conversations(id text primary key, owner text, created timestamptz,
//	                 master_bytes, master_lines, decisions_bytes, decisions_lines bigint,
//	                 generation bigint)
//	vc_master_log(conversation text, seq bigint, end_offset bigint, line bytea, at timestamptz)
//	vc_decisions (conversation text, seq bigint, end_offset bigint, line bytea, at timestamptz)
//	vc_vectors   (model text, text_hash bytea, vec bytea): embeddings (vectors.go)
//
// A log row is one line of the log file format described in package memory
// (the master log's JSONL with its CRC, the decisions log's "<crc> <json>"),
// newline included, byte for byte; seq numbers a conversation's lines from 1
// and end_offset is the byte offset after the line, so a process's file
// cache maps onto rows exactly. Rows are only ever inserted, with one
// exception: forget and scan --redact (the explicit privacy operations)
// replace a conversation's rows in one transaction (Rewrite) and bump its
// generation, which tells every other process to rebuild its cache of that
// conversation. To read rows as JSON: convert_from(line, 'UTF8')::jsonb
// (master log rows).
//
// Appends run in a transaction that first takes the conversation's advisory
// lock, pg_advisory_xact_lock(hashtextextended('vc-mcp:' || id, 0)): one
// writer per conversation across every process, released by commit or
// rollback (or by the server when the connection dies).
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Store is a PostgreSQL database holding vc-mcp's logs.
type Store struct {
	pool *pgxpool.Pool
	url  string
	err  error // from New: returned by every call

	mu       sync.Mutex
	migrated bool
}

var _ memory.SharedLogs = (*Store)(nil)

// IsURL reports whether s names a PostgreSQL store.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Check validates a store URL without connecting.
func Check(rawURL string) error {
	if !IsURL(rawURL) {
		return fmt.Errorf("store %q: want a postgres:// URL (e.g. postgres://user@host:5432/db)", Redact(rawURL))
	}
	if _, err := pgxpool.ParseConfig(rawURL); err != nil {
		return fmt.Errorf("store %s: %w", Redact(rawURL), err)
	}
	return nil
}

// Redact hides a URL's password.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// Open connects and creates the schema if needed.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	s := New(rawURL)
	if err := s.ensure(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// New returns a Store that connects on first use (and creates the schema
// then). A bad URL gives a Store whose every call fails with why.
func New(rawURL string) *Store {
	s := &Store{url: rawURL}
	if s.err = Check(rawURL); s.err != nil {
		return s
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		s.err = fmt.Errorf("store %s: %w", Redact(rawURL), err)
		return s
	}
	// Each appending operation holds a connection for its transaction, and
	// waits for a conversation's lock on it: leave room for readers.
	if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	if s.pool, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
		s.err = fmt.Errorf("store %s: %w", Redact(rawURL), err)
	}
	return s
}

// ensure creates the schema once.
func (s *Store) ensure(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.migrated {
		return nil
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	s.migrated = true
	return nil
}

const schema = `
CREATE TABLE IF NOT EXISTS vc_conversations (
	id              text PRIMARY KEY,
	owner           text,
	created         timestamptz NOT NULL DEFAULT now(),
	master_bytes    bigint NOT NULL DEFAULT 0,
	master_lines    bigint NOT NULL DEFAULT 0,
	decisions_bytes bigint NOT NULL DEFAULT 0,
	decisions_lines bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS vc_master_log (
	conversation text   NOT NULL REFERENCES vc_conversations(id),
	seq          bigint NOT NULL,
	end_offset   bigint NOT NULL,
	line         bytea  NOT NULL,
	at           timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (conversation, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS vc_master_log_end ON vc_master_log (conversation, end_offset);
CREATE TABLE IF NOT EXISTS vc_decisions (
	conversation text   NOT NULL REFERENCES vc_conversations(id),
	seq          bigint NOT NULL,
	end_offset   bigint NOT NULL,
	line         bytea  NOT NULL,
	at           timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (conversation, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS vc_decisions_end ON vc_decisions (conversation, end_offset);
ALTER TABLE vc_conversations ADD COLUMN IF NOT EXISTS generation bigint NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS vc_vectors (
	model     text  NOT NULL,
	text_hash bytea NOT NULL,
	vec       bytea NOT NULL,
	PRIMARY KEY (model, text_hash)
);
`

// schemaCurrent reports whether every table, index and column of schema
// is there. It takes no lock: DDL on tables in use (even CREATE ... IF NOT
// EXISTS and ADD COLUMN IF NOT EXISTS, which lock the table before they
// find there is nothing to do) could deadlock with another process
// writing to them.
const schemaCurrent = `SELECT to_regclass('vc_conversations') IS NOT NULL
	AND to_regclass('vc_master_log_end') IS NOT NULL
	AND to_regclass('vc_decisions_end') IS NOT NULL
	AND to_regclass('vc_vectors') IS NOT NULL
	AND EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'vc_conversations' AND column_name = 'generation')`

// migrate creates the schema, once per database: nothing is done when it
// is all there; otherwise an advisory lock keeps two processes starting
// together from racing on CREATE, and a deadlock with another process's
// writes (PostgreSQL cancels one side) is retried.
func (s *Store) migrate(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = s.migrateOnce(ctx); !isDeadlock(err) {
			return err
		}
	}
	return err
}

func (s *Store) migrateOnce(ctx context.Context) error {
	var current bool
	if err := s.pool.QueryRow(ctx, schemaCurrent).Scan(&current); err != nil {
		return s.connErr(err)
	}
	if current {
		return nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.connErr(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('vc-mcp:schema', 0))`); err != nil {
		return s.connErr(err)
	}
	if err := tx.QueryRow(ctx, schemaCurrent).Scan(&current); err != nil {
		return s.connErr(err)
	}
	if !current {
		if _, err := tx.Exec(ctx, schema); err != nil {
			return fmt.Errorf("create the vc-mcp tables in %s: %w", Redact(s.url), err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return s.connErr(err)
	}
	return nil
}

// isDeadlock reports whether err is PostgreSQL's deadlock_detected.
func isDeadlock(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40P01"
}

func (s *Store) connErr(err error) error {
	return fmt.Errorf("PostgreSQL at %s: %w", Redact(s.url), err)
}

// Close closes the pool.
func (s *Store) Close() error {
	if s.pool != nil {
		s.pool.Close()
	}
	return nil
}

// Heads implements memory.SharedLogs.
func (s *Store) Heads(ctx context.Context, conv string) (memory.LogHeads, error) {
	if err := s.ensure(ctx); err != nil {
		return memory.LogHeads{}, err
	}
	var h memory.LogHeads
	err := s.pool.QueryRow(ctx, `SELECT master_bytes, decisions_bytes, generation FROM vc_conversations WHERE id = $1`, conv).Scan(&h.Master, &h.Decisions, &h.Gen)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.LogHeads{}, nil
	}
	if err != nil {
		return h, s.connErr(err)
	}
	return h, nil
}

// List implements memory.SharedLogs.
func (s *Store) List(ctx context.Context) (map[string]memory.LogHeads, error) {
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, master_bytes, decisions_bytes, generation FROM vc_conversations`)
	if err != nil {
		return nil, s.connErr(err)
	}
	defer rows.Close()
	out := map[string]memory.LogHeads{}
	for rows.Next() {
		var id string
		var h memory.LogHeads
		if err := rows.Scan(&id, &h.Master, &h.Decisions, &h.Gen); err != nil {
			return nil, s.connErr(err)
		}
		if h.Master != 0 || h.Decisions != 0 {
			out[id] = h
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.connErr(err)
	}
	return out, nil
}

// SetOwner records a conversation's owner (informational: vc-mcp does not
// enforce it yet).
func (s *Store) SetOwner(ctx context.Context, conv, owner string) error {
	if err := s.ensure(ctx); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO vc_conversations (id, owner) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET owner = excluded.owner`, conv, owner)
	if err != nil {
		return s.connErr(err)
	}
	return nil
}

// querier is what reads need: a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Read implements memory.SharedLogs, in one repeatable-read snapshot.
func (s *Store) Read(ctx context.Context, conv string, from memory.LogHeads) (memory.LogLines, error) {
	if err := s.ensure(ctx); err != nil {
		return memory.LogLines{}, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return memory.LogLines{}, s.connErr(err)
	}
	defer tx.Rollback(ctx)
	return s.read(ctx, tx, conv, from)
}

func (s *Store) read(ctx context.Context, q querier, conv string, from memory.LogHeads) (memory.LogLines, error) {
	var out memory.LogLines
	err := q.QueryRow(ctx, `SELECT generation FROM vc_conversations WHERE id = $1`, conv).Scan(&out.Gen)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return out, s.connErr(err)
	}
	if (from.Master != 0 || from.Decisions != 0) && out.Gen != from.Gen {
		return out, fmt.Errorf("%w: conversation %q is at generation %d, the copy at %d", memory.ErrRewritten, conv, out.Gen, from.Gen)
	}
	if out.Master, out.PrevMaster, err = s.readLog(ctx, q, "vc_master_log", conv, from.Master); err != nil {
		return out, err
	}
	if out.Decisions, out.PrevDecisions, err = s.readLog(ctx, q, "vc_decisions", conv, from.Decisions); err != nil {
		return out, err
	}
	return out, nil
}

// readLog returns the lines after byte from, and the line ending at from.
func (s *Store) readLog(ctx context.Context, q querier, table, conv string, from int64) (lines [][]byte, prev []byte, err error) {
	if from > 0 {
		err := q.QueryRow(ctx, `SELECT line FROM `+table+` WHERE conversation = $1 AND end_offset = $2`, conv, from).Scan(&prev)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, fmt.Errorf("%w: %s of %q at byte %d", memory.ErrLogMismatch, table, conv, from)
		}
		if err != nil {
			return nil, nil, s.connErr(err)
		}
	}
	rows, err := q.Query(ctx, `SELECT line FROM `+table+` WHERE conversation = $1 AND end_offset > $2 ORDER BY seq`, conv, from)
	if err != nil {
		return nil, nil, s.connErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var l []byte
		if err := rows.Scan(&l); err != nil {
			return nil, nil, s.connErr(err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, s.connErr(err)
	}
	return lines, prev, nil
}

// LockWait bounds the wait for a conversation another process is writing
// (a compaction waiting on a slow LLM holds it that long).
var LockWait = 2 * time.Minute

// session is one conversation's append transaction.
type session struct {
	s      *Store
	tx     pgx.Tx
	conv   string
	heads  memory.LogHeads
	lines  [2]int64 // master, decisions line counts
	closed bool
}

// Lock implements memory.SharedLogs.
func (s *Store) Lock(ctx context.Context, conv string) (memory.SharedSession, error) {
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, s.connErr(err)
	}
	fail := func(err error) (memory.SharedSession, error) {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, s.connErr(err)
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", LockWait.Milliseconds())); err != nil {
		return fail(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('vc-mcp:' || $1::text, 0))`, conv); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
			_ = tx.Rollback(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("conversation %q is being written by another vc-mcp process (waited %s); call again later", conv, LockWait)
		}
		return fail(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO vc_conversations (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`, conv); err != nil {
		return fail(err)
	}
	ss := &session{s: s, tx: tx, conv: conv}
	if err := tx.QueryRow(ctx, `SELECT master_bytes, master_lines, decisions_bytes, decisions_lines, generation FROM vc_conversations WHERE id = $1`, conv).
		Scan(&ss.heads.Master, &ss.lines[0], &ss.heads.Decisions, &ss.lines[1], &ss.heads.Gen); err != nil {
		return fail(err)
	}
	return ss, nil
}

func (ss *session) Heads() memory.LogHeads { return ss.heads }

func (ss *session) Read(ctx context.Context, from memory.LogHeads) (memory.LogLines, error) {
	return ss.s.read(ctx, ss.tx, ss.conv, from)
}

// Append inserts the lines with COPY and moves the heads.
func (ss *session) Append(ctx context.Context, l memory.LogLines) error {
	if ss.closed {
		return errors.New("append after the session ended")
	}
	for i, part := range []struct {
		table string
		lines [][]byte
		bytes *int64
	}{{"vc_master_log", l.Master, &ss.heads.Master}, {"vc_decisions", l.Decisions, &ss.heads.Decisions}} {
		if len(part.lines) == 0 {
			continue
		}
		rows := make([][]any, len(part.lines))
		end, seq := *part.bytes, ss.lines[i]
		for j, line := range part.lines {
			end += int64(len(line))
			seq++
			rows[j] = []any{ss.conv, seq, end, line}
		}
		if _, err := ss.tx.CopyFrom(ctx, pgx.Identifier{part.table}, []string{"conversation", "seq", "end_offset", "line"}, pgx.CopyFromRows(rows)); err != nil {
			return ss.s.connErr(err)
		}
		*part.bytes, ss.lines[i] = end, seq
	}
	if _, err := ss.tx.Exec(ctx, `UPDATE vc_conversations SET master_bytes = $2, master_lines = $3, decisions_bytes = $4, decisions_lines = $5 WHERE id = $1`,
		ss.conv, ss.heads.Master, ss.lines[0], ss.heads.Decisions, ss.lines[1]); err != nil {
		return ss.s.connErr(err)
	}
	return nil
}

// Rewrite implements memory.SharedSession: the conversation's rows are
// deleted and lines inserted in their place, and its generation goes up by
// one, in the session's transaction. This is the only statement that
// removes log rows (forget and scan --redact).
func (ss *session) Rewrite(ctx context.Context, l memory.LogLines) error {
	if ss.closed {
		return errors.New("rewrite after the session ended")
	}
	for _, table := range []string{"vc_master_log", "vc_decisions"} {
		if _, err := ss.tx.Exec(ctx, `DELETE FROM `+table+` WHERE conversation = $1`, ss.conv); err != nil {
			return ss.s.connErr(err)
		}
	}
	if err := ss.tx.QueryRow(ctx, `UPDATE vc_conversations SET generation = generation + 1, master_bytes = 0, master_lines = 0, decisions_bytes = 0, decisions_lines = 0 WHERE id = $1 RETURNING generation`, ss.conv).Scan(&ss.heads.Gen); err != nil {
		return ss.s.connErr(err)
	}
	ss.heads.Master, ss.heads.Decisions, ss.lines = 0, 0, [2]int64{}
	return ss.Append(ctx, l)
}

func (ss *session) Commit(ctx context.Context) error {
	if ss.closed {
		return nil
	}
	ss.closed = true
	if err := ss.tx.Commit(ctx); err != nil {
		return ss.s.connErr(err)
	}
	return nil
}

func (ss *session) Rollback(ctx context.Context) error {
	if ss.closed {
		return nil
	}
	ss.closed = true
	if err := ss.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return ss.s.connErr(err)
	}
	return nil
}

// WithSchema creates the schema name (a plain identifier) if needed and
// returns rawURL with its search_path set to it, so a Store on the result
// keeps its tables there (the benchmarks give each run its own).
func WithSchema(ctx context.Context, rawURL, name string) (string, error) {
	if err := Check(rawURL); err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return "", fmt.Errorf("PostgreSQL at %s: %w", Redact(rawURL), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create schema %s: %w", name, err)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
