package memory

// Shared logs: one memory for several vc-mcp processes.
//
// With Options.Shared set, the two append-only logs of every conversation
// (the master log and the derived-decisions log) live in a shared store
// (package pgstore: PostgreSQL), one row per line, never updated. The data
// directory becomes this process's cache of them: the log files are a
// byte-for-byte prefix of the shared logs, and vc.db and the index are
// derived from those files exactly as for a local memory, by the same code.
// So ranking, and recall quality, are the same by construction.
//
//   - Reading: before an operation uses a conversation, the shared heads
//     (the committed size of both logs) are compared with the cache's files
//     (one indexed query). When the cache is behind, the missing lines are
//     appended to the files and replayed (new turns with their recorded
//     tags, then compactions, splits, working-set changes), as Open replays
//     a crash tail.
//   - Writing: an operation that appends to a conversation's logs (opAppend)
//     first takes the conversation's cross-process lock (a transaction
//     holding a PostgreSQL advisory lock), catches up under it, runs as
//     usual against the files, then sends the lines it appended and commits.
//     Every decision (dedup of a batch, compaction boundaries, summaries) is
//     thus taken on the latest state with no other writer anywhere, so no two
//     processes compact the same range; and what an operation wrote reaches
//     the others in one transaction or not at all: a process killed mid-
//     compaction leaves nothing half-written in the shared logs.
//   - Divergence: the cache can hold lines the shared store has not (a
//     process killed before its commit, or a failed commit). Under the lock
//     they are sent if the shared logs did not move meanwhile; otherwise the
//     cache is marked stale and is rebuilt from the shared logs when the store
//     opens next (Open also checks every file against the shared logs). So is
//     a cache of a later generation than the shared logs (they were restored
//     from a backup): writes are refused until then.
//   - Generations only go up: a copy of the shared logs read before a lock
//     is never put in the cache over a later generation (adoptRewrite).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/files"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

// LogHeads is the committed size in bytes of a conversation's master log and
// decisions log, and its generation: how many times its logs were rewritten
// (forget, scan --redact), 0 until the first. A cache whose generation is
// not the shared one is rebuilt from the shared logs.
type LogHeads struct {
	Master, Decisions int64
	Gen               int64
}

// LogLines are lines of both logs, each with its newline, in log order.
// PrevMaster and PrevDecisions are the lines that end where these begin
// (nil at the start of a log), so a reader can check its copy is a prefix.
type LogLines struct {
	Master, Decisions         [][]byte
	PrevMaster, PrevDecisions []byte
	// Gen is the generation of the logs the lines were read from.
	Gen int64
}

func (l LogLines) empty() bool { return len(l.Master) == 0 && len(l.Decisions) == 0 }

// ErrLogMismatch: a shared log has no line ending at the asked offset (the
// local copy is not a prefix of it).
var ErrLogMismatch = errors.New("shared log has no line boundary there")

// ErrRewritten: the shared logs of a conversation were rewritten (a process
// forgot or redacted turns) since the copy asking for lines was made: its
// generation is not theirs.
var ErrRewritten = errors.New("the shared logs were rewritten since this copy was made")

// SharedLogs is where the logs live when several processes share one memory
// (see the top of shared.go). Implementations: package pgstore.
type SharedLogs interface {
	// Heads returns a conversation's committed heads (zero when unknown).
	Heads(ctx context.Context, conv string) (LogHeads, error)
	// List returns every conversation's heads.
	List(ctx context.Context) (map[string]LogHeads, error)
	// Read returns, from one snapshot, the lines after from (an error
	// wrapping ErrLogMismatch when from is not a line boundary, one
	// wrapping ErrRewritten when from is not empty and the logs are of
	// another generation than from.Gen).
	Read(ctx context.Context, conv string, from LogHeads) (LogLines, error)
	// Lock begins the conversation's exclusive append session, across
	// processes; it waits for the holder.
	Lock(ctx context.Context, conv string) (SharedSession, error)
	Close() error
}

