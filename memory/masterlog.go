package memory

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// logRecord is one line of a master log: one message, verbatim, as it was
// stored. The master log is append-only and is the source of truth; every
// other structure is derived from it. doc.go describes the format.
type logRecord struct {
	V          int             `json:"v"`
	Seq        int             `json:"seq"`
	ID         string          `json:"id,omitempty"`
	Role       string          `json:"role"`
	Name       string          `json:"name,omitempty"`
	Content    string          `json:"content"`
	Raw        json.RawMessage `json:"raw,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolUse    bool            `json:"tool_use,omitempty"`
	ToolResult bool            `json:"tool_result,omitempty"`
	Timestamp  *time.Time      `json:"ts,omitempty"`
	At         time.Time       `json:"at"`
	// Hash is the message's hash (messageHash). Since format version 3
	// it is left out of a line whose own fields give it (recordHash), and
	// decodeRecord fills it in again.
	Hash string `json:"hash,omitempty"`
	// Forgotten marks the placeholder that replaced a forgotten message
	// (forget.go): no text, the original hash kept so the message is never
	// stored again.
	Forgotten bool `json:"forgotten,omitempty"`
	// CRC is only ever set by decoding a framed line; encodeRecord writes it.
	CRC string `json:"crc,omitempty"`
}

const (
	// logVersionLegacy lines carry no checksum (logs written before
	// framing); they are still read, verified only as JSON.
	logVersionLegacy = 1
	// logVersionHashed lines end in ,"crc":"xxxxxxxx"}: the CRC-32C of the
	// line with that member removed; each holds its message's hash.
	logVersionHashed = 2
	// logVersionObject lines are framed the same way and leave the hash
	// out when the record's own fields give it (most messages: 75 of about
	// 320 bytes a line for a short turn); a record whose hash they do not
	// give (a forgotten turn's placeholder, content changed after hashing)
	// keeps it.
	logVersionObject = 3
	// logVersion lines are JSON arrays (encodeRecord): the same record
	// without its member names, its checksum the array's last element.
	logVersion = 4
)

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	crcMember  = []byte(`,"crc":"`)
	// errDamaged marks a log record that fails its checksum or does not
	// decode: it is skipped and kept aside, never served.
	errDamaged = errors.New("damaged master log record")
)

// crcSuffixLen is len(`,"crc":"xxxxxxxx"}`); crcElemLen is len(`,"xxxxxxxx"]`),
// the checksum element that ends a version 4 line.
const (
	crcSuffixLen = 18
	crcElemLen   = 12
)

