package memory

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/vc-mcp/vc-mcp/internal/files"
	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

// quarantineDir holds, per conversation, a copy of every stretch of a
// master log that failed verification or was cut as a torn tail.
const quarantineDir = "quarantine"

// quarantined is one line of a quarantine file.
type quarantined struct {
	Conversation string    `json:"conversation"`
	Offset       int64     `json:"offset"`
	Length       int       `json:"length"`
	Reason       string    `json:"reason"`
	Found        time.Time `json:"found"`
	Key          string    `json:"key"`
	Text         string    `json:"text,omitempty"`   // the bytes, when they are UTF-8
	Base64       string    `json:"base64,omitempty"` // the bytes, when they are not
}

func quarantineKey(d masterlog.Damage) string {
	sum := sha256.Sum256(d.Data)
	return fmt.Sprintf("%d:%s", d.Start, hex.EncodeToString(sum[:8]))
}

// quarantine copies damaged log bytes to quarantine/<log file name>.jsonl
// (fsync'd), once per offset and content, so nothing is ever only deleted.
func (s *Store) quarantine(id string, items []masterlog.Damage) error {
	if len(items) == 0 {
		return nil
	}
	dir := filepath.Join(s.opts.Dir, quarantineDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create quarantine directory: %w", err)
	}
	path := quarantinePath(s.opts.Dir, id)
	seen, err := quarantinedKeys(path)
	if err != nil {
		return err
	}
	var buf []byte
	for _, d := range items {
		key := quarantineKey(d)
		if seen[key] {
			continue
		}
		seen[key] = true
		q := quarantined{Conversation: id, Offset: d.Start, Length: len(d.Data), Reason: d.Reason, Found: s.now().UTC(), Key: key}
		if utf8.Valid(d.Data) {
			q.Text = string(d.Data)
		} else {
			q.Base64 = base64.StdEncoding.EncodeToString(d.Data)
		}
		line, err := json.Marshal(q)
		if err != nil {
			return fmt.Errorf("encode quarantine record: %w", err)
		}
		buf = append(append(buf, line...), '\n')
	}
	if len(buf) == 0 {
		return nil
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open quarantine file: %w", err)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("write quarantine file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync quarantine file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close quarantine file %s: %w", path, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		return files.SyncDir(dir)
	}
	return nil
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := 0
		for i < len(data) && data[i] != '\n' {
			i++
		}
		out = append(out, data[:i])
		if i == len(data) {
			break
		}
		data = data[i+1:]
	}
	return out
}