// SharedSession is one conversation's append session (a transaction).
type SharedSession interface {
	// Heads are the committed heads when the lock was taken, moved by Append.
	Heads() LogHeads
	Read(ctx context.Context, from LogHeads) (LogLines, error)
	// Append adds lines at Heads(); visible to others after Commit.
	Append(ctx context.Context, lines LogLines) error
	Commit(ctx context.Context) error
	// Rollback ends the session without its appends; a no-op after Commit.
	Rollback(ctx context.Context) error
	// Rewrite replaces every line of both logs with lines and increments
	// the generation, in this transaction (forget's and scan --redact's
	// rewrite: others see the old logs or the new ones, never a mix; a
	// process whose cache has the old generation rebuilds that
	// conversation from the shared logs before it next uses it).
	Rewrite(ctx context.Context, lines LogLines) error
}

// staleFile marks a cache directory to rebuild from the shared logs.
const staleFile = "STALE"

// sharedState is the Store's side of the shared logs.
type sharedState struct {
	logs  SharedLogs
	mu    sync.Mutex
	files map[string]*sync.Mutex // per conversation: writes to the cache files
	// rewriting: conversations whose cache files this process has rewritten
	// (forget, redact) and not yet committed; pull leaves them alone.
	rewriting map[string]bool
}

func (sh *sharedState) fileMu(id string) *sync.Mutex {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	m, ok := sh.files[id]
	if !ok {
		m = &sync.Mutex{}
		sh.files[id] = m
	}
	return m
}

// genPath is where a cache records the generation of a conversation's logs
// (absent: 0).
func (s *Store) genPath(id string) string {
	return convFile(s.opts.Dir, logsDir, id, ".gen")
}

func (s *Store) writeGen(id string, gen int64) error {
	if gen == 0 {
		if err := os.Remove(s.genPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cache generation of %s: %w", id, err)
		}
		return nil
	}
	if err := files.AtomicWrite(s.genPath(id), []byte(strconv.FormatInt(gen, 10)+"\n")); err != nil {
		return fmt.Errorf("cache generation of %s: %w", id, err)
	}
	return nil
}

// localHeads returns the sizes of a conversation's cache files and the
// generation they are of.
func (s *Store) localHeads(id string) (LogHeads, error) {
	var h LogHeads
	if b, err := os.ReadFile(s.genPath(id)); err == nil {
		if h.Gen, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
			return h, fmt.Errorf("cache generation %s: %w", s.genPath(id), err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return h, fmt.Errorf("cache generation: %w", err)
	}
	for _, p := range []struct {
		path string
		n    *int64
	}{{s.logPath(id), &h.Master}, {s.decisionsPath(id), &h.Decisions}} {
		st, err := os.Stat(p.path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return h, fmt.Errorf("stat %s: %w", p.path, err)
		}
		*p.n = st.Size()
	}
	return h, nil
}

// errDiverged: the cache holds lines the shared logs do not, and the shared
// logs moved on.
var errDiverged = errors.New("the local cache diverged from the shared store")

func (s *Store) divergedError(id string, cause error) error {
	s.markStale(id)
	err := fmt.Errorf("%w: conversation %q: %v", errDiverged, id, cause)
	return &StorageError{Message: err.Error() + "; restart vc-mcp: it rebuilds its cache from the shared store", Err: err}
}

// markStale marks the cache to be rebuilt from the shared logs when the
// store opens next (id names the conversation that asked for it).
func (s *Store) markStale(id string) {
	if err := os.WriteFile(filepath.Join(s.opts.Dir, staleFile), []byte(id+"\n"), 0o600); err != nil {
		s.log.Warn("could not mark the local cache for a rebuild from the shared store", "conversation", id, "err", err)
	}
}

// pull appends the shared lines the cache lacks to its files. read reads
// from the shared store (under the session, or a snapshot). It returns
// whether anything was appended, and ahead when the cache holds more than
// the shared heads; ErrRewritten when the cache holds another generation.
func (s *Store) pull(ctx context.Context, id string, heads LogHeads, read func(from LogHeads) (LogLines, error)) (pulled, ahead bool, err error) {
	mu := s.shared.fileMu(id)
	mu.Lock()
	defer mu.Unlock()
	s.shared.mu.Lock()
	rewriting := s.shared.rewriting[id]
	s.shared.mu.Unlock()
	if rewriting { // this process is committing its own rewrite
		return false, false, nil
	}
	local, err := s.localHeads(id)
	if err != nil {
		return false, false, err
	}
	// An empty cache takes any generation: the one its lines are read at.
	empty := local.Master == 0 && local.Decisions == 0
	if local.Gen != heads.Gen && !empty {
		return false, false, ErrRewritten
	}
	if local.Master > heads.Master || local.Decisions > heads.Decisions {
		return false, true, nil
	}
	if local.Master == heads.Master && local.Decisions == heads.Decisions {
		if local.Gen != heads.Gen { // empty, as the shared logs are
			return false, false, s.writeGen(id, heads.Gen)
		}
		return false, false, nil
	}
	lines, err := read(local)
	if err != nil {
		if errors.Is(err, ErrRewritten) { // since heads were read
			return false, false, ErrRewritten
		}
		if errors.Is(err, ErrLogMismatch) {
			return false, false, s.divergedError(id, err)
		}
		return false, false, fmt.Errorf("read shared logs of %s: %w", id, err)
	}
	if empty && lines.Gen != local.Gen {
		// Read from the start, the lines are not checked against a
		// generation: they are of the one they were read at (a rewrite may
		// have come between the heads and this read).
		if err := s.writeGen(id, lines.Gen); err != nil {
			return false, false, err
		}
	}
	if err := checkPrev(s.logPath(id), local.Master, lines.PrevMaster); err != nil {
		return false, false, s.divergedError(id, err)
	}
	if err := checkPrev(s.decisionsPath(id), local.Decisions, lines.PrevDecisions); err != nil {
		return false, false, s.divergedError(id, err)
	}
	if err := appendLines(s.logPath(id), local.Master, lines.Master); err != nil {
		return false, false, err
	}
	if err := appendLines(s.decisionsPath(id), local.Decisions, lines.Decisions); err != nil {
		return false, false, err
	}
	return !lines.empty(), false, nil
}

// checkPrev checks that the file's bytes before end are prev.
func checkPrev(path string, end int64, prev []byte) error {
	if end == 0 {
		return nil
	}
	if int64(len(prev)) > end || len(prev) == 0 {
		return fmt.Errorf("%s: the shared line before byte %d does not fit", path, end)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, len(prev))
	if _, err := f.ReadAt(buf, end-int64(len(prev))); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if !bytes.Equal(buf, prev) {
		return fmt.Errorf("%s: the line before byte %d differs from the shared one", path, end)
	}
	return nil
}

// appendLines writes lines to path at offset at (its size), creating it.
func appendLines(path string, at int64, lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	f, err := files.OpenAppendOnly(path, "cached log")
	if err != nil {
		return err
	}
	defer f.Close()
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
	}
	if _, err := f.WriteAt(buf.Bytes(), at); err != nil {
		return fmt.Errorf("write cached log %s: %w", path, err)
	}
	// No fsync: the cache is rebuilt from the shared logs, and Open checks
	// that each file is a prefix of them.
	return nil
}

