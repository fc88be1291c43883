package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/internal/files"
	"github.com/vc-mcp/vc-mcp/memory/decisionlog"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

// ErrExists marks a conversation that is already in the data directory
// when a bundle that holds it is imported without merging. Nothing was
// written.
var ErrExists = errors.New("conversation already exists")

// ErrMergeConflict marks a conversation whose stored records and the
// bundle's differ (not one a prefix of the other), so a merge cannot add
// one to the other. Nothing was written.
var ErrMergeConflict = errors.New("conversation differs from the bundle")

// BundleExportOptions says what ExportBundle writes.
type BundleExportOptions struct {
	// Conversations to export, in this order; nil exports every
	// conversation, sorted by id.
	Conversations []string
	// VCMCPVersion is written to the header.
	VCMCPVersion string
	// ExportedAt is written to the header; zero means now.
	ExportedAt time.Time
}

// ExportBundle writes conversations as a bundle (docs/bundle.md) to w: the
// verified records of each master log and of its derived-decisions log,
// byte for byte. Each conversation is read under its read lock, so it is a
// consistent cut of that conversation. Damaged records (kept in
// quarantine/) are not exported.
func (s *Store) ExportBundle(ctx context.Context, w io.Writer, opts BundleExportOptions) (BundleStats, error) {
	ctx, end, err := s.begin(ctx, opRead)
	if err != nil {
		return BundleStats{}, err
	}
	defer end()
	ids := opts.Conversations
	if ids == nil {
		if ids, err = s.conversationIDs(); err != nil {
			return BundleStats{}, err
		}
	}
	seen := map[string]bool{}
	uniq := ids[:0:0]
	for _, id := range ids {
		if err := ValidateConversationID(id); err != nil {
			return BundleStats{}, err
		}
		if !seen[id] { // a conversation appears once in a bundle
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	ids = uniq
	at := opts.ExportedAt
	if at.IsZero() {
		at = s.now()
	}
	bw, err := newBundleWriter(w, BundleHeader{ExportedAt: at, VCMCPVersion: opts.VCMCPVersion})
	if err != nil {
		return BundleStats{}, err
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return bw.stats, err
		}
		c, err := s.conversation(ctx, id, false)
		if err != nil {
			return bw.stats, fmt.Errorf("export %s: %w", id, err)
		}
		c.mu.RLock()
		bc, err := s.convRecords(c)
		c.mu.RUnlock()
		if err != nil {
			return bw.stats, fmt.Errorf("export %s: %w", id, err)
		}
		if err := bw.conversation(bc); err != nil {
			return bw.stats, err
		}
	}
	return bw.close()
}

// convRecords reads a loaded conversation's verified master log records
// (up to what the store committed) and derived-decisions records. c.mu is
// held, for reading or writing.
func (s *Store) convRecords(c *conv) (BundleConversation, error) {
	bc := BundleConversation{ID: c.id}
	f, err := os.Open(c.log.Path())
	if err != nil {
		return bc, fmt.Errorf("open master log: %w", err)
	}
	defer f.Close()
	last := 0
	if _, err := masterlog.Scan(io.LimitReader(f, c.meta.LogSize), 0, func(fr masterlog.Frame) error {
		if fr.Seq > last { // anything else is damage, as reconcileLog sees it
			last = fr.Seq
			bc.Messages = append(bc.Messages, fr.Line)
		}
		return nil
	}, nil); err != nil {
		return bc, fmt.Errorf("read master log %s: %w", c.log.Path(), err)
	}
	df, err := os.Open(s.decisionsPath(c.id))
	if errors.Is(err, os.ErrNotExist) {
		return bc, nil
	}
	if err != nil {
		return bc, fmt.Errorf("read decisions log: %w", err)
	}
	defer df.Close()
	// A torn last record was never applied: Scan stops before it.
	if _, err := decisionlog.Scan(df, 0, func(l decisionlog.Line) error {
		if l.OK && carriedDecision(l.Body) {
			bc.Decisions = append(bc.Decisions, l.Body)
		}
		return nil
	}); err != nil {
		return bc, fmt.Errorf("read decisions log: %w", err)
	}
	return bc, nil
}

// BundleImportOptions says how ImportBundle treats conversations the data
// directory already holds.
type BundleImportOptions struct {
	// Merge accepts them: records the bundle has beyond the stored ones are
	// appended (the stored master log and decisions log must each be a
	// prefix of the bundle's, or the bundle's of them); a conversation
	// that already holds everything is left as it is. Without Merge, any
	// of them fails the import with ErrExists.
	Merge bool
}

// BundleImportResult says what ImportBundle did.
type BundleImportResult struct {
	Conversations int `json:"conversations"` // in the bundle
	Restored      int `json:"restored"`      // new to the data directory
	Extended      int `json:"extended"`      // existing, with records added
	Unchanged     int `json:"unchanged"`     // existing, holding everything already
	Messages      int `json:"messages"`      // master log records written
	Decisions     int `json:"decisions"`     // decisions records written
}

// ImportBundle restores a bundle read by ReadBundle. Each new conversation
// gets its master log and derived-decisions log written byte for byte,
// then loads as after a rebuild: its turns, tags, segments, summaries,
// splits, aliases and working set come from the two logs, and no tagger,
// summariser or splitter is called for anything recorded. Every
// conversation is checked (ErrExists, ErrMergeConflict) before anything is
// written. progress, if set, is called after each conversation.
func (s *Store) ImportBundle(ctx context.Context, b *Bundle, opts BundleImportOptions, progress Progress) (BundleImportResult, error) {
	res := BundleImportResult{Conversations: len(b.Conversations)}
	if s.shared != nil {
		return res, fmt.Errorf("%w: a bundle cannot be imported into a team memory (a shared store) directly: import it into an empty local data directory, then copy that in with vc-mcp migrate --from DIR --to URL; nothing was imported", ErrInvalid)
	}
	if err := s.refuseWrite(); err != nil {
		return res, err
	}
	ctx, end, err := s.begin(ctx, opWrite)
	if err != nil {
		return res, err
	}
	defer end()
	for _, bc := range b.Conversations {
		if err := s.bundleSecrets(bc); err != nil {
			return res, err
		}
	}
	existing := make([]bool, len(b.Conversations))
	var clash []string
	for i, bc := range b.Conversations {
		if existing[i], err = s.convExists(bc.ID); err != nil {
			return res, err
		}
		if !existing[i] {
			continue
		}
		if !opts.Merge {
			clash = append(clash, bc.ID)
			continue
		}
		c, err := s.conversation(ctx, bc.ID, false)
		if err != nil {
			return res, fmt.Errorf("import %s: %w", bc.ID, err)
		}
		c.mu.RLock()
		stored, err := s.convRecords(c)
		c.mu.RUnlock()
		if err != nil {
			return res, fmt.Errorf("import %s: %w", bc.ID, err)
		}
		if _, _, err := mergeTails(stored, bc); err != nil {
			return res, err
		}
	}
	if len(clash) > 0 {
		return res, fmt.Errorf("%w: %d of the bundle's conversations are already in the data directory (%s); nothing was imported: merge to add only what they lack, or import into an empty data directory",
			ErrExists, len(clash), shortList(clash, 5))
	}
	for i, bc := range b.Conversations {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if !existing[i] {
			if err := s.restoreConversation(ctx, bc); err != nil {
				return res, fmt.Errorf("import %s: %w", bc.ID, err)
			}
			res.Restored++
			res.Messages += len(bc.Messages)
			res.Decisions += len(bc.Decisions)
		} else {
			m, d, err := s.extendConversation(ctx, bc)
			if err != nil {
				return res, fmt.Errorf("import %s: %w", bc.ID, err)
			}
			if m+d == 0 {
				res.Unchanged++
			} else {
				res.Extended++
			}
			res.Messages += m
			res.Decisions += d
		}
		if progress != nil {
			progress(i+1, len(b.Conversations), bc.ID)
		}
	}
	return res, nil
}

// ErrSecretInBundle marks a bundle message that holds text the store's
// secret rules match. Messages are restored byte for byte, never
// rewritten, so such a bundle is refused. Nothing was written.
var ErrSecretInBundle = errors.New("secret in bundle")

// bundleSecrets checks a conversation's messages against the store's
// scrubber (a vc-mcp bundle was scrubbed when its messages were first
// stored; one from elsewhere, or made under other rules, may not be).
func (s *Store) bundleSecrets(bc BundleConversation) error {
	sc := s.scrubber()
	for _, line := range bc.Messages {
		r, err := masterlog.Decode(line)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadBundle, bc.ID, err)
		}
		scrubbed, n := sc.Scrub(r.Content)
		_, n2 := sc.JSON(r.Raw)
		_, n3 := sc.JSON(r.ToolCalls)
		if n+n2+n3 == 0 {
			continue
		}
		what := ""
		if i := strings.Index(scrubbed, "[secret:"); i >= 0 {
			if j := strings.IndexByte(scrubbed[i:], ']'); j > 0 {
				what = " (" + scrubbed[i+1:i+j] + ")"
			}
		}
		return fmt.Errorf("%w: message %s of %s holds %d secret(s)%s that the scrub rules match; a bundle is restored byte for byte, never rewritten, so nothing was imported: remove the secret where the bundle was made, or import with scrubbing off (scrub: false) if it is a false positive",
			ErrSecretInBundle, turnID(r.Seq), bc.ID, n+n2+n3, what)
	}
	return nil
}

