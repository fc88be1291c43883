package masterlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"
)

// Record is one line of a master log: one message, verbatim, as it was
// stored. The master log is append-only and is the source of truth; every
// other structure is derived from it. The package comment describes the
// format.
type Record struct {
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
	// Hash is the message's hash (MessageHash), in hex. Since format
	// version 3 it is left out of a line whose own fields give it, and
	// Decode fills it in again.
	Hash string `json:"hash,omitempty"`
	// Forgotten marks the placeholder that replaced a forgotten message:
	// no text, the original hash kept so the message is never stored
	// again.
	Forgotten bool `json:"forgotten,omitempty"`
	// CRC is only ever set by decoding a framed line; Encode writes it.
	CRC string `json:"crc,omitempty"`
}

// When is the time the message was said: its timestamp, or when it was
// stored.
func (r Record) When() time.Time {
	if r.Timestamp != nil {
		return *r.Timestamp
	}
	return r.At
}

// MessageHash identifies the message r holds, for aligning a batch with
// what is stored: the SHA-256 of its role, name, content (without
// surrounding white space, as stored before content was kept verbatim),
// raw content, tool calls, tool call id and timestamp (RFC 3339 with
// nanoseconds, "" for none), each written as "<len>:<part>|". Stored
// hashes (resends, tombstones, decisions, version 3 and 4 lines that
// leave theirs out) must keep matching it: it never changes.
func (r Record) MessageHash() [32]byte {
	ts := ""
	if r.Timestamp != nil {
		ts = r.Timestamp.Format(time.RFC3339Nano)
	}
	text := strings.TrimSpace(r.Content)
	// Each part as "<len>:<part>|", built without fmt: master log format 3
	// hashes every record it reads back.
	buf := make([]byte, 0, 64+len(r.Role)+len(r.Name)+len(text)+len(r.Raw)+len(r.ToolCalls)+len(r.ToolCallID)+len(ts))
	for _, part := range [...]string{r.Role, r.Name, text, string(r.Raw), string(r.ToolCalls), r.ToolCallID, ts} {
		buf = strconv.AppendInt(buf, int64(len(part)), 10)
		buf = append(buf, ':')
		buf = append(buf, part...)
		buf = append(buf, '|')
	}
	return sha256.Sum256(buf)
}

// The record versions a master log may hold; Encode writes Version.
const (
	// VersionLegacy lines carry no checksum (logs written before
	// framing); they are still read, verified only as JSON.
	VersionLegacy = 1
	// VersionHashed lines end in ,"crc":"xxxxxxxx"}: the CRC-32C of the
	// line with that member removed; each holds its message's hash.
	VersionHashed = 2
	// VersionObject lines are framed the same way and leave the hash
	// out when the record's own fields give it (most messages: 75 of about
	// 320 bytes a line for a short turn); a record whose hash they do not
	// give (a forgotten turn's placeholder, content changed after hashing)
	// keeps it.
	VersionObject = 3
	// Version lines are JSON arrays (Encode): the same record without its
	// member names, its checksum the array's last element.
	Version = 4
)