// linesOf returns the complete lines of path in [from, to).
func linesOf(path string, from, to int64) ([][]byte, error) {
	if to <= from {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, to-from)
	if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var out [][]byte
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break // an unterminated last line is never sent
		}
		out = append(out, buf[:i+1])
		buf = buf[i+1:]
	}
	return out, nil
}

// sharedBefore runs before an operation uses conversation id: it takes the
// conversation's lock for an appending operation (once per operation) and
// catches the cache up. It reports whether the cache files changed.
func (s *Store) sharedBefore(ctx context.Context, o *op, id string) (bool, error) {
	if o != nil && o.appends {
		s.mu.Lock()
		_, ok := o.sessions[id]
		s.mu.Unlock()
		if ok {
			return false, nil
		}
		sess, err := s.shared.logs.Lock(ctx, id)
		if err != nil {
			return false, sharedError(fmt.Errorf("lock conversation %q: %w", id, err), "nothing was stored")
		}
		pulled, ahead, err := s.pull(ctx, id, sess.Heads(), func(from LogHeads) (LogLines, error) { return sess.Read(ctx, from) })
		if errors.Is(err, ErrRewritten) {
			// Another process forgot or redacted: start again from its logs.
			if err = s.adoptRewrite(ctx, id, func() (LogLines, error) { return sess.Read(ctx, LogHeads{}) }); err == nil {
				_, ahead, err = s.pull(ctx, id, sess.Heads(), func(from LogHeads) (LogLines, error) { return sess.Read(ctx, from) })
				if errors.Is(err, ErrRewritten) {
					// Under the lock nothing is newer than the shared logs,
					// yet the cache is of a later generation: they went back
					// (restored from a backup, or reset).
					err = s.divergedError(id, err)
				}
				pulled = true
			}
		}
		if err == nil && ahead {
			// Lines this process wrote that never reached the shared logs:
			// they go with this operation's, if the shared logs still end
			// where they began.
			err = s.checkAhead(ctx, id, sess)
		}
		if err != nil {
			// Only a session whose cache extends the shared logs may send
			// anything: this one ends here.
			_ = sess.Rollback(context.WithoutCancel(ctx))
			return pulled, err
		}
		s.mu.Lock()
		if o.sessions == nil {
			o.sessions = map[string]SharedSession{}
		}
		o.sessions[id] = sess
		s.mu.Unlock()
		return pulled, nil
	}
	heads, err := s.shared.logs.Heads(ctx, id)
	if err != nil {
		return false, sharedError(fmt.Errorf("read heads of %q: %w", id, err), "")
	}
	pulled, _, err := s.pull(ctx, id, heads, func(from LogHeads) (LogLines, error) { return s.shared.logs.Read(ctx, id, from) })
	if errors.Is(err, ErrRewritten) {
		read := func(from LogHeads) (LogLines, error) { return s.shared.logs.Read(ctx, id, from) }
		if err := s.adoptRewrite(ctx, id, func() (LogLines, error) { return read(LogHeads{}) }); err != nil {
			return true, err
		}
		// What was appended since (a newer rewrite waits for the next call).
		if heads, err = s.shared.logs.Heads(ctx, id); err != nil {
			return true, sharedError(fmt.Errorf("read heads of %q: %w", id, err), "")
		}
		if _, _, err = s.pull(ctx, id, heads, read); errors.Is(err, ErrRewritten) {
			err = nil
		}
		return true, err
	}
	return pulled, err
}