// convExists reports whether the data directory holds anything of
// conversation id: a master log, a decisions log or stored state.
func (s *Store) convExists(id string) (bool, error) {
	for _, p := range []string{s.logPath(id), s.decisionsPath(id)} {
		if _, err := os.Stat(p); err == nil {
			return true, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("stat %s: %w", p, err)
		}
	}
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		found = tx.Bucket(bucketConvs).Get([]byte(id)) != nil || tx.Bucket(convBucketName(id)) != nil
		return nil
	})
	return found, err
}

// mergeTails returns the records of in that stored lacks: each of stored's
// records lists (messages, decisions) must be a prefix of in's, or in's of
// it (then nothing is added).
func mergeTails(stored, in BundleConversation) (msgs, decs [][]byte, err error) {
	tail := func(what string, have, add [][]byte) ([][]byte, error) {
		for i := range min(len(have), len(add)) {
			if !bytes.Equal(have[i], add[i]) {
				return nil, fmt.Errorf("%w: %s: its %s record %d differs from the bundle's; a merge only adds records one side lacks (import it into another data directory, or leave it out with --conversation on export)",
					ErrMergeConflict, in.ID, what, i+1)
			}
		}
		if len(add) > len(have) {
			return add[len(have):], nil
		}
		return nil, nil
	}
	if msgs, err = tail("master log", stored.Messages, in.Messages); err != nil {
		return nil, nil, err
	}
	if decs, err = tail("decisions log", stored.Decisions, in.Decisions); err != nil {
		return nil, nil, err
	}
	return msgs, decs, nil
}