var (
	// castagnoli is the CRC-32C table of the master log's checksums.
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	crcMember  = []byte(`,"crc":"`)
	// ErrDamaged marks a log record that fails its checksum or does not
	// decode: it is skipped and kept aside, never served.
	ErrDamaged = errors.New("damaged master log record")
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
// page and the package comment do not say.
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
func encodeArray(r Record) ([]byte, error) {
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
func decodeArray(body []byte) (Record, error) {
	var r Record
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
	if r.V != Version {
		return r, fmt.Errorf("array record of version %d", r.V)
	}
	r.ID, r.Raw, r.ToolCalls, r.ToolCallID = rare.ID, rare.Raw, rare.ToolCalls, rare.ToolCallID
	r.ToolUse, r.ToolResult, r.Hash, r.Forgotten = rare.ToolUse, rare.ToolResult, rare.Hash, rare.Forgotten
	return r, nil
}

// Encode renders r as one framed line of the current version (without its
// newline): the record's JSON with a checksum of those very bytes as its
// last element, so a reader verifies a line without re-encoding anything
// and the log stays one JSON value per line. r.V and r.CRC are ignored,
// and r.Hash is left out when the line's own fields give it.
func Encode(r Record) ([]byte, error) {
	r.V, r.CRC = Version, ""
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

// VerifyLine checks one line of any version (without its newline) and
// returns its sequence number. A framed line must match its checksum; a
// legacy line must decode as a version 1 record. A line that does not
// verify gives an error wrapping ErrDamaged.
func VerifyLine(line []byte) (int, error) {
	n := len(line)
	if n > 0 && line[0] == '[' {
		return verifyArray(line)
	}
	if n > crcSuffixLen && bytes.Equal(line[n-crcSuffixLen:n-10], crcMember) && line[n-2] == '"' && line[n-1] == '}' {
		return checkSum(line, n-crcSuffixLen, '}', framedSeq)
	}
	// A legacy line has no checksum: it is good when it decodes whole.
	var r Record
	if err := json.Unmarshal(line, &r); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	if r.V != VersionLegacy || r.Seq <= 0 {
		return 0, fmt.Errorf("%w: version %d, sequence %d without a checksum", ErrDamaged, r.V, r.Seq)
	}
	return r.Seq, nil
}

// verifyArray checks a version 4 line against its checksum element.
func verifyArray(line []byte) (int, error) {
	n := len(line)
	if n <= crcElemLen || line[n-12] != ',' || line[n-11] != '"' || line[n-2] != '"' || line[n-1] != ']' {
		return 0, fmt.Errorf("%w: an array record without its checksum", ErrDamaged)
	}
	return checkSum(line, n-crcElemLen, ']', arraySeq)
}

// checkSum verifies a line whose checksum, 8 hex digits at
// line[len-10:len-2], covers line[:bodyEnd] and the closing byte, and
// reads its sequence number with seqOf.
func checkSum(line []byte, bodyEnd int, closing byte, seqOf func([]byte) (int, bool)) (int, error) {
	n := len(line)
	// The checksum is written in lower-case hex: any other byte there is
	// damage, even where it would parse (an 'F' for an 'f').
	for _, c := range line[n-10 : n-2] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, fmt.Errorf("%w: unreadable checksum", ErrDamaged)
		}
	}
	want, err := strconv.ParseUint(string(line[n-10:n-2]), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: unreadable checksum", ErrDamaged)
	}
	got := crc32.Update(crc32.Checksum(line[:bodyEnd], castagnoli), castagnoli, []byte{closing})
	if uint32(want) != got {
		return 0, fmt.Errorf("%w: checksum %08x, want %08x", ErrDamaged, got, want)
	}
	seq, ok := seqOf(line)
	if !ok {
		return 0, fmt.Errorf("%w: checksum matches but the record has no sequence number", ErrDamaged)
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

// recordHash is the hash of the message r holds (MessageHash), in hex.
func recordHash(r Record) string {
	h := r.MessageHash()
	return hex.EncodeToString(h[:])
}

// framedSeq reads the sequence number from the fixed opening that
// version 3 lines have ({"v":3,"seq":N,, or "v":2 in older lines), so
// verifying a log needs no JSON decoding.
func framedSeq(line []byte) (int, bool) {
	const open = `{"v":3,"seq":`
	if len(line) < len(open) || !bytes.Equal(line[:5], []byte(open[:5])) || line[5] != '2' && line[5] != '3' ||
		!bytes.Equal(line[6:len(open)], []byte(open[6:])) {
		return 0, false
	}
	return seqAt(line, len(open))
}

// Decode verifies and decodes one line of any version (without its
// newline), filling in the hash a version 3 or 4 line left out. A line
// that does not verify or decode gives an error wrapping ErrDamaged.
func Decode(line []byte) (Record, error) {
	var r Record
	seq, err := VerifyLine(line)
	if err != nil {
		return r, err
	}
	if n := len(line); line[0] == '[' {
		// VerifyLine found the checksum element: decode the rest.
		r, err = decodeArray(append(line[:n-crcElemLen:n-crcElemLen], ']'))
	} else {
		err = json.Unmarshal(line, &r)
	}
	if err != nil {
		return r, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	if r.Seq != seq {
		return r, fmt.Errorf("%w: sequence %d, framed as %d", ErrDamaged, r.Seq, seq)
	}
	if r.Hash == "" && r.V >= VersionObject {
		r.Hash = recordHash(r)
	}
	return r, nil
}