// sharedError is a StorageError for a shared store that failed.
func sharedError(err error, outcome string) error {
	msg := "shared store: " + err.Error() + "; check that the PostgreSQL server is reachable, then call again"
	if outcome != "" {
		msg += "; " + outcome
	}
	return &StorageError{Message: msg, Err: err}
}

// checkAhead verifies that the cache files extend the shared logs.
func (s *Store) checkAhead(ctx context.Context, id string, sess SharedSession) error {
	h := sess.Heads()
	lines, err := sess.Read(ctx, h)
	if err != nil {
		if errors.Is(err, ErrLogMismatch) {
			return s.divergedError(id, err)
		}
		return err
	}
	if err := checkPrev(s.logPath(id), h.Master, lines.PrevMaster); err != nil {
		return s.divergedError(id, err)
	}
	if err := checkPrev(s.decisionsPath(id), h.Decisions, lines.PrevDecisions); err != nil {
		return s.divergedError(id, err)
	}
	return nil
}

// refresh replays what pull appended to a loaded conversation's files: new
// decisions (tags first), new master records, then the other decisions.
// It replays into a fork of the state under the writers' lock, so reads
// go on meanwhile, and puts the fork in place under the readers' lock.
func (s *Store) refresh(ctx context.Context, c *conv) error {
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.dlog != nil { // its end moved: reopened on the next decision
		if err := c.dlog.Close(); err != nil {
			return err
		}
		c.dlog = nil
	}
	return s.replayForked(ctx, c)
}

// replayForked replays what was appended to c's logs beyond its state
// (replayTail's work for a loaded conversation) into a fork of c, and puts
// the fork in place, whether the replay completed or not: what it did is
// committed, as a replay in place would have left it. c.compactMu and c.wmu
// are held; c.mu is taken only to put the fork in place.
func (s *Store) replayForked(ctx context.Context, c *conv) error {
	n := c.fork()
	err := s.replayInto(ctx, n)
	if replayHook != nil {
		replayHook()
	}
	c.mu.Lock()
	c.adopt(n)
	c.mu.Unlock()
	return err
}

// replayHook, when set (tests only), runs once a forked replay is done,
// before the fork is put in place.
var replayHook func()

// replayInto replays n's logs beyond its state into n, which no reader
// sees.
func (s *Store) replayInto(ctx context.Context, n *conv) error {
	if err := s.replayFiles(ctx, n); err != nil {
		return err
	}
	s.catchUpIndex(ctx, n)
	return nil
}