// Master log format 4: one JSON array per line,
//
//	[4,seq,"role","name","content",ts,"at",{rare members},"crc"]
//
// ts is the time the client gave (RFC 3339) or null; at is when vc-mcp
// stored the record, to the millisecond; name is "" for none. The
// optional object between at and the checksum holds the members most
// records lack, under their version 3 names (id, raw, tool_calls,
// tool_call_id, tool_use, tool_result, hash, forgotten); it is left out
// when empty. crc is the CRC-32C of the line with its last element
// (`,"xxxxxxxx"`) removed, so of the bytes `[4,` ... `]`. On the scale
// benchmark's 94-byte turns a record takes about 90 bytes besides its
// text instead of 150: the member names and the stored time's nanoseconds
// were two fifths of the master log, for nothing a reader needs that this
// page and memory/doc.go do not say.
type rareMembers struct {
	ID         string          `json:"id,omitempty"`
	Raw        json.RawMessage `json:"raw,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolUse    bool            `json:"tool_use,omitempty"`
	ToolResult bool            `json:"tool_result,omitempty"`
	Hash       string          `json:"hash,omitempty"`
	Forgotten  bool            `json:"forgotten,omitempty"`
}

func (m rareMembers) empty() bool {
	return m.ID == "" && len(m.Raw) == 0 && len(m.ToolCalls) == 0 && m.ToolCallID == "" && !m.ToolUse && !m.ToolResult && m.Hash == "" && !m.Forgotten
}

// encodeArray renders r as a version 4 array without its checksum element.
func encodeArray(r logRecord) ([]byte, error) {
	out := make([]byte, 0, 96+len(r.Content))
	out = strconv.AppendInt(append(out, "[4,"...), int64(r.Seq), 10)
	var ts any // null
	if r.Timestamp != nil {
		ts = *r.Timestamp
	}
	rare := rareMembers{ID: r.ID, Raw: r.Raw, ToolCalls: r.ToolCalls, ToolCallID: r.ToolCallID,
		ToolUse: r.ToolUse, ToolResult: r.ToolResult, Hash: r.Hash, Forgotten: r.Forgotten}
	parts := []any{r.Role, r.Name, r.Content, ts, r.At}
	if !rare.empty() {
		parts = append(parts, rare)
	}
	for _, p := range parts {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode log record: %w", err)
		}
		out = append(append(out, ','), b...)
	}
	return append(out, ']'), nil
}

// decodeArray reads the array encodeArray writes (a version 4 line
// without its checksum element).
func decodeArray(body []byte) (logRecord, error) {
	var r logRecord
	var parts []json.RawMessage
	if err := json.Unmarshal(body, &parts); err != nil {
		return r, err
	}
	if n := len(parts); n != 7 && n != 8 {
		return r, fmt.Errorf("version 4 record of %d elements, want 7 or 8 and a checksum", n+1)
	}
	var rare rareMembers
	dst := []any{&r.V, &r.Seq, &r.Role, &r.Name, &r.Content, &r.Timestamp, &r.At, &rare}
	for i, p := range parts {
		if err := json.Unmarshal(p, dst[i]); err != nil {
			return r, fmt.Errorf("version 4 record, element %d: %w", i+1, err)
		}
	}
	if r.V != logVersion {
		return r, fmt.Errorf("array record of version %d", r.V)
	}
	r.ID, r.Raw, r.ToolCalls, r.ToolCallID = rare.ID, rare.Raw, rare.ToolCalls, rare.ToolCallID
	r.ToolUse, r.ToolResult, r.Hash, r.Forgotten = rare.ToolUse, rare.ToolResult, rare.Hash, rare.Forgotten
	return r, nil
}

// encodeRecord renders one framed line (without its newline): the record's
// JSON with a checksum of those very bytes as its last member, so a reader
// verifies a line without re-encoding anything and the log stays one JSON
// object per line.
func encodeRecord(r logRecord) ([]byte, error) {
	r.V, r.CRC = logVersion, ""
	hash := r.Hash
	r.Hash = ""
	body, err := encodeArray(r)
	if err != nil {
		return nil, err
	}
	if hash != "" && !hashFromLine(body, hash) {
		r.Hash = hash
		if body, err = encodeArray(r); err != nil {
			return nil, err
		}
	}
	sum := crc32.Checksum(body, castagnoli)
	line := make([]byte, 0, len(body)+crcElemLen)
	line = append(line, body[:len(body)-1]...)
	return fmt.Appendf(line, `,"%08x"]`, sum), nil
}

// verifyLine checks one line (without its newline) and returns its
// sequence number. A framed line must match its checksum; a legacy line
// must decode as a version 1 record.
func verifyLine(line []byte) (int, error) {
	n := len(line)
	if n > 0 && line[0] == '[' {
		return verifyArray(line)
	}
	if n > crcSuffixLen && bytes.Equal(line[n-crcSuffixLen:n-10], crcMember) && line[n-2] == '"' && line[n-1] == '}' {
		return checkSum(line, n-crcSuffixLen, '}', framedSeq)
	}
	// A legacy line has no checksum: it is good when it decodes whole.
	var r logRecord
	if err := json.Unmarshal(line, &r); err != nil {
		return 0, fmt.Errorf("%w: %v", errDamaged, err)
	}
	if r.V != logVersionLegacy || r.Seq <= 0 {
		return 0, fmt.Errorf("%w: version %d, sequence %d without a checksum", errDamaged, r.V, r.Seq)
	}
	return r.Seq, nil
}

// verifyArray checks a version 4 line against its checksum element.
func verifyArray(line []byte) (int, error) {
	n := len(line)
	if n <= crcElemLen || line[n-12] != ',' || line[n-11] != '"' || line[n-2] != '"' || line[n-1] != ']' {
		return 0, fmt.Errorf("%w: an array record without its checksum", errDamaged)
	}
	return checkSum(line, n-crcElemLen, ']', arraySeq)
}

// checkSum verifies a line whose checksum, 8 hex digits at
// line[len-10:len-2], covers line[:bodyEnd] and the closing byte, and
// reads its sequence number with seqOf.
func checkSum(line []byte, bodyEnd int, closing byte, seqOf func([]byte) (int, bool)) (int, error) {
	n := len(line)
	want, err := strconv.ParseUint(string(line[n-10:n-2]), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: unreadable checksum", errDamaged)
	}
	got := crc32.Update(crc32.Checksum(line[:bodyEnd], castagnoli), castagnoli, []byte{closing})
	if uint32(want) != got {
		return 0, fmt.Errorf("%w: checksum %08x, want %08x", errDamaged, got, want)
	}
	seq, ok := seqOf(line)
	if !ok {
		return 0, fmt.Errorf("%w: checksum matches but the record has no sequence number", errDamaged)
	}
	return seq, nil
}

// arraySeq reads the sequence number after the opening "[4," of a
// version 4 line.
func arraySeq(line []byte) (int, bool) {
	const open = "[4,"
	if !bytes.HasPrefix(line, []byte(open)) {
		return 0, false
	}
	return seqAt(line, len(open))
}

// seqAt reads the positive decimal sequence number that starts at line[i]
// and ends at a comma.
func seqAt(line []byte, i int) (int, bool) {
	seq := 0
	for end := i + 12; i < len(line) && i < end; i++ {
		c := line[i]
		if c == ',' {
			return seq, seq > 0
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		seq = seq*10 + int(c-'0')
	}
	return 0, false
}

// hashFromLine reports whether the record that body (a line without its
// hash) decodes to gives hash by itself. It decodes the very bytes
// written, so what JSON does not carry as it was (raw content's spacing)
// never yields a different hash on reading.
func hashFromLine(body []byte, hash string) bool {
	d, err := decodeArray(body)
	return err == nil && recordHash(d) == hash
}

// recordHash is the hash of the message r holds (messageHash), in hex.
func recordHash(r logRecord) string {
	t := turnInput{Role: r.Role, Name: r.Name, Text: r.Content, Raw: r.Raw, ToolCalls: r.ToolCalls, ToolCallID: r.ToolCallID}
	if r.Timestamp != nil {
		t.Timestamp, t.HasTime = *r.Timestamp, true
	}
	h := messageHash(t)
	return hex.EncodeToString(h[:])
}

// framedSeq reads the sequence number from the fixed opening that
// encodeRecord writes ({"v":3,"seq":N,, or "v":2 in older lines), so
// verifying a log needs no JSON decoding.
func framedSeq(line []byte) (int, bool) {
	const open = `{"v":3,"seq":`
	if len(line) < len(open) || !bytes.Equal(line[:5], []byte(open[:5])) || line[5] != '2' && line[5] != '3' ||
		!bytes.Equal(line[6:len(open)], []byte(open[6:])) {
		return 0, false
	}
	return seqAt(line, len(open))
}

// decodeRecord verifies and decodes one line (without its newline).
func decodeRecord(line []byte) (logRecord, error) {
	var r logRecord
	seq, err := verifyLine(line)
	if err != nil {
		return r, err
	}
	if n := len(line); line[0] == '[' {
		// verifyLine found the checksum element: decode the rest.
		r, err = decodeArray(append(line[:n-crcElemLen:n-crcElemLen], ']'))
	} else {
		err = json.Unmarshal(line, &r)
	}
	if err != nil {
		return r, fmt.Errorf("%w: %v", errDamaged, err)
	}
	if r.Seq != seq {
		return r, fmt.Errorf("%w: sequence %d, framed as %d", errDamaged, r.Seq, seq)
	}
	if r.Hash == "" && r.V >= logVersionObject {
		r.Hash = recordHash(r)
	}
	return r, nil
}

func recordFrom(seq int, t turnInput, at time.Time) logRecord {
	r := logRecord{
		V: logVersion, Seq: seq, ID: t.ID, Role: t.Role, Name: t.Name, Content: t.Text, Raw: t.Raw,
		ToolCalls: t.ToolCalls, ToolCallID: t.ToolCallID, ToolUse: t.ToolUse, ToolResult: t.ToolResult,
		At: at.UTC().Truncate(time.Millisecond), Hash: hex.EncodeToString(t.Hash[:]),
	}
	if t.HasTime {
		ts := t.Timestamp
		r.Timestamp = &ts
	}
	return r
}

// when is the time the message was said: its timestamp, or when it was stored.
func (r logRecord) when() time.Time {
	if r.Timestamp != nil {
		return *r.Timestamp
	}
	return r.At
}

// masterLog is one conversation's append-only JSONL file.
type masterLog struct {
	path string
	mu   sync.RWMutex // guards f
	f    *os.File     // opened for reading and writing; nil once released
}

// isOpen reports whether the log holds its file open (its conversation is
// loaded).
func (l *masterLog) isOpen() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.f != nil
}

// file returns the open log file, or, once the log was released (its
// conversation unloaded), the file opened for this one use. Call done after.
func (l *masterLog) file() (f *os.File, done func(), err error) {
	l.mu.RLock()
	if l.f != nil {
		return l.f, l.mu.RUnlock, nil
	}
	l.mu.RUnlock()
	f, err = os.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open master log: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
}

// release closes the log's file handle; later uses open it for each use.
func (l *masterLog) release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

func openMasterLog(path string) (*masterLog, error) {
	f, err := openAppendOnly(path, "master log")
	if err != nil {
		return nil, err
	}
	return &masterLog{path: path, f: f}, nil
}

// openAppendOnly opens (creating, owner-only) one of the store's append-only
// files, the master and decisions logs. A new file's directory entry is
// fsync'd so the file itself survives a crash.
func openAppendOnly(path, what string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create %s directory: %w", what, err)
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", what, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(filepath.Dir(path)); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

// appendRecords writes records at offset end (the log's committed size) and
// fsyncs. It returns each record's byte range. Writing at an explicit offset
// rather than O_APPEND overwrites any torn tail a crash left behind. It
// refuses to write past the file's real end: a log cut short outside
// vc-mcp would otherwise get a hole of zero bytes before the new records.
func (l *masterLog) appendRecords(end int64, recs []logRecord) ([][2]int64, error) {
	f, done, err := l.file()
	if err != nil {
		return nil, err
	}
	defer done()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat master log: %w", err)
	}
	size := st.Size()
	if err != nil {
		return nil, err
	}
	if size < end {
		return nil, fmt.Errorf("%w: %s is %d bytes but %d were committed", errLogShrunk, l.path, size, end)
	}
	var buf bytes.Buffer
	ranges := make([][2]int64, len(recs))
	off := end
	for i, r := range recs {
		line, err := encodeRecord(r)
		if err != nil {
			return nil, err
		}
		ranges[i] = [2]int64{off, off + int64(len(line))}
		buf.Write(line)
		buf.WriteByte('\n')
		off += int64(len(line)) + 1
	}
	// On failure the log is cut back to end (best effort: were that to fail
	// too, the next load quarantines what is left as a torn tail or replays
	// complete lines, which alignment then takes as resent).
	if _, err := writeAt(f, buf.Bytes(), end); err != nil {
		_ = f.Truncate(end)
		return nil, fmt.Errorf("append to master log %s: %w", l.path, err)
	}
	if err := f.Truncate(off); err != nil {
		_ = f.Truncate(end)
		return nil, fmt.Errorf("trim master log: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Truncate(end)
		return nil, fmt.Errorf("fsync master log: %w", err)
	}
	return ranges, nil
}

// errLogShrunk: the master log is shorter than what was committed.
var errLogShrunk = errors.New("master log shorter than committed")

// writeAt is the one place log bytes (the master logs' and the decisions
// logs') are written; tests replace logWriteHook to inject a full disk or
// hold a writer in its write.
func writeAt(f *os.File, p []byte, off int64) (int, error) {
	if logWriteHook != nil {
		if err := logWriteHook(f.Name()); err != nil {
			return 0, err
		}
	}
	return f.WriteAt(p, off)
}

// logWriteHook, when set (tests only), runs before every log write and
// fails it with its error.
var logWriteHook func(path string) error

// read returns the record in bytes [start, end), verified. A damaged record
// gives an error wrapping errDamaged.
func (l *masterLog) read(start, end int64) (logRecord, error) {
	var r logRecord
	if end <= start || end-start > 64<<20 {
		return r, fmt.Errorf("read master log %s: %w: no readable range %d-%d", l.path, errDamaged, start, end)
	}
	f, done, err := l.file()
	if err != nil {
		return r, err
	}
	defer done()
	buf := make([]byte, end-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return r, fmt.Errorf("read master log %s at %d: %w", l.path, start, err)
	}
	r, err = decodeRecord(buf)
	if err != nil {
		return r, fmt.Errorf("read master log %s at %d: %w", l.path, start, err)
	}
	return r, nil
}

func (l *masterLog) size() (int64, error) {
	st, err := os.Stat(l.path)
	if err != nil {
		return 0, fmt.Errorf("stat master log: %w", err)
	}
	return st.Size(), nil
}

// cut truncates the log to n bytes and fsyncs it.
func (l *masterLog) cut(n int64) error {
	f, done, err := l.file()
	if err != nil {
		return err
	}
	defer done()
	if err := f.Truncate(n); err != nil {
		return fmt.Errorf("cut master log %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync master log %s: %w", l.path, err)
	}
	return nil
}

func (l *masterLog) close() error { return l.release() }

// frame is one verified line of a master log: bytes [Start, End), the
// newline excluded.
type frame struct {
	Seq        int
	Start, End int64
	line       []byte
}

func (f frame) record() (logRecord, error) { return decodeRecord(f.line) }

// logDamage is a complete (newline-terminated) stretch of a master log that
// is not a valid record.
type logDamage struct {
	Start, End int64 // the newline excluded
	Reason     string
	Data       []byte
}

// scanLog reads a master log from r, starting at byte offset base. Each
// valid record goes to fn; each complete line that fails verification goes
// to bad and the scan goes on with the next line (like LevelDB's reader,
// it resynchronises at the next record boundary, and inside a damaged line
// at a record that opens later in it and verifies). It returns the offset
// after the last newline: bytes after it are an unterminated last record, a
// torn tail that was never acknowledged.
func scanLog(r io.Reader, base int64, fn func(f frame) error, bad func(d logDamage) error) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	off := base
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return off, nil
		}
		if err != nil && err != io.EOF {
			return off, fmt.Errorf("read master log: %w", err)
		}
		if line[len(line)-1] != '\n' {
			return off, nil // torn tail
		}
		body := line[:len(line)-1]
		seq, verr := verifyLine(body)
		if verr == nil {
			if err := fn(frame{Seq: seq, Start: off, End: off + int64(len(body)), line: body}); err != nil {
				return off, err
			}
			off += int64(len(line))
			continue
		}
		// Resynchronise inside the line: damage that ate a newline glues a
		// good record to the bad bytes before it.
		cut := -1
		for i := 1; i < len(body); i++ {
			j := recordOpening(body[i:])
			if j < 0 {
				break
			}
			i += j
			if s, err := verifyLine(body[i:]); err == nil {
				cut, seq = i, s
				break
			}
		}
		end := len(body)
		if cut >= 0 {
			end = cut
		}
		if bad != nil {
			if err := bad(logDamage{Start: off, End: off + int64(end), Reason: verr.Error(), Data: body[:end]}); err != nil {
				return off, err
			}
		}
		if cut >= 0 {
			if err := fn(frame{Seq: seq, Start: off + int64(cut), End: off + int64(len(body)), line: body[cut:]}); err != nil {
				return off, err
			}
		}
		off += int64(len(line))
	}
}

// recordOpening returns the offset of the first place in b where a record
// of any version may open, or -1.
func recordOpening(b []byte) int {
	i, j := bytes.Index(b, []byte(`{"v":`)), bytes.Index(b, []byte(`[4,`))
	if i < 0 || j >= 0 && j < i {
		return j
	}
	return i
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory for fsync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// readContent returns the content of the record in bytes [start, end),
// verified: all that packing a turn needs. A version 4 record's content is
// taken from its line without decoding the rest; other records are
// decoded whole.
func (l *masterLog) readContent(start, end int64) (string, error) {
	if end <= start || end-start > 64<<20 {
		return "", fmt.Errorf("read master log %s: %w: no readable range %d-%d", l.path, errDamaged, start, end)
	}
	f, done, err := l.file()
	if err != nil {
		return "", err
	}
	defer done()
	buf := make([]byte, end-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return "", fmt.Errorf("read master log %s at %d: %w", l.path, start, err)
	}
	if s, ok := lineContent(buf); ok {
		return s, nil
	}
	r, err := decodeRecord(buf)
	if err != nil {
		return "", fmt.Errorf("read master log %s at %d: %w", l.path, start, err)
	}
	return r.Content, nil
}

// lineContent returns the content of a verified version 4 line: the fifth
// element of its array, after the version, sequence, role and name. Not ok
// for anything else (the caller decodes the line whole, with its errors).
func lineContent(line []byte) (string, bool) {
	if len(line) == 0 || line[0] != '[' {
		return "", false
	}
	if _, err := verifyArray(line); err != nil {
		return "", false
	}
	body := line[:len(line)-crcElemLen]
	i := 1
	for range 4 {
		j, ok := skipScalar(body, i)
		if !ok || j >= len(body) || body[j] != ',' {
			return "", false
		}
		i = j + 1
	}
	j, escaped, ok := scanString(body, i)
	if !ok || j >= len(body) || body[j] != ',' {
		return "", false
	}
	raw := body[i+1 : j-1]
	if !escaped && utf8.Valid(raw) {
		return string(raw), true
	}
	var s string
	if json.Unmarshal(body[i:j], &s) != nil {
		return "", false
	}
	return s, true
}

// skipScalar returns where the JSON number, string or null at b[i] ends.
func skipScalar(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		j, _, ok := scanString(b, i)
		return j, ok
	case c == 'n':
		if bytes.HasPrefix(b[i:], []byte("null")) {
			return i + 4, true
		}
		return 0, false
	case c == '-' || c >= '0' && c <= '9':
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		return j, true
	}
	return 0, false
}

// scanString returns where the JSON string at b[i] (its opening quote)
// ends, just past its closing quote, and whether it holds an escape.
func scanString(b []byte, i int) (end int, escaped, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false, false
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped, true
		}
	}
	return 0, false, false
}
