package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

// Check reads a data directory and reports its state without writing a
// byte, as `bbolt check` or `git fsck` do: every record of every master log
// and every line of every decisions log is verified, vc.db's pages are
// checked, and each conversation's committed state is compared with its
// logs. It says what was lost (acknowledged turns whose records are gone or
// damaged), what the next start repairs by itself (a torn tail, records
// after the last commit, an index behind), and what to do. id, when not
// empty, limits the check to one conversation.
//
// vc.db is opened read-only; while a running vc-mcp holds it (a server
// serving the directory), the logs alone are checked and the report says
// so. An error is returned only when the directory cannot be read at all.
func Check(ctx context.Context, dir, id string) (CheckReport, error) {
	rep := CheckReport{Dir: dir, DB: DBUnread}
	if _, err := os.Stat(dir); err != nil {
		return rep, fmt.Errorf("check %s: %w", dir, err)
	}
	var metas map[string]*conv
	db, err := openForCheck(filepath.Join(dir, dbFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rep.DB = DBMissing
	case errors.Is(err, errDBInUse):
		rep.DB = DBInUse
	case err != nil:
		rep.DB = DBDamaged
		rep.DBErrors = append(rep.DBErrors, err.Error())
	default:
		rep.DB = DBOK
		// boltDB makes a damaged page's panic an error.
		metas, err = checkDB(boltDB{DB: db, dir: dir, log: slog.New(slog.DiscardHandler)}, id, &rep)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			rep.DB = DBDamaged
			rep.DBErrors = append(rep.DBErrors, err.Error())
		}
	}
	ids, err := checkIDs(dir, id, metas)
	if err != nil {
		return rep, err
	}
	if id != "" && metas[id] == nil && !exists(filepath.Join(dir, logsDir, fileName(id)+logExt)) && !exists(filepath.Join(dir, logsDir, id+logExt)) {
		return rep, fmt.Errorf("check %s: %w: no conversation %q is stored there", dir, ErrNotFound, id)
	}
	for _, cid := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		cc, err := checkConversation(dir, cid, metas[cid])
		if err != nil {
			return rep, err
		}
		rep.Conversations = append(rep.Conversations, cc)
	}
	for _, cc := range rep.Conversations {
		for _, f := range cc.Findings {
			if f.Level == LevelProblem {
				rep.Problems++
			}
		}
	}
	if rep.DB == DBDamaged {
		rep.Problems++
		rep.DBAction = damagedMessage(dir, false)
	}
	return rep, nil
}

// CheckReport is what Check found.
type CheckReport struct {
	Dir string `json:"data_dir"`
	// DB is how vc.db was read: DBOK, DBMissing, DBInUse or DBDamaged.
	DB       string   `json:"vc_db"`
	DBErrors []string `json:"vc_db_errors,omitempty"`
	// DBAction says what to do about a damaged vc.db.
	DBAction string `json:"vc_db_action,omitempty"`
	// Conversations are the conversations with a log or a state, by id.
	Conversations []ConversationCheck `json:"conversations"`
	// Problems counts the findings at LevelProblem, a damaged vc.db
	// included: zero means nothing is lost and nothing needs the user.
	Problems int `json:"problems"`
}

// How Check read vc.db.
const (
	DBOK      = "ok"
	DBMissing = "missing" // the next start rebuilds it from the logs
	DBInUse   = "in use"  // a running vc-mcp holds it: the logs alone were checked
	DBDamaged = "damaged"
	DBUnread  = "unread"
)

// ConversationCheck is one conversation's part of a check.
type ConversationCheck struct {
	ID string `json:"id"`
	// Records and LogBytes are the master log's verified records and size.
	Records  int   `json:"records"`
	LogBytes int64 `json:"log_bytes"`
	// Decisions counts the decisions log's verified lines.
	Decisions int `json:"decisions"`
	// Turns is how many turns vc.db holds (when it was read), damaged
	// placeholders included.
	Turns    int       `json:"turns"`
	Findings []Finding `json:"findings,omitempty"`
}

// Finding is one thing a check found.
type Finding struct {
	// Level is LevelProblem (something is lost or damaged, or needs the
	// user) or LevelNotice (the next start repairs it by itself, or it was
	// dealt with before).
	Level  string `json:"level"`
	What   string `json:"what"`
	Action string `json:"action,omitempty"`
}

// Finding levels.
const (
	LevelProblem = "problem"
	LevelNotice  = "notice"
)

var errDBInUse = errors.New("vc.db is held by a running vc-mcp")