// restoreConversation writes a new conversation's two logs and loads it
// (the replay Rebuild does). Like conversation, it holds the table entry
// while it works, so nothing else loads or creates the conversation
// meanwhile.
func (s *Store) restoreConversation(ctx context.Context, bc BundleConversation) error {
	o, _ := ctx.Value(opKey{}).(*op)
	id := bc.ID
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrClosed
	}
	if _, ok := s.convs[id]; ok {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s was created while the bundle was being imported", ErrExists, id)
	}
	c, err := s.loadEntry(o, id, func() (*conv, error) { return s.writeAndLoad(ctx, bc) })
	if err != nil {
		return err
	}
	c.mu.RLock()
	ch := Change{Kind: ChangeStored, ConversationID: id, NewConversation: len(c.turns) > 0, TurnIDs: turnIDs(1, len(c.turns))}
	c.mu.RUnlock()
	s.publish(ch)
	return nil
}

func turnIDs(first, last int) []string {
	var out []string
	for seq := first; seq <= last; seq++ {
		out = append(out, turnID(seq))
	}
	return out
}

// writeAndLoad writes a new conversation's logs, decisions first (loading
// reads them to replay the master log), then loads it.
func (s *Store) writeAndLoad(ctx context.Context, bc BundleConversation) (*conv, error) {
	if exists, err := s.convExists(bc.ID); err != nil {
		return nil, err
	} else if exists {
		return nil, fmt.Errorf("%w: %s was created while the bundle was being imported", ErrExists, bc.ID)
	}
	if len(bc.Decisions) > 0 {
		var buf []byte
		for _, d := range bc.Decisions {
			buf = decisionlog.AppendFrame(buf, d)
		}
		if err := writeNewFile(s.decisionsPath(bc.ID), buf); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	for _, m := range bc.Messages {
		buf.Write(m)
		buf.WriteByte('\n')
	}
	path := s.logPath(bc.ID)
	if err := writeNewFile(path, buf.Bytes()); err != nil {
		return nil, err
	}
	return s.load(ctx, bc.ID, path)
}

// carriedDecision reports whether a verified decisions log body goes into
// a bundle. Its kind alone is checked, so that records of kinds this
// version does not know, whatever their fields, are carried as they are.
func carriedDecision(body []byte) bool {
	_, err := decisionKind(body)
	return err == nil
}

// writeNewFile writes a file that must not exist yet, atomically (temporary
// file, fsync, rename, directory fsync), owner-only.
func writeNewFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := files.AtomicWrite(path, data); err != nil {
		return err
	}
	return files.SyncDir(dir)
}

// extendConversation appends what a stored conversation lacks of bc and
// replays it, as a load would. It returns the records written.
func (s *Store) extendConversation(ctx context.Context, bc BundleConversation) (int, int, error) {
	c, err := s.conversation(ctx, bc.ID, false)
	if err != nil {
		return 0, 0, err
	}
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	stored, err := s.convRecords(c)
	if err != nil {
		return 0, 0, err
	}
	msgs, decs, err := mergeTails(stored, bc)
	if err != nil || len(msgs)+len(decs) == 0 {
		return 0, 0, err
	}
	first := len(c.turns) + 1
	if len(decs) > 0 {
		if c.dlog == nil {
			if c.dlog, err = decisionlog.Open(s.decisionsPath(c.id)); err != nil {
				return 0, 0, err
			}
		}
		if _, err := c.dlog.AppendAll(decs, true); err != nil {
			return 0, 0, fmt.Errorf("import into %s: %w", c.id, err)
		}
	}
	if len(msgs) > 0 {
		if err := c.log.AppendLines(c.meta.LogSize, msgs); err != nil {
			return 0, 0, err
		}
	}
	// Reads go on with the state as it was until the replay is in place.
	if err := s.replayForked(ctx, c); err != nil {
		return 0, 0, err
	}
	if len(c.turns) >= first {
		s.publish(Change{Kind: ChangeStored, ConversationID: c.id, TurnIDs: turnIDs(first, len(c.turns))})
	}
	return len(msgs), len(decs), nil
}
