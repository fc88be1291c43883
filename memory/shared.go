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
//     opens next (Open also checks every file against the shared logs).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// LogHeads is the committed size in bytes of a conversation's master log and
// decisions log.
type LogHeads struct {
	Master, Decisions int64
}

// LogLines are lines of both logs, each with its newline, in log order.
// PrevMaster and PrevDecisions are the lines that end where these begin
// (nil at the start of a log), so a reader can check its copy is a prefix.
type LogLines struct {
	Master, Decisions         [][]byte
	PrevMaster, PrevDecisions []byte
}

func (l LogLines) empty() bool { return len(l.Master) == 0 && len(l.Decisions) == 0 }

// ErrLogMismatch: a shared log has no line ending at the asked offset (the
// local copy is not a prefix of it).
var ErrLogMismatch = errors.New("shared log has no line boundary there")

// SharedLogs is where the logs live when several processes share one memory
// (see the top of shared.go). Implementations: package pgstore.
type SharedLogs interface {
	// Heads returns a conversation's committed heads (zero when unknown).
	Heads(ctx context.Context, conv string) (LogHeads, error)
	// List returns every conversation's heads.
	List(ctx context.Context) (map[string]LogHeads, error)
	// Read returns, from one snapshot, the lines after from (an error
	// wrapping ErrLogMismatch when from is not a line boundary).
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
	// Rewrite replaces every line of both logs with lines, in this
	// transaction (forget's rewrite: others see the old logs or the new ones,
	// never a mix; a cache holding the old ones no longer matches and is
	// rebuilt). The store does not call it yet.
	Rewrite(ctx context.Context, lines LogLines) error
}

// staleFile marks a cache directory to rebuild from the shared logs.
const staleFile = "STALE"

// sharedState is the Store's side of the shared logs.
type sharedState struct {
	logs  SharedLogs
	mu    sync.Mutex
	files map[string]*sync.Mutex // per conversation: writes to the cache files
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

// localHeads returns the sizes of a conversation's cache files.
func (s *Store) localHeads(id string) (LogHeads, error) {
	var h LogHeads
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
	_ = os.WriteFile(filepath.Join(s.opts.Dir, staleFile), []byte(id+"\n"), 0o600)
	err := fmt.Errorf("%w: conversation %q: %v", errDiverged, id, cause)
	return &StorageError{Message: err.Error() + "; restart vc-mcp: it rebuilds its cache from the shared store", Err: err}
}

// pull appends the shared lines the cache lacks to its files. read reads
// from the shared store (under the session, or a snapshot). It returns
// whether anything was appended, and ahead when the cache holds more than
// the shared heads.
func (s *Store) pull(ctx context.Context, id string, heads LogHeads, read func(from LogHeads) (LogLines, error)) (pulled, ahead bool, err error) {
	mu := s.shared.fileMu(id)
	mu.Lock()
	defer mu.Unlock()
	local, err := s.localHeads(id)
	if err != nil {
		return false, false, err
	}
	if local.Master > heads.Master || local.Decisions > heads.Decisions {
		return false, true, nil
	}
	if local == heads {
		return false, false, nil
	}
	lines, err := read(local)
	if err != nil {
		if errors.Is(err, ErrLogMismatch) {
			return false, false, s.divergedError(id, err)
		}
		return false, false, fmt.Errorf("read shared logs of %s: %w", id, err)
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
	f, err := openAppendOnly(path, "cached log")
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
func (s *Store) refresh(ctx context.Context, c *conv) error {
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dlog != nil { // its end moved: reopened on the next decision
		if err := c.dlog.close(); err != nil {
			return err
		}
		c.dlog = nil
	}
	var err error
	if c.replay, err = s.loadReplay(c); err != nil {
		return err
	}
	defer func() { c.replay = nil }()
	if err := s.reconcileLog(ctx, c); err != nil {
		return err
	}
	if err := s.applyReplay(ctx, c); err != nil {
		return err
	}
	s.catchUpIndex(ctx, c)
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
	sessions := o.sessions
	o.sessions = nil
	s.mu.Unlock()
	var errs []error
	for id, sess := range sessions {
		if err := s.push(ctx, id, sess); err != nil {
			_ = sess.Rollback(context.WithoutCancel(ctx))
			errs = append(errs, sharedError(fmt.Errorf("commit conversation %q: %w", id, err), "this call was not shared: its changes go with this process's next write to the conversation if no other process writes it first, else they are dropped"))
		}
	}
	return errors.Join(errs...)
}

func (s *Store) push(ctx context.Context, id string, sess SharedSession) error {
	h := sess.Heads()
	local, err := s.localHeads(id)
	if err != nil {
		return err
	}
	var lines LogLines
	if lines.Master, err = linesOf(s.logPath(id), h.Master, local.Master); err != nil {
		return err
	}
	if lines.Decisions, err = linesOf(s.decisionsPath(id), h.Decisions, local.Decisions); err != nil {
		return err
	}
	// Only records that verify leave the cache (a bug or a damaged cache
	// must not reach every process).
	for _, l := range lines.Master {
		if _, err := verifyLine(l[:len(l)-1]); err != nil {
			return fmt.Errorf("refusing to share a master log line that does not verify: %w", err)
		}
	}
	for _, l := range lines.Decisions {
		if _, ok := decodeDecision(l[:len(l)-1]); !ok {
			return fmt.Errorf("refusing to share a decisions log line that does not verify: %q", clip(string(l), 80))
		}
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
			if local.Master > heads.Master || local.Decisions > heads.Decisions {
				stale = true
				break
			}
			if local == (LogHeads{}) {
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
		if _, _, err := s.pull(ctx, id, heads, func(from LogHeads) (LogLines, error) { return s.shared.logs.Read(ctx, id, from) }); err != nil {
			s.log.Warn("catching up a shared conversation failed", "conversation", id, "err", err)
		}
	}
}

// indexNow indexes what other processes added before an operation reads
// it, however much it is (a local store leaves a large replay to the
// reconciler; a shared one answers reads caught up). A failure is left to
// the reconciler.
func (s *Store) indexNow(ctx context.Context, c *conv) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.turns) > c.meta.IndexedThrough {
		if err := s.indexTurns(ctx, c, c.meta.IndexedThrough+1, len(c.turns)); err != nil {
			s.log.Warn("indexing shared turns failed; the reconciler retries", "conversation", c.id, "err", err)
			s.kickReconciler()
			return
		}
	}
	if err := s.indexSummaries(ctx, c); err != nil {
		s.log.Warn("indexing shared summaries failed; the reconciler retries", "conversation", c.id, "err", err)
		s.kickReconciler()
	}
}
