package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/memory/vcdb"
)

// Check reads a data directory and reports its state without writing a
// byte, as `bbolt check` or `git fsck` do: every record of every master log
// and every line of every decisions log is verified, vc.db's pages are
// checked, and each conversation's committed state is compared with its
// logs, the same way the store compares them when it loads a conversation
// (scanLog). It says what is lost or at risk (problems), what the next
// start repairs by itself or was dealt with before (notices), and what to
// do; what it could not read is reported as unchecked. id, when not empty,
// limits the check to one conversation.
//
// vc.db is read under bbolt's shared lock and closed before the logs are
// read. While a running vc-mcp holds it, the logs alone are checked and
// the report says so. An error is returned only when the directory cannot
// be read at all, id is not a conversation id, or ctx ends.
func Check(ctx context.Context, dir, id string) (CheckReport, error) {
	rep := CheckReport{Dir: dir, DB: DBUnread, Findings: []Finding{}, Conversations: []ConversationCheck{}}
	if id != "" {
		if err := ValidateConversationID(id); err != nil {
			return rep, err
		}
	}
	if _, err := os.ReadDir(dir); err != nil {
		return rep, fmt.Errorf("check %s: %w", dir, err)
	}
	states := checkDB(dir, id, &rep)
	ids, err := checkIDs(dir, id, states)
	if err != nil {
		return rep, err
	}
	if id != "" && len(ids) == 0 {
		return rep, fmt.Errorf("check %s: %w: no conversation %q is stored there", dir, ErrNotFound, id)
	}
	if _, err := os.Stat(filepath.Join(dir, indexDir)); errors.Is(err, fs.ErrNotExist) && len(ids) > 0 {
		rep.Findings = append(rep.Findings, Finding{Level: LevelNotice, What: "the search index (" + indexDir + "/) is missing",
			Action: "a server rebuilds it in the background; recall and find_quote say they are catching up meanwhile"})
	}
	for _, cid := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		cc, err := checkConversation(ctx, dir, cid, states[cid], rep.DB == DBOK)
		if err != nil {
			return rep, err
		}
		rep.Conversations = append(rep.Conversations, cc)
	}
	count := func(fs []Finding) {
		for _, f := range fs {
			switch f.Level {
			case LevelProblem:
				rep.Problems++
			case LevelUnchecked:
				rep.Unchecked++
			}
		}
	}
	count(rep.Findings)
	for _, cc := range rep.Conversations {
		count(cc.Findings)
	}
	return rep, nil
}

// CheckReport is what Check found.
type CheckReport struct {
	Dir string `json:"data_dir"`
	// DB is how vc.db was read: DBOK, DBMissing, DBInUse, DBPending,
	// DBDamaged or DBUnread.
	DB string `json:"vc_db"`
	// Findings are those about the directory as a whole (vc.db, the
	// index); each conversation has its own.
	Findings []Finding `json:"findings"`
	// Conversations are the conversations with a log or a state, by id.
	Conversations []ConversationCheck `json:"conversations"`
	// Problems counts the findings at LevelProblem: zero means nothing is
	// lost or at risk. Unchecked counts those at LevelUnchecked.
	Problems  int `json:"problems"`
	Unchecked int `json:"unchecked"`
}

// How Check read vc.db.
const (
	DBOK      = "ok"
	DBMissing = "missing" // missing or empty: the next start makes it from the logs
	DBInUse   = "in_use"  // a running vc-mcp holds it: the logs alone were checked
	DBPending = "pending" // a compaction of it a crash cut short: the next start finishes it
	DBDamaged = "damaged"
	DBUnread  = "unread" // it could not be read (see the findings)
)

// ConversationCheck is one conversation's part of a check.
type ConversationCheck struct {
	ID string `json:"id"`
	// Records and LogBytes are the master log's verified records and size.
	Records  int   `json:"records"`
	LogBytes int64 `json:"log_bytes"`
	// Decisions counts the decisions log's verified lines.
	Decisions int `json:"decisions"`
	// Turns is how many turns vc.db holds, damaged placeholders included
	// (0 when vc.db was not read).
	Turns    int       `json:"turns"`
	Findings []Finding `json:"findings"`
}