// commitShared sends what the operation appended to each conversation it
// locked and commits. Callers that report success call it before
// returning; the operation's end commits whatever is left.
func (s *Store) commitShared(ctx context.Context) error {
	o, _ := ctx.Value(opKey{}).(*op)
	if o == nil || len(o.sessions) == 0 {
		return nil
	}
	s.mu.Lock()
	sessions, rewrites := o.sessions, o.rewrites
	o.sessions, o.rewrites = nil, nil
	s.mu.Unlock()
	var errs []error
	for id, sess := range sessions {
		if rewrites[id] {
			err := s.pushRewrite(ctx, id, sess)
			s.shared.mu.Lock()
			delete(s.shared.rewriting, id)
			s.shared.mu.Unlock()
			if err != nil {
				_ = sess.Rollback(context.WithoutCancel(ctx))
				// The cache holds the rewrite, the shared logs do not.
				errs = append(errs, s.divergedError(id, fmt.Errorf("commit the rewrite of conversation %q: %w", id, err)))
			}
			continue
		}
		if err := s.push(ctx, id, sess); err != nil {
			_ = sess.Rollback(context.WithoutCancel(ctx))
			errs = append(errs, sharedError(fmt.Errorf("commit conversation %q: %w", id, err), "this call was not shared: its changes go with this process's next write to the conversation if no other process writes it first, else they are dropped"))
		}
	}
	return errors.Join(errs...)
}

// markRewrite records that the operation of ctx is rewriting conversation
// id's cache files (forget, redact): its commit replaces the shared logs
// with them instead of appending. It needs the conversation's session.
func (s *Store) markRewrite(ctx context.Context, id string) error {
	if s.shared == nil {
		return nil
	}
	o, _ := ctx.Value(opKey{}).(*op)
	s.mu.Lock()
	defer s.mu.Unlock()
	if o == nil || o.sessions[id] == nil {
		return fmt.Errorf("rewriting %q on a shared store outside its lock (a bug)", id)
	}
	if o.rewrites == nil {
		o.rewrites = map[string]bool{}
	}
	o.rewrites[id] = true
	s.shared.mu.Lock()
	if s.shared.rewriting == nil {
		s.shared.rewriting = map[string]bool{}
	}
	s.shared.rewriting[id] = true
	s.shared.mu.Unlock()
	return nil
}

// localLines reads the lines of id's cached logs after from (the shared
// heads, or zero for all of them) and the cache's own heads. Only records
// that verify leave the cache: a bug or a damaged cache must not reach
// every process.
func (s *Store) localLines(id string, from LogHeads) (LogLines, LogHeads, error) {
	var lines LogLines
	local, err := s.localHeads(id)
	if err != nil {
		return lines, local, err
	}
	if lines.Master, err = linesOf(s.logPath(id), from.Master, local.Master); err != nil {
		return lines, local, err
	}
	if lines.Decisions, err = linesOf(s.decisionsPath(id), from.Decisions, local.Decisions); err != nil {
		return lines, local, err
	}
	for _, l := range lines.Master {
		if _, err := masterlog.VerifyLine(l[:len(l)-1]); err != nil {
			return lines, local, fmt.Errorf("refusing to share a master log line that does not verify: %w", err)
		}
	}
	for _, l := range lines.Decisions {
		if _, ok := decodeDecision(l[:len(l)-1]); !ok {
			return lines, local, fmt.Errorf("refusing to share a decisions log line that does not verify: %q", clip(string(l), 80))
		}
	}
	return lines, local, nil
}

// pushRewrite replaces the shared logs of id with the cache files (which
// the operation rewrote under the session's lock), commits, and records the
// new generation in the cache.
func (s *Store) pushRewrite(ctx context.Context, id string, sess SharedSession) error {
	lines, local, err := s.localLines(id, LogHeads{})
	if err != nil {
		return err
	}
	if size(lines.Master) != local.Master || size(lines.Decisions) != local.Decisions {
		return fmt.Errorf("refusing to share a rewritten log that ends mid-line")
	}
	if local.Gen != sess.Heads().Gen {
		return fmt.Errorf("refusing to share a rewrite of %q made on generation %d of its logs: the shared ones are at %d", id, local.Gen, sess.Heads().Gen)
	}
	ctx = context.WithoutCancel(ctx)
	if err := sess.Rewrite(ctx, lines); err != nil {
		return err
	}
	if err := sess.Commit(ctx); err != nil {
		return err
	}
	// Should this fail (or the process die first), the cache is of an older
	// generation with the new content: it is rebuilt from the shared logs,
	// which hold the same.
	return s.writeGen(id, sess.Heads().Gen)
}