// reconcileLog checks a conversation's whole master log against its
// committed state and repairs the derived side, never the log's good
// records:
//   - a record that fails verification is reported, copied to quarantine
//     and skipped; records after it are kept;
//   - a turn the store knows whose record is gone or damaged becomes a
//     damaged placeholder (its id is never reused);
//   - a record whose bytes moved (bytes inserted before it) gets its new
//     range;
//   - records beyond what was committed (a crash between the log's fsync
//     and the store's commit) are replayed, with placeholders for gaps;
//   - an unterminated last record, a torn tail, is copied to quarantine and
//     cut, so the next append starts at the real end of the last complete
//     record and never behind a hole.
//
// c.mu is held for writing, or c is not yet shared.
func (s *Store) reconcileLog(ctx context.Context, c *conv) error {
	size, err := c.log.Size()
	if err != nil {
		return err
	}
	f, err := os.Open(c.log.Path())
	if err != nil {
		return fmt.Errorf("open master log for verification: %w", err)
	}
	defer f.Close()
	// A load is not given up half-way for a caller that went away: others
	// may wait on it.
	sc, err := scanLog(context.WithoutCancel(ctx), f, size, len(c.turns), func(seq int) turnSpan {
		t := &c.turns[seq-1]
		return turnSpan{start: t.Start, end: t.End, damaged: t.Damaged}
	})
	if err != nil {
		return fmt.Errorf("verify master log %s: %w", c.log.Path(), err)
	}
	validEnd, fixes, damage, fresh, lost := sc.end, sc.moved, sc.damage, sc.fresh, sc.lost
	if sc.unterminated {
		if err := c.log.AppendLines(validEnd, [][]byte{nil}); err != nil { // the newline alone
			return err
		}
		s.log.Warn("master log: its last record had lost its newline; it is kept and the newline put back", "conversation", c.id, "offset", validEnd)
		validEnd++
		size = max(size, validEnd)
	}
	if len(damage) > 0 {
		if err := s.quarantine(c.id, damage); err != nil {
			return err
		}
		for _, d := range damage {
			s.log.Warn("master log: damaged record skipped and copied to quarantine", "conversation", c.id, "offset", d.Start, "bytes", len(d.Data), "reason", d.Reason)
		}
	}
	if validEnd < size {
		if err := c.log.Cut(validEnd); err != nil {
			return err
		}
	}
	if s.shared != nil && (len(lost) > 0 || len(damage) > 1 || len(damage) == 1 && validEnd == size) {
		// The shared store holds these lines whole: this copy of them is
		// what is damaged. The turns are served as placeholders until the
		// cache is fetched again, at the next start.
		s.log.Warn("this process's copy of a shared master log is damaged; the next start fetches it again from the shared store", "conversation", c.id)
		s.markStale(c.id)
	}
	if len(lost) > 0 || len(fixes) > 0 || (len(fresh) == 0 && c.meta.LogSize != validEnd) {
		for seq, r := range fixes {
			c.turns[seq-1].Start, c.turns[seq-1].End = r[0], r[1]
		}
		var docIDs []string
		for _, seq := range lost {
			s.log.Warn("master log: a stored turn's record is damaged or missing; it is kept as a placeholder", "conversation", c.id, "turn", turnID(seq))
			c.markDamaged(seq)
			docIDs = append(docIDs, turnDocID(c.id, seq))
		}
		meta := c.meta
		if len(fresh) == 0 {
			meta.LogSize = validEnd
		}
		if err := s.db.Update(func(tx *bolt.Tx) error {
			b, err := convBucket(tx, c.id)
			if err != nil {
				return err
			}
			var put []*turnMeta
			for seq := range fixes {
				put = append(put, &c.turns[seq-1])
			}
			for _, seq := range lost {
				put = append(put, &c.turns[seq-1])
			}
			if err := putTurns(b.Bucket(bucketTurns), put...); err != nil {
				return err
			}
			return putMeta(tx, meta)
		}); err != nil {
			return fmt.Errorf("commit repairs of %s: %w", c.id, err)
		}
		c.meta = meta
		if len(docIDs) > 0 {
			if err := s.ix.Delete(ctx, docIDs); err != nil {
				s.log.Warn("removing damaged turns from the index failed", "conversation", c.id, "err", err)
			}
		}
	}
	// A rebuild knows how many turns the vc.db it replaced had committed,
	// and the decisions log names the turns it tagged: those the log no
	// longer holds stay placeholders.
	floor := max(s.opts.turnFloor[c.id], c.replay.lastTurn())
	if len(fresh) == 0 && floor <= len(c.turns) {
		return nil
	}
	var recs []masterlog.Record
	var ranges [][2]int64
	for _, fr := range fresh {
		for seq := len(c.turns) + len(recs) + 1; seq < fr.Seq; seq++ {
			recs = append(recs, masterlog.Record{Seq: seq}) // lost before it was committed
			ranges = append(ranges, [2]int64{})
		}
		rec, err := fr.Record()
		if err != nil {
			return fmt.Errorf("decode verified record: %w", err)
		}
		recs = append(recs, rec)
		ranges = append(ranges, [2]int64{fr.Start, fr.End})
	}
	if from := len(c.turns) + len(recs) + 1; from <= floor {
		s.log.Warn("master log: stored turns have no record in the log; they are kept as damaged placeholders (their ids are never given again)",
			"conversation", c.id, "from", turnID(from), "to", turnID(floor))
		for seq := from; seq <= floor; seq++ {
			recs = append(recs, masterlog.Record{Seq: seq})
			ranges = append(ranges, [2]int64{})
		}
	}
	s.log.Info("replaying master log", "conversation", c.id, "turns", len(recs))
	return s.applyRecords(ctx, c, recs, ranges, validEnd, nil, heldBoth)
}

// markDamaged turns a stored turn into a damaged placeholder: no text, no
// tokens, no byte range. c.mu is held for writing.
func (c *conv) markDamaged(seq int) {
	t := &c.turns[seq-1]
	if t.Damaged {
		return
	}
	if !t.Empty {
		c.tokens -= t.Tokens
		if seq > c.meta.CompactedThrough {
			c.active -= t.Tokens
		}
	}
	t.Empty, t.Damaged, t.Tokens, t.Start, t.End = true, true, 0, 0, 0
	c.lite[seq-1] = liteOf(t, c.lite[seq-1].speaker)
	c.damaged++
}