// Finding is one thing a check found.
type Finding struct {
	// Level is LevelProblem (something is lost, damaged or at risk),
	// LevelNotice (the next start repairs it by itself, or it was dealt
	// with before) or LevelUnchecked (it could not be read).
	Level  string `json:"level"`
	What   string `json:"what"`
	Action string `json:"action,omitempty"`
}

// Finding levels.
const (
	LevelProblem   = "problem"
	LevelNotice    = "notice"
	LevelUnchecked = "unchecked"
)

// checkState is what a check needs of a conversation's committed state.
type checkState struct {
	meta  convMeta
	spans []turnSpan // spans[seq-1]
	// err is why the state does not decode (the rest is then empty).
	err error
}

// keepVCDB is the advice for a decisions log that lost lines vc.db had
// applied: vc.db is then the only copy of what they recorded.
const keepVCDB = "vc.db still holds what they recorded: keep it (do not run `vc-mcp rebuild` or delete vc.db, which would make their topics and summaries again, an LLM's by calling it again)"

// checkDB reads vc.db under bbolt's shared lock: its consistency, and the
// committed state of each conversation (only id's when it is set). It
// sets rep.DB, and adds what it found to rep.Findings.
func checkDB(dir, id string, rep *CheckReport) map[string]*checkState {
	path := filepath.Join(dir, dbFile)
	add := func(level, action, format string, args ...any) {
		rep.Findings = append(rep.Findings, Finding{Level: level, What: fmt.Sprintf(format, args...), Action: action})
	}
	if st, err := os.Stat(path + vcdb.CompactedSuffix); err == nil {
		// Its complete copy: whether it can finish the compaction decides
		// what the next start does (vc.db itself may be half written).
		if !st.Mode().IsRegular() {
			err = fmt.Errorf("%s is not a file", dbFile+vcdb.CompactedSuffix)
		} else {
			err = vcdb.VerifyCompacted(path)
		}
		if err != nil {
			rep.DB = DBDamaged
			add(LevelProblem, damagedAction(dir), "a compaction of vc.db was cut short by a crash and its copy cannot finish it: %v", err)
			return nil
		}
		rep.DB = DBPending
		add(LevelNotice, "the next start finishes it; the logs alone were checked",
			"a compaction of vc.db is under way, or was cut short by a crash (%s is its complete copy)", dbFile+vcdb.CompactedSuffix)
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && st.Mode().IsRegular() && st.Size() == 0:
		rep.DB = DBMissing
		add(LevelNotice, "the next start makes it again from the logs", "vc.db is missing or empty")
		return nil
	case err == nil && !st.Mode().IsRegular():
		err = errors.New("not a regular file")
	}
	var db *bolt.DB
	if err == nil {
		// One read-only open: its View checks the size (vcdb.CutShort)
		// before it reads a page past the meta pages.
		db, err = vcdb.OpenReadOnly(path, time.Second)
	}
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		rep.DB = DBInUse
		add(LevelNotice, holderAdvice(dir), "vc.db is held by a running vc-mcp, so the logs alone were checked")
		return nil
	case vcdb.IsDamaged(err):
		rep.DB = DBDamaged
		add(LevelProblem, damagedAction(dir), "vc.db is damaged: %v", err)
		return nil
	case err != nil:
		add(LevelUnchecked, "", "vc.db could not be read: %v", err)
		return nil
	}
	states := map[string]*checkState{}
	var problems []string
	// With no Damaged, a page bbolt panics on is the *vcdb.PanicError
	// itself: the finding says its cause, and its action the repair.
	err = vcdb.DB{DB: db}.View(func(tx *bolt.Tx) error {
		if err := vcdb.CutShort(tx, path); err != nil {
			return err
		}
		for err := range tx.Check() {
			problems = append(problems, bboltCheck+err.Error())
		}
		if len(problems) > 0 {
			return nil
		}
		if v := tx.Bucket(bucketMeta); v != nil {
			if schema := v.Get(keySchema); schema != nil && string(schema) != schemaVersion {
				problems = append(problems, fmt.Sprintf("its schema is %q, not %q (written by another version)", schema, schemaVersion))
				return nil
			}
		}
		b := tx.Bucket(bucketConvs)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if id == "" || string(k) == id {
				states[string(k)] = loadCheckState(tx, string(k), v)
			}
			return nil
		})
	})
	err = errors.Join(err, db.Close())
	switch {
	case len(problems) > 0:
		rep.DB = DBDamaged
		add(LevelProblem, damagedAction(dir), "vc.db cannot be used: %s", strings.Join(problems[:min(len(problems), 5)], "; "))
		return nil
	case err != nil:
		rep.DB = DBDamaged
		add(LevelProblem, damagedAction(dir), "vc.db is damaged: %v", err)
		return nil
	}
	rep.DB = DBOK
	return states
}