func (s *Store) push(ctx context.Context, id string, sess SharedSession) error {
	lines, local, err := s.localLines(id, sess.Heads())
	if err != nil {
		return err
	}
	if err := extendsSession(id, local, sess.Heads()); err != nil {
		return err
	}
	// A caller that gave up after its lines were written locally still
	// gets them shared: otherwise the cache would hold lines the shared logs
	// lack.
	ctx = context.WithoutCancel(ctx)
	if !lines.empty() {
		if err := sess.Append(ctx, lines); err != nil {
			return err
		}
	}
	return sess.Commit(ctx)
}

// extendsSession checks that the cache (local) still extends the shared
// logs as the session found them: the operation's lines are what the cache
// holds beyond them. Nothing but this session writes the cache files while
// it holds the lock; a cache changed under it (another generation, or cut
// back) would make the commit send the wrong lines, or none, for what the
// operation is about to acknowledge.
func extendsSession(id string, local, shared LogHeads) error {
	if local.Gen != shared.Gen || local.Master < shared.Master || local.Decisions < shared.Decisions {
		return fmt.Errorf("the cache of %q changed under this write (generation %d, %d and %d bytes; the shared logs: generation %d, %d and %d bytes)", id, local.Gen, local.Master, local.Decisions, shared.Gen, shared.Master, shared.Decisions)
	}
	return nil
}

// openShared brings the cache directory in line with the shared logs before
// Open reads it: a cache marked stale, or whose files are not a prefix of
// the shared logs, is emptied; then every conversation's missing lines are
// appended, for Open's recovery to replay. The directory is locked (bbolt
// is open); reset closes and reopens vc.db when it empties the cache.
func (s *Store) prepareShared(ctx context.Context, reset func() error) error {
	all, err := s.shared.logs.List(ctx)
	if err != nil {
		return fmt.Errorf("list the shared store's conversations: %w", err)
	}
	stale := false
	if _, err := os.Stat(filepath.Join(s.opts.Dir, staleFile)); err == nil {
		stale = true
	}
	if !stale {
		ids, err := s.conversationIDs()
		if err != nil {
			return err
		}
		for _, id := range ids {
			if _, ok := all[id]; !ok {
				stale = true // a first write that never reached the shared store
				break
			}
		}
	}
	if !stale {
		for id, heads := range all {
			local, err := s.localHeads(id)
			if err != nil {
				return err
			}
			if local.Master > heads.Master || local.Decisions > heads.Decisions ||
				local.Gen != heads.Gen && (local.Master != 0 || local.Decisions != 0) {
				stale = true
				break
			}
			if local.Master == 0 && local.Decisions == 0 {
				continue
			}
			lines, err := s.shared.logs.Read(ctx, id, local)
			if errors.Is(err, ErrLogMismatch) {
				stale = true
				break
			}
			if err != nil {
				return fmt.Errorf("read shared logs of %s: %w", id, err)
			}
			if checkPrev(s.logPath(id), local.Master, lines.PrevMaster) != nil ||
				checkPrev(s.decisionsPath(id), local.Decisions, lines.PrevDecisions) != nil {
				stale = true
				break
			}
		}
	}
	if stale {
		s.log.Warn("the local cache does not match the shared store; rebuilding it", "dir", s.opts.Dir)
		if err := reset(); err != nil {
			return err
		}
	}
	for id, heads := range all {
		if ValidateConversationID(id) != nil {
			s.log.Warn("ignoring a shared conversation with an invalid id", "conversation", id)
			continue
		}
		if _, _, err := s.pull(ctx, id, heads, func(from LogHeads) (LogLines, error) { return s.shared.logs.Read(ctx, id, from) }); err != nil {
			return err
		}
	}
	return nil
}

// cacheEntries are what a cache directory holds besides vc.db, removed when
// it is rebuilt.
var cacheEntries = []string{indexDir, logsDir, decisionsDir, quarantineDir, staleFile}

func removeCache(dir string) error {
	for _, name := range cacheEntries {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("empty the cache %s: %w", dir, err)
		}
	}
	return os.MkdirAll(filepath.Join(dir, logsDir), 0o700)
}

// MigrateResult says what MigrateToShared did.
type MigrateResult struct {
	Conversations int // copied
	Skipped       int // already in the shared store, identical
	Lines         int
}