// openForCheck opens vc.db read-only; a writer holding it (a running
// server) is errDBInUse.
func openForCheck(path string) (*bolt.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, errDBInUse
	}
	if err != nil {
		return nil, fmt.Errorf("open vc.db: %w", err)
	}
	return db, nil
}

// checkDB runs bbolt's consistency check over vc.db and loads each
// conversation's committed state (only id's when it is set).
func checkDB(db boltDB, id string, rep *CheckReport) (map[string]*conv, error) {
	metas := map[string]*conv{}
	err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			rep.DBErrors = append(rep.DBErrors, err.Error())
		}
		if len(rep.DBErrors) > 0 {
			return fmt.Errorf("vc.db fails bbolt's consistency check (%d errors)", len(rep.DBErrors))
		}
		b := tx.Bucket(bucketConvs)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			if id != "" && string(k) != id {
				return nil
			}
			c, err := loadConv(tx, string(k))
			if err != nil {
				return err
			}
			metas[string(k)] = c
			return nil
		})
	})
	return metas, err
}

// checkIDs lists the conversations to check: those with a master log and
// those vc.db knows.
func checkIDs(dir, id string, metas map[string]*conv) ([]string, error) {
	if id != "" {
		return []string{id}, nil
	}
	seen := map[string]bool{}
	for cid := range metas {
		seen[cid] = true
	}
	entries, err := os.ReadDir(filepath.Join(dir, logsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list master logs: %w", err)
	}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), logExt); ok && !e.IsDir() {
			seen[idFromFileName(name)] = true
		}
	}
	ids := make([]string, 0, len(seen))
	for cid := range seen {
		ids = append(ids, cid)
	}
	slices.Sort(ids)
	return ids, nil
}