// bboltCheck names bbolt's consistency check in a finding.
const bboltCheck = "bbolt's consistency check: "

func damagedAction(dir string) string {
	return "stop vc-mcp and run `vc-mcp rebuild --data-dir " + dir + "`: vc.db is remade from the master logs and the decisions logs, which hold every stored message"
}

// loadCheckState reads one conversation's committed state: its header
// (meta, the value in bucketConvs) and its turns' ranges.
func loadCheckState(tx *bolt.Tx, id string, meta []byte) *checkState {
	cs := &checkState{}
	if err := json.Unmarshal(meta, &cs.meta); err != nil {
		return &checkState{err: fmt.Errorf("its header does not decode: %w", err)}
	}
	b := tx.Bucket(convBucketName(id))
	if b == nil {
		return cs
	}
	tb := b.Bucket(bucketTurns)
	if tb == nil {
		return cs
	}
	err := forEachRecord(tb, func(seq int, v []byte) error {
		t, err := decodeTurn(v)
		if err != nil {
			return fmt.Errorf("turn %d does not decode: %w", seq, err)
		}
		if t.Seq != len(cs.spans)+1 {
			return fmt.Errorf("turn %d is out of sequence", t.Seq)
		}
		cs.spans = append(cs.spans, turnSpan{start: t.Start, end: t.End, damaged: t.Damaged})
		return nil
	})
	if err != nil {
		return &checkState{err: err}
	}
	return cs
}