// MigrateToShared copies every conversation of the data directory dir (its
// master and decisions logs, line for line) into the shared logs. A
// conversation already there with the same lines is skipped; one there with
// other lines is an error, and nothing of it is copied. dir should not be
// in use.
func MigrateToShared(ctx context.Context, dir string, logs SharedLogs, progress Progress) (MigrateResult, error) {
	var res MigrateResult
	s := &Store{opts: Options{Dir: dir}}
	ids, err := s.conversationIDs()
	if err != nil {
		return res, err
	}
	for i, id := range ids {
		local, err := s.localHeads(id)
		if err != nil {
			return res, err
		}
		var lines LogLines
		if lines.Master, err = linesOf(s.logPath(id), 0, local.Master); err != nil {
			return res, err
		}
		if lines.Decisions, err = linesOf(s.decisionsPath(id), 0, local.Decisions); err != nil {
			return res, err
		}
		sess, err := logs.Lock(ctx, id)
		if err != nil {
			return res, fmt.Errorf("lock %s in the shared store: %w", id, err)
		}
		h := sess.Heads()
		switch {
		case h == (LogHeads{}):
			if err := sess.Append(ctx, lines); err != nil {
				_ = sess.Rollback(ctx)
				return res, fmt.Errorf("copy %s: %w", id, err)
			}
			if err := sess.Commit(ctx); err != nil {
				return res, fmt.Errorf("copy %s: %w", id, err)
			}
			res.Conversations++
			res.Lines += len(lines.Master) + len(lines.Decisions)
		case h == LogHeads{Master: size(lines.Master), Decisions: size(lines.Decisions)} && sameLast(ctx, sess, lines):
			_ = sess.Rollback(ctx)
			res.Skipped++
		default:
			_ = sess.Rollback(ctx)
			return res, fmt.Errorf("%w: conversation %q is already in the shared store with other content; nothing of it was copied (rename it, or copy it to another database)", ErrInvalid, id)
		}
		if progress != nil {
			progress(i+1, len(ids), id)
		}
	}
	return res, nil
}

func size(lines [][]byte) int64 {
	var n int64
	for _, l := range lines {
		n += int64(len(l))
	}
	return n
}

// sameLast reports whether the shared logs end with lines' last lines.
func sameLast(ctx context.Context, sess SharedSession, lines LogLines) bool {
	got, err := sess.Read(ctx, sess.Heads())
	if err != nil {
		return false
	}
	last := func(ls [][]byte) []byte {
		if len(ls) == 0 {
			return nil
		}
		return ls[len(ls)-1]
	}
	return bytes.Equal(got.PrevMaster, last(lines.Master)) && bytes.Equal(got.PrevDecisions, last(lines.Decisions))
}

// pullAll appends to the cache every shared conversation's missing lines
// (conversations other processes created included), so that operations over
// all conversations see them; loaded ones replay them when next used.
// Failures are logged: the local view is then only older.
func (s *Store) pullAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, err := s.shared.logs.List(ctx)
	if err != nil {
		s.log.Warn("listing the shared store's conversations failed", "err", err)
		return
	}
	for id, heads := range all {
		if ValidateConversationID(id) != nil {
			continue
		}
		if _, _, err := s.pull(ctx, id, heads, func(from LogHeads) (LogLines, error) { return s.shared.logs.Read(ctx, id, from) }); err != nil && !errors.Is(err, ErrRewritten) {
			// (a rewritten conversation is rebuilt when an operation uses it)
			s.log.Warn("catching up a shared conversation failed", "conversation", id, "err", err)
		}
	}
}