// checkConversation verifies one conversation's logs, and compares them
// with its committed state c when vc.db was read (nil otherwise).
func checkConversation(dir, id string, c *conv) (ConversationCheck, error) {
	cc := ConversationCheck{ID: id}
	problem := func(action, format string, args ...any) {
		cc.Findings = append(cc.Findings, Finding{Level: LevelProblem, What: fmt.Sprintf(format, args...), Action: action})
	}
	notice := func(action, format string, args ...any) {
		cc.Findings = append(cc.Findings, Finding{Level: LevelNotice, What: fmt.Sprintf(format, args...), Action: action})
	}
	file := fileName(id)
	quarantineFile := filepath.Join(quarantineDir, file+logExt)
	known := 0
	if c != nil {
		known = len(c.turns)
		cc.Turns = known
	}

	// The master log.
	path := filepath.Join(dir, logsDir, file+logExt)
	if legacy := filepath.Join(dir, logsDir, id+logExt); legacy != path && !exists(path) && exists(legacy) {
		path = legacy
		notice("the next start renames it", "the master log has its old-style name (%s), which may clash with another id's on a case-insensitive file system", id+logExt)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if known > 0 {
			problem("restore "+filepath.Join(logsDir, file+logExt)+" from a backup: vc.db holds no text, and the logs are the only copy",
				"the master log is missing: the %d turns vc.db knows cannot be read", known)
		}
		return cc, nil
	}
	if err != nil {
		return cc, fmt.Errorf("open master log %s: %w", path, err)
	}
	defer f.Close()
	seen := make([]bool, known+1)
	var fresh int
	var damage []masterlog.Damage
	validEnd, err := masterlog.Scan(f, 0, func(fr masterlog.Frame) error {
		cc.Records++
		if fr.Seq <= known {
			seen[fr.Seq] = true
		} else {
			fresh++
		}
		return nil
	}, func(d masterlog.Damage) error {
		damage = append(damage, masterlog.Damage{Start: d.Start, End: d.End, Reason: d.Reason, Data: slices.Clone(d.Data)})
		return nil
	})
	if err != nil {
		return cc, fmt.Errorf("verify master log %s: %w", path, err)
	}
	if st, err := f.Stat(); err == nil {
		cc.LogBytes = st.Size()
	}
	held, err := quarantinedKeys(filepath.Join(dir, quarantineFile))
	if err != nil {
		return cc, err
	}
	for _, d := range damage {
		if held[quarantineKey(d)] {
			notice("", "a damaged record at byte %d (%d bytes: %s) is in %s; the records around it are served", d.Start, len(d.Data), d.Reason, quarantineFile)
			continue
		}
		problem("the next start copies it to "+quarantineFile+" and serves every other record (a stored turn it held is listed as lost)",
			"a record at byte %d (%d bytes) fails verification: %s", d.Start, len(d.Data), d.Reason)
	}
	if cc.LogBytes > validEnd {
		notice("the next start copies it to "+quarantineFile+" and cuts it",
			"the last %d bytes are an unterminated record: a write that never finished, so never acknowledged", cc.LogBytes-validEnd)
	}

	// The log against the committed state.
	if c != nil {
		var lost, placeholders []string
		for seq := 1; seq <= known; seq++ {
			switch {
			case c.turns[seq-1].Damaged:
				placeholders = append(placeholders, turnID(seq))
			case !seen[seq]:
				lost = append(lost, turnID(seq))
			}
		}
		if len(lost) > 0 {
			problem("restore the log from a backup if you have one; otherwise the next start keeps them as damaged placeholders (their ids are never reused)",
				"%d stored turn(s) have no valid record in the log: %s", len(lost), idList(lost))
		}
		if c.meta.LogSize > validEnd && len(lost) == 0 {
			problem("restore the log from a backup if you have one",
				"the log ends at byte %d but %d bytes were committed: the file was cut short", validEnd, c.meta.LogSize)
		}
		if len(placeholders) > 0 {
			problem("restore the log from a backup to get their text back; otherwise nothing is to be done: every other turn is served",
				"%d turn(s) are damaged placeholders (%s): their records failed verification or went missing, and their bytes are in %s", len(placeholders), idList(placeholders), quarantineFile)
		}
		if fresh > 0 {
			notice("the next start replays them (a crash came between the log's fsync and vc.db's commit)",
				"%d record(s) after the last commit", fresh)
		}
		if _, err := os.Stat(filepath.Join(dir, indexDir)); errors.Is(err, fs.ErrNotExist) && known > 0 {
			notice("a server rebuilds it in the background; recall and find_quote say they are catching up meanwhile",
				"the search index (%s/) is missing", indexDir)
		} else if behind := known - c.meta.IndexedThrough; behind > 0 {
			notice("a server catches the index up in the background; recall and find_quote say so meanwhile",
				"the search index is %d turn(s) behind", behind)
		}
	}

	// The decisions log.
	dpath := filepath.Join(dir, decisionsDir, file+".log")
	df, err := os.Open(dpath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if c != nil && c.meta.DecisionsSize > 0 {
			problem("vc-mcp rebuild remakes the state from the master log alone; compaction makes the summaries again (by LLM, when one is configured)",
				"the decisions log is missing: %d bytes of decisions (compactions, summaries, splits, working set) were committed", c.meta.DecisionsSize)
		}
	case err != nil:
		return cc, fmt.Errorf("open decisions log %s: %w", dpath, err)
	default:
		defer df.Close()
		res, err := scanDecisions(df, 0, func(decision, int64) error {
			cc.Decisions++
			return nil
		})
		if err != nil {
			return cc, fmt.Errorf("verify decisions log %s: %w", dpath, err)
		}
		if len(res.skipped) > 0 {
			problem("left in place and skipped: the decisions they held (a summary, a compaction boundary) are remade by compaction or `vc-mcp summaries regenerate`",
				"%d decision line(s) fail verification, at byte(s) %s", len(res.skipped), offsetList(res.skipped))
		}
		if res.torn {
			notice("overwritten by the next decision", "the decisions log ends in an unterminated line: a write that never finished")
		}
		if c != nil && c.meta.DecisionsSize > res.end {
			problem("vc-mcp rebuild remakes the state from what is left; compaction makes lost summaries again",
				"the decisions log ends at byte %d but %d bytes were committed: the file was cut short", res.end, c.meta.DecisionsSize)
		}
	}
	return cc, nil
}

// quarantinedKeys are the keys (quarantineKey) of the damage a quarantine
// file holds.
func quarantinedKeys(path string) (map[string]bool, error) {
	keys := map[string]bool{}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return keys, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read quarantine file: %w", err)
	}
	for _, line := range splitLines(data) {
		var q quarantined
		if json.Unmarshal(line, &q) == nil {
			keys[q.Key] = true
		}
	}
	return keys, nil
}

// idList shortens a long list of turn ids for a message.
func idList(ids []string) string {
	const most = 10
	if len(ids) <= most {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:most], ", "), len(ids)-most)
}

func offsetList(offs []int64) string {
	s := make([]string, len(offs))
	for i, o := range offs {
		s[i] = fmt.Sprint(o)
	}
	return idList(s)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
