package memory

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Turn metadata in vc.db is stored in a compact binary form: one record
// per turn, so its size is most of vc.db (as JSON, with the message hash
// and text key in hex and the time as text, 257 bytes a turn on the scale
// benchmark's turns; this form stores the same fields in about half).
// vc.db is derived state: nothing here is durable that the logs do not
// hold. Records written as JSON by earlier versions (they begin with '{')
// are still read, and rewritten in this form when they next change.
//
//	0x01                      version
//	varint  Seq
//	string  Role, Name        (uvarint length, bytes)
//	varint  When: Unix seconds, nanoseconds, zone offset in seconds
//	varint  Start, End, Tokens
//	strings Tags, Related     (uvarint count, then strings)
//	uvarint flags             Empty, Rule, ToolUse, ToolResult, Damaged, Question, Forgotten
//	hexstr  Hash              (see appendHexStr)
//	string  ID
//	varint  Session, Segment
//	hexstr  TextKey
const turnCodecV1 = 0x01

const (
	turnEmpty = 1 << iota
	turnRule
	turnToolUse
	turnToolResult
	turnDamaged
	turnQuestion
	turnForgotten
)

func encodeTurn(t *turnMeta) []byte {
	out := make([]byte, 0, 128)
	out = append(out, turnCodecV1)
	out = binary.AppendVarint(out, int64(t.Seq))
	out = appendStr(out, t.Role)
	out = appendStr(out, t.Name)
	out = appendTime(out, t.When)
	out = binary.AppendVarint(out, t.Start)
	out = binary.AppendVarint(out, t.End)
	out = binary.AppendVarint(out, int64(t.Tokens))
	out = appendStrs(out, t.Tags)
	out = appendStrs(out, t.Related)
	var flags uint64
	for _, f := range []struct {
		on  bool
		bit uint64
	}{{t.Empty, turnEmpty}, {t.Rule, turnRule}, {t.ToolUse, turnToolUse}, {t.ToolResult, turnToolResult},
		{t.Damaged, turnDamaged}, {t.Question, turnQuestion}, {t.Forgotten, turnForgotten}} {
		if f.on {
			flags |= f.bit
		}
	}
	out = binary.AppendUvarint(out, flags)
	out = appendHexStr(out, t.Hash)
	out = appendStr(out, t.ID)
	out = binary.AppendVarint(out, int64(t.Session))
	out = binary.AppendVarint(out, int64(t.Segment))
	return appendHexStr(out, t.TextKey)
}

// decodeTurn reads a stored turn in either form.
func decodeTurn(v []byte) (turnMeta, error) {
	var t turnMeta
	if len(v) > 0 && v[0] == '{' {
		err := json.Unmarshal(v, &t)
		return t, err
	}
	if len(v) == 0 || v[0] != turnCodecV1 {
		return t, errors.New("unknown turn record format")
	}
	r := turnReader{b: v[1:]}
	t.Seq = int(r.varint())
	t.Role, t.Name = r.str(), r.str()
	t.When = r.time()
	t.Start, t.End, t.Tokens = r.varint(), r.varint(), int(r.varint())
	t.Tags, t.Related = r.strs(), r.strs()
	flags := r.uvarint()
	t.Empty, t.Rule, t.ToolUse, t.ToolResult = flags&turnEmpty != 0, flags&turnRule != 0, flags&turnToolUse != 0, flags&turnToolResult != 0
	t.Damaged, t.Question, t.Forgotten = flags&turnDamaged != 0, flags&turnQuestion != 0, flags&turnForgotten != 0
	t.Hash = r.hexStr()
	t.ID = r.str()
	t.Session, t.Segment = int(r.varint()), int(r.varint())
	t.TextKey = r.hexStr()
	if r.err != nil {
		return turnMeta{}, r.err
	}
	if len(r.b) != 0 {
		return turnMeta{}, fmt.Errorf("%d bytes after the turn record", len(r.b))
	}
	return t, nil
}

// Segments are stored the same way (the segments bucket is vc.db's
// second largest):
//
//	0x01                      version
//	varint  ID
//	string  Primary
//	strings Tags
//	varint  First, Last
//	time    Start, End
//	string  Summary
//	varint  SummaryTokens, FullTokens
//	strings Entities, Decisions
//	string  Method, Version
//	time    CreatedAt
const segmentCodecV1 = 0x01

func encodeSegment(r *segmentRec) []byte {
	out := make([]byte, 0, 96+len(r.Summary))
	out = append(out, segmentCodecV1)
	out = binary.AppendVarint(out, int64(r.ID))
	out = appendStr(out, r.Primary)
	out = appendStrs(out, r.Tags)
	out = binary.AppendVarint(out, int64(r.First))
	out = binary.AppendVarint(out, int64(r.Last))
	out = appendTime(out, r.Start)
	out = appendTime(out, r.End)
	out = appendStr(out, r.Summary)
	out = binary.AppendVarint(out, int64(r.SummaryTokens))
	out = binary.AppendVarint(out, int64(r.FullTokens))
	out = appendStrs(out, r.Entities)
	out = appendStrs(out, r.Decisions)
	out = appendStr(out, r.Method)
	out = appendStr(out, r.Version)
	return appendTime(out, r.CreatedAt)
}