// checkIDs lists the conversations to check: those with a master log or a
// decisions log, and those vc.db holds (only id, when it is set).
func checkIDs(dir, id string, states map[string]*checkState) ([]string, error) {
	seen := map[string]bool{}
	for cid := range states {
		seen[cid] = true
	}
	for _, d := range []struct{ dir, ext string }{{logsDir, logExt}, {decisionsDir, decisionsExt}} {
		entries, err := os.ReadDir(filepath.Join(dir, d.dir))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("list %s: %w", d.dir, err)
		}
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), d.ext); ok {
				if cid := idFromFileName(name); ValidateConversationID(cid) == nil {
					seen[cid] = true
				}
			}
		}
	}
	var ids []string
	for cid := range seen {
		if id == "" || cid == id {
			ids = append(ids, cid)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// checkConversation verifies one conversation's logs, and compares them
// with its committed state st (nil when vc.db does not hold it, or was not
// read: dbRead says which).
func checkConversation(ctx context.Context, dir, id string, st *checkState, dbRead bool) (ConversationCheck, error) {
	cc := ConversationCheck{ID: id, Findings: []Finding{}}
	add := func(level, action, format string, args ...any) {
		cc.Findings = append(cc.Findings, Finding{Level: level, What: fmt.Sprintf(format, args...), Action: action})
	}
	stateDamaged := st != nil && st.err != nil
	if stateDamaged {
		add(LevelProblem, damagedAction(dir), "vc.db's record of this conversation is damaged: %v", st.err)
		st = nil
	}
	var meta convMeta
	if st != nil {
		meta = st.meta
		cc.Turns = len(st.spans)
	}
	quarantineFile := convFile("", quarantineDir, id, logExt)
	path, legacy := masterLogFile(dir, id)
	if legacy {
		add(LevelNotice, "the next start renames it", "the master log has its old-style name (%s), which some file systems cannot hold apart (case-insensitive ones; Windows, for its device names)", filepath.Base(path))
	}
	f, size, err := openRegular(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if cc.Turns > 0 {
			add(LevelProblem, "restore "+convFile("", logsDir, id, logExt)+" from a backup, before anything is stored in this conversation again: vc.db holds no text, the log is the only copy, and until then the conversation reads as empty",
				"the master log is missing: the %d turns vc.db holds cannot be read", cc.Turns)
		}
	case err != nil:
		add(LevelUnchecked, "", "the master log could not be read: %v", err)
	default:
		err := checkMasterLog(ctx, f, size, st, quarantinePath(dir, id), quarantineFile, &cc, add)
		f.Close()
		if err != nil {
			return cc, err
		}
		if st == nil && dbRead && !stateDamaged && cc.Records > 0 {
			add(LevelNotice, "the next start replays them", "vc.db holds none of the log's %d record(s) (a crash came before its first commit)", cc.Records)
		}
	}
	if st != nil && len(st.spans) > meta.IndexedThrough {
		if _, err := os.Stat(filepath.Join(dir, indexDir)); err == nil {
			add(LevelNotice, "a server catches it up in the background; recall and find_quote say so meanwhile",
				"the search index is %d turn(s) behind", len(st.spans)-meta.IndexedThrough)
		}
	}
	return cc, checkDecisions(ctx, dir, id, st, &cc, add)
}

// checkMasterLog verifies the master log in f (size bytes) against the
// committed state st (nil when unknown).
func checkMasterLog(ctx context.Context, f *os.File, size int64, st *checkState, qpath, qfile string, cc *ConversationCheck, add func(level, action, format string, args ...any)) error {
	cc.LogBytes = size
	known := 0
	span := func(int) turnSpan { return turnSpan{} }
	if st != nil {
		known = len(st.spans)
		span = func(seq int) turnSpan { return st.spans[seq-1] }
	}
	sc, err := scanLog(ctx, f, size, known, span)
	if err != nil {
		return fmt.Errorf("verify master log %s: %w", f.Name(), err)
	}
	cc.Records = sc.records
	held, err := quarantinedKeys(qpath)
	if err != nil {
		add(LevelUnchecked, "", "the quarantine file %s could not be read: %v", qfile, err)
	}
	quarantined := 0
	for _, d := range sc.damage {
		switch {
		case d.Start == sc.end && sc.end < size: // the torn tail
			acked := st != nil && sc.end < st.meta.LogSize
			what := "the last %d bytes are an unterminated record, a write that never finished"
			if !acked {
				what += ", so never acknowledged"
			}
			add(LevelNotice, "the next start copies them to "+qfile+" and cuts them", what, size-sc.end)
		case held[quarantineKey(d)]:
			quarantined++
			add(LevelNotice, "", "a damaged record at byte %d (%d bytes: %s) is in %s; the records around it are served", d.Start, len(d.Data), d.Reason, qfile)
		case st != nil && d.Start >= st.meta.LogSize:
			add(LevelNotice, "the next start copies it to "+qfile+" and goes on without it",
				"a record at byte %d (%d bytes), after the last commit, fails verification: %s (it was never acknowledged)", d.Start, len(d.Data), d.Reason)
		default:
			add(LevelProblem, "the next start copies it to "+qfile+" and serves every other record (a stored turn it held is listed as lost)",
				"a record at byte %d (%d bytes) fails verification: %s", d.Start, len(d.Data), d.Reason)
		}
	}
	if sc.unterminated {
		add(LevelNotice, "the next start puts the newline back", "the last record has lost its newline; it verifies and is kept")
	}
	var missing []int
	for _, g := range sc.gaps {
		for seq := g[0]; seq <= g[1] && len(missing) <= 10; seq++ {
			missing = append(missing, seq)
		}
	}
	gapCount := 0
	for _, g := range sc.gaps {
		gapCount += g[1] - g[0] + 1
	}
	switch {
	case gapCount == 0:
	case st != nil:
		add(LevelNotice, "the next start keeps damaged placeholders for them",
			"%d turn number(s) after the last commit have no record in the log (never acknowledged): %s", gapCount, seqList(missing))
	case gapCount <= quarantined:
		add(LevelNotice, "", "%d turn number(s) have no valid record in the log, as many as the damaged records in %s: %s", gapCount, qfile, seqList(missing))
	default:
		add(LevelProblem, "restore the log from a backup if you have one (vc.db was not read, so which of them were stored is not known here)",
			"%d turn number(s) have no record in the log: %s", gapCount, seqList(missing))
	}
	if st == nil {
		return nil
	}
	if len(sc.lost) > 0 {
		add(LevelProblem, "restore the log from a backup before vc-mcp starts again, if you have one: the next start keeps them as damaged placeholders (their ids are never reused)",
			"%d stored turn(s) have no valid record in the log: %s", len(sc.lost), seqList(sc.lost))
	}
	if len(sc.restored) > 0 {
		add(LevelNotice, "stop vc-mcp and run `vc-mcp rebuild` to get their text back",
			"%d damaged placeholder(s) have a valid record in the log again (was it restored?): %s", len(sc.restored), seqList(sc.restored))
	}
	var placeholders []int
	for seq, t := range st.spans {
		if t.damaged && !slices.Contains(sc.restored, seq+1) {
			placeholders = append(placeholders, seq+1)
		}
	}
	if len(placeholders) > 0 {
		add(LevelNotice, "their text is gone unless a backup of the log has it (a damaged record's bytes are kept in "+qfile+"): restore the log, then run `vc-mcp rebuild`",
			"%d turn(s) are damaged placeholders, their records damaged or missing when a start verified the log: %s", len(placeholders), seqList(placeholders))
	}
	if len(sc.moved) > 0 {
		add(LevelNotice, "the next start finds them at their new place",
			"%d record(s) lie at other byte ranges than vc.db says (the log was rewritten by a forget or a redaction that a crash cut short, or bytes were inserted before them)", len(sc.moved))
	}
	if st.meta.LogSize > sc.end && len(sc.lost) == 0 {
		add(LevelNotice, "the next start takes the log's size",
			"the log ends at byte %d, before the %d bytes vc.db committed, yet holds every stored turn's record (a forget or redaction that rewrote it was cut short by a crash)", sc.end, st.meta.LogSize)
	}
	if len(sc.fresh) > 0 {
		add(LevelNotice, "the next start replays them",
			"%d record(s) after the last commit (a crash came between the log's fsync and vc.db's commit)", len(sc.fresh))
	}
	return nil
}

// checkDecisions verifies a conversation's decisions log against its
// committed state st (nil when unknown).
func checkDecisions(ctx context.Context, dir, id string, st *checkState, cc *ConversationCheck, add func(level, action, format string, args ...any)) error {
	path, _ := legacyFile(dir, decisionsDir, id, decisionsExt)
	name, _ := filepath.Rel(dir, path)
	f, size, err := openRegular(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if st != nil && st.meta.DecisionsSize > 0 {
			add(LevelProblem, keepVCDB+"; restore "+name+" from a backup if you have one",
				"the decisions log is missing: vc.db applied %d bytes of it (tags, compactions, summaries, splits, the working set)", st.meta.DecisionsSize)
		}
		return nil
	case err != nil:
		add(LevelUnchecked, "", "the decisions log could not be read: %v", err)
		return nil
	}
	defer f.Close()
	res, err := scanDecisions(io.NewSectionReader(f, 0, size), 0, func(decision, int64) error {
		cc.Decisions++
		if cc.Decisions%4096 == 0 {
			return ctx.Err()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("verify decisions log %s: %w", name, err)
	}
	var applied, after []int64 // skipped lines vc.db had applied, and those after (never acknowledged)
	for _, off := range res.skipped {
		if st != nil && off >= st.meta.DecisionsSize {
			after = append(after, off)
		} else {
			applied = append(applied, off)
		}
	}
	if len(applied) > 0 {
		add(LevelProblem, "the store skips them; "+keepVCDB+"; restore "+name+" from a backup if you have one",
			"%d decision line(s) fail verification, at byte(s) %s", len(applied), offsetList(applied))
	}
	if len(after) > 0 {
		add(LevelNotice, "the next start skips them",
			"%d decision line(s) after what vc.db applied fail verification (never acknowledged), at byte(s) %s", len(after), offsetList(after))
	}
	if res.torn {
		add(LevelNotice, "the next decision overwrites it", "the decisions log ends in an unterminated line, a write that never finished")
	}
	if st != nil && st.meta.DecisionsSize > res.end {
		add(LevelNotice, keepVCDB+"; the next start goes on from the log's end",
			"the decisions log ends at byte %d, before the %d bytes vc.db applied: its newest lines were lost (tag decisions are not fsync'd, so a power loss can do this)", res.end, st.meta.DecisionsSize)
	}
	return nil
}

// masterLogFile is the path of conversation id's master log, and whether
// it is the old-style name (from before case-safe names) the next start
// renames.
func masterLogFile(dir, id string) (string, bool) {
	return legacyFile(dir, logsDir, id, logExt)
}

// holderAdvice says how to stop the process holding dir's vc.db for a
// full check: the shared daemon stops on request; another process (a
// `serve` of its own, a `serve --http`, a command) is named.
func holderAdvice(dir string) string {
	var h holder
	if data, err := os.ReadFile(filepath.Join(dir, holderFile)); err != nil || json.Unmarshal(data, &h) != nil || h.PID <= 0 {
		return "stop it (vc-mcp daemon stop, or the host's own vc-mcp) for a full check"
	}
	if args := strings.Fields(h.Command); len(args) > 1 && args[1] == "daemon" {
		return fmt.Sprintf("stop it (vc-mcp daemon stop: pid %d is the shared server) for a full check", h.PID)
	}
	return fmt.Sprintf("stop pid %d (%s) for a full check", h.PID, h.Command)
}

// legacyFile is the path of conversation id's file of one kind, and
// whether it is the old-style name (the id itself) the next start renames
// (migrateFileNames): check reads what is there.
func legacyFile(dir, sub, id, ext string) (string, bool) {
	path := convFile(dir, sub, id, ext)
	legacy := filepath.Join(dir, sub, id+ext)
	if legacy != path && !exists(path) && exists(legacy) {
		return legacy, true
	}
	return path, false
}

func quarantinePath(dir, id string) string {
	path, _ := legacyFile(dir, quarantineDir, id, logExt)
	return path
}

// openRegular opens path for reading if it is a regular file (following a
// link), with its size when opened: a FIFO or a device is never read.
func openRegular(path string) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// quarantinedKeys are the keys (quarantineKey) of the damage a quarantine
// file holds, read a line at a time.
func quarantinedKeys(path string) (map[string]bool, error) {
	keys := map[string]bool{}
	f, _, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return keys, nil
	}
	if err != nil {
		return keys, fmt.Errorf("read quarantine file: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadBytes('\n')
		var q struct {
			Key string `json:"key"`
		}
		if len(line) > 0 && json.Unmarshal(line, &q) == nil {
			keys[q.Key] = true
		}
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return keys, fmt.Errorf("read quarantine file: %w", err)
		}
	}
}

func seqList(seqs []int) string {
	ids := make([]string, len(seqs))
	for i, seq := range seqs {
		ids[i] = turnID(seq)
	}
	return shortList(ids, 10)
}

func offsetList(offs []int64) string {
	s := make([]string, len(offs))
	for i, o := range offs {
		s[i] = fmt.Sprint(o)
	}
	return shortList(s, 10)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