// turnSpan is what a scan of a master log needs of a stored turn: its
// record's byte range, and whether it is a damaged placeholder.
type turnSpan struct {
	start, end int64
	damaged    bool
}

// logScan is what scanLog found in a master log, against the turns a
// conversation's state knows (seqs 1 to known).
type logScan struct {
	end     int64 // after the last complete line
	records int   // records that verify
	// matched[seq] is set when a verified record of known turn seq is in
	// the log (the first one: a second is out of order).
	matched []bool
	// moved are the known turns whose record lies at another range now
	// (bytes inserted before it), with that range.
	moved map[int][2]int64
	// restored are damaged placeholders whose record verifies again (the
	// log restored from a backup).
	restored []int
	// fresh are the records after the known turns (a crash between the
	// log's fsync and the state's commit), in turn order; gaps are the
	// turn numbers they skip (first, last), which a load keeps as
	// placeholders.
	fresh []masterlog.Frame
	gaps  [][2]int
	// damage are the lines that fail verification or come out of order,
	// and the torn tail (an unterminated last line), in log order.
	damage []masterlog.Damage
	// lost are the known turns, not placeholders, with no verified record.
	lost []int
	// unterminated is set when the log's last record verifies but lost
	// its newline.
	unterminated bool
}

// scanLog reads the first size bytes of the master log in r and
// classifies its records against the known turns of a conversation's
// state (span gives each one's range): the one reading of a log that both
// the store's repair at load (reconcileLog) and Check use.
func scanLog(ctx context.Context, r io.ReaderAt, size int64, known int, span func(seq int) turnSpan) (logScan, error) {
	sc := logScan{matched: make([]bool, known+1), moved: map[int][2]int64{}}
	freshSeen := map[int]bool{}
	validEnd, err := masterlog.Scan(io.NewSectionReader(r, 0, size), 0, func(fr masterlog.Frame) error {
		sc.records++
		if sc.records%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch {
		case fr.Seq <= known && !sc.matched[fr.Seq]:
			sc.matched[fr.Seq] = true
			t := span(fr.Seq)
			switch {
			case t.damaged:
				sc.restored = append(sc.restored, fr.Seq)
			case t.start != fr.Start || t.end != fr.End:
				sc.moved[fr.Seq] = [2]int64{fr.Start, fr.End}
			}
		case fr.Seq > known && !freshSeen[fr.Seq]:
			freshSeen[fr.Seq] = true
			sc.fresh = append(sc.fresh, fr)
		default:
			sc.records--
			sc.damage = append(sc.damage, masterlog.Damage{Start: fr.Start, End: fr.End, Reason: fmt.Sprintf("a second record of turn %d", fr.Seq), Data: fr.Line})
		}
		return nil
	}, func(d masterlog.Damage) error {
		sc.damage = append(sc.damage, d)
		return nil
	})
	if err != nil {
		return sc, err
	}
	// A record can come after one with a higher number (lines moved by
	// hand): each is its turn's record all the same, and the replay takes
	// them in turn order, with placeholders for the numbers none has.
	slices.SortStableFunc(sc.fresh, func(a, b masterlog.Frame) int { return cmp.Compare(a.Seq, b.Seq) })
	last := known
	for _, fr := range sc.fresh {
		if fr.Seq > last+1 {
			sc.gaps = append(sc.gaps, [2]int{last + 1, fr.Seq - 1})
		}
		last = fr.Seq
	}
	sc.end = validEnd
	if validEnd == size && size > 0 {
		// The last record verified without its newline (Scan): the load
		// puts it back before anything is appended.
		last := make([]byte, 1)
		if _, err := r.ReadAt(last, size-1); err != nil && !errors.Is(err, io.EOF) {
			return sc, fmt.Errorf("read the log's last byte: %w", err)
		}
		sc.unterminated = last[0] != '\n'
	}
	if validEnd < size {
		tail := make([]byte, size-validEnd)
		if _, err := r.ReadAt(tail, validEnd); err != nil && !errors.Is(err, io.EOF) {
			return sc, fmt.Errorf("read the torn tail: %w", err)
		}
		sc.damage = append(sc.damage, masterlog.Damage{Start: validEnd, End: size, Reason: "unterminated last record (torn tail)", Data: tail})
	}
	for seq := 1; seq <= known; seq++ {
		if !sc.matched[seq] && !span(seq).damaged {
			sc.lost = append(sc.lost, seq)
		}
	}
	return sc, nil
}