// decodeSegment reads a stored segment in either form.
func decodeSegment(v []byte) (*segmentRec, error) {
	r := &segmentRec{}
	if len(v) > 0 && v[0] == '{' {
		err := json.Unmarshal(v, r)
		return r, err
	}
	if len(v) == 0 || v[0] != segmentCodecV1 {
		return nil, errors.New("unknown segment record format")
	}
	rd := turnReader{b: v[1:]}
	r.ID = int(rd.varint())
	r.Primary = rd.str()
	r.Tags = rd.strs()
	r.First, r.Last = int(rd.varint()), int(rd.varint())
	r.Start, r.End = rd.time(), rd.time()
	r.Summary = rd.str()
	r.SummaryTokens, r.FullTokens = int(rd.varint()), int(rd.varint())
	r.Entities, r.Decisions = rd.strs(), rd.strs()
	r.Method, r.Version = rd.str(), rd.str()
	r.CreatedAt = rd.time()
	if rd.err != nil {
		return nil, rd.err
	}
	if len(rd.b) != 0 {
		return nil, fmt.Errorf("%d bytes after the segment record", len(rd.b))
	}
	return r, nil
}

// appendTime stores t as Unix seconds, nanoseconds and zone offset.
func appendTime(out []byte, t time.Time) []byte {
	_, off := t.Zone()
	out = binary.AppendVarint(out, t.Unix())
	out = binary.AppendVarint(out, int64(t.Nanosecond()))
	return binary.AppendVarint(out, int64(off))
}

func appendStr(out []byte, s string) []byte {
	out = binary.AppendUvarint(out, uint64(len(s)))
	return append(out, s...)
}

func appendStrs(out []byte, list []string) []byte {
	out = binary.AppendUvarint(out, uint64(len(list)))
	for _, s := range list {
		out = appendStr(out, s)
	}
	return out
}

// appendHexStr stores lower-case hex (the message hash, the text key) as
// its bytes, half the size, and any other string as it is: a uvarint of
// length<<1 | hex, then the bytes.
func appendHexStr(out []byte, s string) []byte {
	if raw, err := hex.DecodeString(s); err == nil && hex.EncodeToString(raw) == s {
		out = binary.AppendUvarint(out, uint64(len(raw))<<1|1)
		return append(out, raw...)
	}
	out = binary.AppendUvarint(out, uint64(len(s))<<1)
	return append(out, s...)
}

// turnReader reads a binary turn record; the first error sticks.
type turnReader struct {
	b   []byte
	err error
}

var errShortTurn = errors.New("turn record cut short")

func (r *turnReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShortTurn
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *turnReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShortTurn
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *turnReader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errShortTurn
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *turnReader) time() time.Time {
	sec, nsec, off := r.varint(), r.varint(), r.varint()
	t := time.Unix(sec, nsec).UTC()
	if off != 0 {
		t = t.In(time.FixedZone("", int(off)))
	}
	return t
}

func (r *turnReader) str() string { return string(r.bytes(r.uvarint())) }

func (r *turnReader) strs() []string {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) { // each string takes at least its length byte
		r.err = errShortTurn
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (r *turnReader) hexStr() string {
	h := r.uvarint()
	b := r.bytes(h >> 1)
	if h&1 == 1 {
		return hex.EncodeToString(b)
	}
	return string(b)
}

// Topic summaries (rollups) are stored as their JSON compressed with
// DEFLATE, after a 0x01 byte: an extractive rollup is its segments'
// summary lines joined, and every compaction rewrites most topics' rollups,
// so they were a fifth of vc.db's pages and most of the pages one
// compaction frees (the file's high-water mark is what it holds plus the
// largest transaction's rewrite). Compressed, they take about 45% of the
// bytes. JSON values of earlier versions (they begin with '{') are read
// as they are, and rewritten compressed when they next change.
const tagSumDeflate = 0x01

var (
	deflaters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.DefaultCompression) // the level is valid
		return w
	}}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}
)

// putTagSum stores r under its tag.
func putTagSum(b *bolt.Bucket, r *tagSummaryRec) error {
	js, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode topic summary %s: %w", r.Tag, err)
	}
	v, err := deflated(tagSumDeflate, js)
	if err != nil {
		return fmt.Errorf("compress topic summary %s: %w", r.Tag, err)
	}
	return b.Put([]byte(r.Tag), v)
}

// deflated returns marker followed by body, DEFLATE-compressed.
func deflated(marker byte, body []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(body)/2 + 16)
	buf.WriteByte(marker)
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	w.Reset(&buf)
	if _, err := w.Write(body); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeTagSum reads a stored topic summary in either form.
func decodeTagSum(v []byte) (*tagSummaryRec, error) {
	r := &tagSummaryRec{}
	if len(v) > 0 && v[0] == tagSumDeflate {
		rd := inflaters.Get().(io.ReadCloser)
		defer inflaters.Put(rd)
		if err := rd.(flate.Resetter).Reset(bytes.NewReader(v[1:]), nil); err != nil {
			return nil, err
		}
		js, err := io.ReadAll(rd)
		if err != nil {
			return nil, fmt.Errorf("decompress: %w", err)
		}
		v = js
	}
	if err := json.Unmarshal(v, r); err != nil {
		return nil, err
	}
	return r, nil
}
