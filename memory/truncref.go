package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Truncation references (seed 004): wherever an answer cuts a turn or
// leaves content out for its budget, it says so in the text with a
// reference a model can follow,
//
//	[truncated: 2,500 tokens of t12; log logs/c.jsonl bytes 12340-15670; read_log reads it back; preview: ...]
//
// (the path relative to the data directory, the byte range of the master
// log record(s)), and ReadLog (the read_log tool) returns those bytes
// verbatim. The master log is never compacted, so the range stays valid.

const (
	// minCutHead: a cut turn shows at least this many tokens of itself,
	// else only the reference is shown.
	minCutHead = 48
	// cutRanks: only the best-ranked turns that do not fit are cut or
	// named; weaker ones are simply left for the next recall.
	cutRanks = 3
	// previewTokens bounds a reference's preview.
	previewTokens = 16
	// noteReserve is kept free while paging turns in, so a reference to
	// what did not fit always fits.
	noteReserve = 72
	// maxReadLogBytes bounds one ReadLog.
	maxReadLogBytes = 256 << 10
)

// TruncationRef points at master-log content an answer cut or left out.
type TruncationRef struct {
	ConversationID string `json:"conversation_id"`
	// Turn is the first turn concerned; Turns how many the range holds.
	Turn  string `json:"turn"`
	Turns int    `json:"turns"`
	// Tokens is how many tokens were left out.
	Tokens int `json:"tokens"`
	// Log is the master log's path relative to the data directory; Start
	// and End the byte range (end exclusive) for read_log.
	Log   string `json:"log"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
}

// thousands writes n with thousands separators: 2,500.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// note renders a reference for the text of an answer.
func (r TruncationRef) note(preview string) string {
	what := "of " + r.Turn
	if r.Turns > 1 {
		what = fmt.Sprintf("in %d turns from %s", r.Turns, r.Turn)
	}
	n := fmt.Sprintf("[truncated: %s tokens %s; log %s bytes %d-%d; read_log reads it back", thousands(r.Tokens), what, r.Log, r.Start, r.End)
	if preview = strings.Join(strings.Fields(preview), " "); preview != "" {
		n += "; preview: " + preview + " …"
	}
	return n + "]"
}

// turnRef is the reference to one turn's record, tokens of it left out.
func (s *Store) turnRef(c *conv, t *turnMeta, tokens int) TruncationRef {
	return TruncationRef{ConversationID: c.id, Turn: turnID(t.Seq), Turns: 1, Tokens: tokens,
		Log: s.refPath(c.log.Path()), Start: t.Start, End: t.End}
}

// spanRef is the reference to the records of turns seqs (ascending, all
// readable): one byte range from the first's start to the last's end.
func (s *Store) spanRef(c *conv, seqs []int) (TruncationRef, bool) {
	r := TruncationRef{ConversationID: c.id, Log: s.refPath(c.log.Path())}
	for _, seq := range seqs {
		t := c.turn(seq)
		if t == nil || t.Damaged || t.End <= t.Start {
			continue
		}
		if r.Turns == 0 {
			r.Turn, r.Start = turnID(seq), t.Start
		}
		r.End = t.End
		r.Turns++
		r.Tokens += t.Tokens
	}
	return r, r.Turns > 0
}

// cutTurn renders turn t cut to at most room tokens (prefix and reference
// included): its head and a reference to its whole record. It returns
// false when not even minCutHead tokens of it fit. content is the turn's
// text.
func (s *Store) cutTurn(c *conv, t *turnMeta, content string, room int) (string, int, TruncationRef, bool) {
	prefix := turnPrefix(t)
	ref := s.turnRef(c, t, t.Tokens)
	note := ref.note("")
	fixed := s.tok.Count(prefix) + s.tok.Count(note) + 2
	headTokens := room - fixed
	if headTokens < minCutHead {
		return "", 0, ref, false
	}
	head := s.tok.Truncate(oneLine(content), headTokens)
	shown := s.tok.Count(head)
	ref.Tokens = max(0, t.Tokens-shown)
	note = ref.note("")
	text := prefix + head + " … " + note
	return text, s.tok.Count(text), ref, true
}

// droppedTurn renders a reference standing for turn t when none of it
// fits: its preview, range and size. ok is false when even that does not
// fit in room.
func (s *Store) droppedTurn(c *conv, t *turnMeta, content string, room int) (string, int, TruncationRef, bool) {
	ref := s.turnRef(c, t, t.Tokens)
	text := turnPrefix(t) + ref.note(s.tok.Truncate(content, previewTokens))
	n := s.tok.Count(text)
	if n > room {
		text = turnPrefix(t) + ref.note("")
		if n = s.tok.Count(text); n > room {
			return "", 0, ref, false
		}
	}
	return text, n, ref, true
}

// ReadLogRequest asks for a byte range of a conversation's master log.
type ReadLogRequest struct {
	ConversationID string
	Start, End     int64
}

// ReadLogResult is the range read back verbatim.
type ReadLogResult struct {
	ConversationID string `json:"conversation_id"`
	Log            string `json:"log"`
	Start          int64  `json:"start"`
	End            int64  `json:"end"`
	// LogSize is the log's committed size.
	LogSize int64 `json:"log_size"`
	// TurnIDs are the turns whose records the range overlaps.
	TurnIDs []string `json:"turn_ids"`
	// Text is the bytes read (invalid UTF-8, as from a range cut inside a
	// character, shows as U+FFFD).
	Text string `json:"-"`
}

// ReadLog returns bytes [Start, End) of a conversation's own master log,
// verbatim, for following a truncation reference (read_log). It is
// read-only and refuses ranges outside the log's committed part or larger
// than 256 KiB, saying what to ask for instead.
func (s *Store) ReadLog(ctx context.Context, req ReadLogRequest) (ReadLogResult, error) {
	res := ReadLogResult{TurnIDs: []string{}}
	ctx, end, id, err := s.beginOn(ctx, opRead, req.ConversationID)
	if err != nil {
		return res, err
	}
	defer end()
	res.ConversationID = id
	if req.Start < 0 || req.End <= req.Start {
		return res, fmt.Errorf("%w: want 0 <= start < end (got start %d, end %d); byte ranges come from the [truncated: ... bytes START-END] references in recall_context and expand_topic answers", ErrInvalid, req.Start, req.End)
	}
	if req.End-req.Start > maxReadLogBytes {
		return res, fmt.Errorf("%w: at most %d bytes per call (asked for %d); read %d-%d first, then continue from %d", ErrInvalid, maxReadLogBytes, req.End-req.Start, req.Start, req.Start+maxReadLogBytes, req.Start+maxReadLogBytes)
	}
	c, err := s.conversation(ctx, id, false)
	if err != nil {
		return res, err
	}
	c.mu.RLock()
	size := c.meta.LogSize
	res.Log = s.refPath(c.log.Path())
	res.LogSize = size
	for i := range c.turns {
		t := &c.turns[i]
		if !t.Damaged && t.Start < req.End && t.End > req.Start {
			res.TurnIDs = append(res.TurnIDs, turnID(t.Seq))
		}
	}
	c.mu.RUnlock()
	if req.End > size {
		return res, fmt.Errorf("%w: the range %d-%d is outside conversation %q's log %s, which holds %d bytes; each conversation's references point into its own log, so pass the conversation_id the reference came with", ErrInvalid, req.Start, req.End, id, res.Log, size)
	}
	f, done, err := c.log.File()
	if err != nil {
		return res, err
	}
	defer done()
	buf := make([]byte, req.End-req.Start)
	n, err := f.ReadAt(buf, req.Start)
	if err != nil && !errors.Is(err, io.EOF) {
		return res, fmt.Errorf("read master log %s at %d: %w", res.Log, req.Start, err)
	}
	buf = buf[:n]
	res.Start, res.End = req.Start, req.Start+int64(n)
	res.Text = string(buf)
	if !utf8.ValidString(res.Text) {
		res.Text = strings.ToValidUTF8(res.Text, "\uFFFD")
	}
	return res, nil
}

// TurnRefs returns references to the master log records of turns (ids
// like "t12") of a conversation, one per run of consecutive turns, for an
// answer that left them out (the proxy's dropped history). Unknown ids are
// an error.
func (s *Store) TurnRefs(ctx context.Context, conversationID string, turnIDs []string) ([]TruncationRef, error) {
	ctx, end, id, err := s.beginOn(ctx, opRead, conversationID)
	if err != nil {
		return nil, err
	}
	defer end()
	seqs := make([]int, 0, len(turnIDs))
	for _, t := range turnIDs {
		seq, err := parseTurnID(t)
		if err != nil {
			return nil, err
		}
		seqs = append(seqs, seq)
	}
	sort.Ints(seqs)
	c, err := s.conversation(ctx, id, false)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n := len(seqs); n > 0 && seqs[n-1] > len(c.turns) {
		return nil, fmt.Errorf("%w: conversation %q has no turn %s", ErrNotFound, id, turnID(seqs[n-1]))
	}
	out := []TruncationRef{}
	for i := 0; i < len(seqs); {
		j := i + 1
		for j < len(seqs) && seqs[j] <= seqs[j-1]+1 {
			j++
		}
		if r, ok := s.spanRef(c, seqs[i:j]); ok {
			out = append(out, r)
		}
		i = j
	}
	return out, nil
}

// Note renders r as answers show it: "[truncated: N tokens ...; log FILE
// bytes START-END; read_log reads it back]".
func (r TruncationRef) Note() string { return r.note("") }