// indexNow indexes what other processes added before an operation reads
// it, however much it is (a local store leaves a large replay to the
// reconciler; a shared one answers reads caught up). A failure is left to
// the reconciler.
func (s *Store) indexNow(ctx context.Context, c *conv) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(c.turns) > c.meta.IndexedThrough {
		if err := s.indexTurns(ctx, c, c.meta.IndexedThrough+1, len(c.turns), heldWriter); err != nil {
			s.log.Warn("indexing shared turns failed; the reconciler retries", "conversation", c.id, "err", err)
			s.kickReconciler()
			return
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := s.indexSummaries(ctx, c); err != nil {
		s.log.Warn("indexing shared summaries failed; the reconciler retries", "conversation", c.id, "err", err)
		s.kickReconciler()
	}
}

// adoptRewrite replaces this cache's copy of conversation id with the
// shared logs, which another process rewrote (forget, scan --redact), and
// rebuilds the conversation's derived state from them as the rewriting
// process did after its own rewrite: the turns whose records changed are
// dropped from the vectors and the index (forgotten) or indexed again
// (redacted). read returns every shared line, from one snapshot.
func (s *Store) adoptRewrite(ctx context.Context, id string, read func() (LogLines, error)) error {
	lines, err := read()
	if err != nil {
		return sharedError(fmt.Errorf("read the rewritten logs of %q: %w", id, err), "")
	}
	gen := lines.Gen
	c, err := s.conversationLocal(ctx, id, false)
	if err != nil {
		return err
	}
	// As a forget of this process does: the writers' lock throughout, the
	// readers' lock only to put the rebuilt state in place (rewriteLock).
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	rl, unlock := lockRewrite(c)
	defer unlock()
	mu := s.shared.fileMu(id)
	mu.Lock()
	defer mu.Unlock()
	local, err := s.localHeads(id)
	if err != nil {
		return err
	}
	if local.Gen >= gen {
		// Another caller of this process adopted these logs, or newer ones
		// (generations only go up). read's snapshot may be older than what
		// the cache holds now: a reader that took it, then waited for the
		// locks while another process rewrote again and a writer of this
		// process adopted that and appended. Putting the old snapshot in
		// place would drop those appends from the cache, and a forget of
		// this process that had caught up already would then replace the
		// shared logs with that cache, dropping them everywhere.
		return nil
	}
	old, err := os.ReadFile(s.logPath(id))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read cached log: %w", err)
	}
	oldRecs := map[int][]byte{}
	if _, err := masterlog.Scan(bytes.NewReader(old), 0, func(fr masterlog.Frame) error { oldRecs[fr.Seq] = fr.Line; return nil }, nil); err != nil {
		return err
	}
	master, decisions := bytes.Join(lines.Master, nil), bytes.Join(lines.Decisions, nil)
	edits := map[int]*masterlog.Record{}
	var seqs []int
	affected := map[string]bool{}
	if _, err := masterlog.Scan(bytes.NewReader(master), 0, func(fr masterlog.Frame) error {
		o, ok := oldRecs[fr.Seq]
		if !ok || bytes.Equal(o, fr.Line) {
			return nil
		}
		rec, err := fr.Record()
		if err != nil {
			return err
		}
		if rec.Forgotten {
			edits[fr.Seq] = nil
		} else {
			edits[fr.Seq] = &rec
		}
		seqs = append(seqs, fr.Seq)
		if t := c.turn(fr.Seq); t != nil {
			for _, tag := range t.Tags {
				affected[tag] = true
			}
		}
		return nil
	}, nil); err != nil {
		return fmt.Errorf("read the rewritten log of %q: %w", id, err)
	}
	sort.Ints(seqs)
	gone := c.goneTopics(edits)
	if c.dlog != nil {
		if err := c.dlog.Close(); err != nil {
			return err
		}
		c.dlog = nil
	}
	// The generation goes last: until it is written, the next use finds
	// the cache of an older generation and adopts the shared logs again.
	if err := os.MkdirAll(filepath.Dir(s.decisionsPath(id)), 0o700); err != nil {
		return err
	}
	if err := files.AtomicWrite(s.decisionsPath(id), decisions); err != nil {
		return s.divergedError(id, fmt.Errorf("replace the cached decisions log: %w", err))
	}
	nlog := rewrittenLog{c.log, int64(len(master))}
	if rl.whole {
		if err := c.log.Replace(master); err != nil {
			return s.divergedError(id, fmt.Errorf("replace the cached master log: %w", err))
		}
	} else if nlog.log, err = c.log.Successor(master); err != nil {
		// The new file may be in place: nothing reads the old one on.
		return s.divergedError(id, fmt.Errorf("replace the cached master log: %w", errors.Join(err, c.log.Release())))
	}
	if err := s.writeGen(id, gen); err != nil {
		useLog(s, c, nlog, rl)
		return s.divergedError(id, err)
	}
	s.log.Info("another process rewrote a shared conversation; rebuilt it from the shared store", "conversation", id, "turns_rewritten", len(seqs), "generation", gen)
	return s.afterRewrite(ctx, c, nlog, rl, edits, seqs, affected, gone)
}
