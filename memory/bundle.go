package memory

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
)

// The interchange bundle: a memory as one JSON Lines file that another
// vc-mcp (or another tool) can read back exactly. docs/bundle.md is the
// specification; this file reads and writes it, store_bundle.go moves it in
// and out of a Store.
//
// A bundle carries the two durable inputs of each conversation, and
// nothing derived: its master log records, verbatim (so an import writes
// byte-identical logs), and its derived-decisions records, verbatim and by
// kind without interpreting them (so decision kinds added later travel
// without a change here). vc.db and the index are rebuilt from them.

// Bundle format identification.
const (
	// BundleFormat is the header's "format" value.
	BundleFormat = "vc-mcp-bundle"
	// BundleVersion is the bundle version this code writes, and the newest
	// it reads.
	BundleVersion = 1
)

// Bundle line types (the "type" member of every line after the header).
const (
	bundleConversation = "conversation"
	bundleMessage      = "message"
	bundleDecision     = "decision"
	bundleTrailer      = "trailer"
)

var (
	// ErrBadBundle marks a bundle that cannot be imported as it is:
	// truncated, damaged, or not a bundle. Nothing was written.
	ErrBadBundle = errors.New("bad bundle")
	// ErrBundleVersion marks a bundle written in a newer version of the
	// format than this vc-mcp reads. Nothing was written.
	ErrBundleVersion = errors.New("unsupported bundle version")
)

// Bundle is a whole bundle in memory.
type Bundle struct {
	Header        BundleHeader
	Conversations []BundleConversation
}

// BundleHeader is a bundle's first line.
type BundleHeader struct {
	Format       string    `json:"format"`
	Version      int       `json:"version"`
	ExportedAt   time.Time `json:"exported_at"`
	VCMCPVersion string    `json:"vc_mcp_version,omitempty"`
}

// BundleConversation is one conversation of a bundle.
type BundleConversation struct {
	ID string
	// Messages are master log records, one line each without its newline,
	// byte for byte as the master log holds them, in sequence order.
	Messages [][]byte
	// Decisions are derived-decisions records: the JSON of each, without
	// its checksum prefix, byte for byte, in log order.
	Decisions [][]byte
}

// BundleStats counts what a bundle holds.
type BundleStats struct {
	Conversations int `json:"conversations"`
	Messages      int `json:"messages"`
	Decisions     int `json:"decisions"`
}

// Stats counts b's contents.
func (b *Bundle) Stats() BundleStats {
	st := BundleStats{Conversations: len(b.Conversations)}
	for _, c := range b.Conversations {
		st.Messages += len(c.Messages)
		st.Decisions += len(c.Decisions)
	}
	return st
}

// bundleLine is any line after the header, as read.
type bundleLine struct {
	Type string `json:"type"`
	// conversation
	ID        string `json:"id"`
	Messages  *int   `json:"messages"`
	Decisions *int   `json:"decisions"`
	// message, decision
	Conversation string          `json:"conversation"`
	Kind         string          `json:"kind"`
	Record       json.RawMessage `json:"record"`
	// trailer
	Conversations *int   `json:"conversations"`
	SHA256        string `json:"sha256"`
}

type convLine struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Messages  int    `json:"messages"`
	Decisions int    `json:"decisions"`
}

type trailerLine struct {
	Type          string `json:"type"`
	Conversations int    `json:"conversations"`
	Messages      int    `json:"messages"`
	Decisions     int    `json:"decisions"`
	SHA256        string `json:"sha256"`
}

// bundleWriter writes a bundle line by line, hashing everything before the
// trailer.
type bundleWriter struct {
	w     *bufio.Writer
	sum   hash.Hash
	stats BundleStats
	buf   []byte
}

func newBundleWriter(w io.Writer, h BundleHeader) (*bundleWriter, error) {
	bw := &bundleWriter{w: bufio.NewWriterSize(w, 1<<16), sum: sha256.New()}
	h.Format, h.Version = BundleFormat, BundleVersion
	h.ExportedAt = h.ExportedAt.UTC()
	if err := bw.value(h); err != nil {
		return nil, err
	}
	return bw, nil
}

// value writes v as one line.
func (bw *bundleWriter) value(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode bundle line: %w", err)
	}
	return bw.line(append(line, '\n'))
}

func (bw *bundleWriter) line(p []byte) error {
	bw.sum.Write(p)
	if _, err := bw.w.Write(p); err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	return nil
}

// conversation writes a conversation: its line, its messages, then its
// decisions. Records are embedded as they are (each is one compact JSON
// object), never re-encoded.
func (bw *bundleWriter) conversation(c BundleConversation) error {
	if err := bw.value(convLine{Type: bundleConversation, ID: c.ID, Messages: len(c.Messages), Decisions: len(c.Decisions)}); err != nil {
		return err
	}
	id, err := json.Marshal(c.ID)
	if err != nil {
		return fmt.Errorf("encode conversation id: %w", err)
	}
	for _, m := range c.Messages {
		b := append(bw.buf[:0], `{"type":"message","conversation":`...)
		b = append(b, id...)
		b = append(b, `,"record":`...)
		b = append(append(b, m...), '}', '\n')
		bw.buf = b
		if err := bw.line(b); err != nil {
			return err
		}
	}
	for _, d := range c.Decisions {
		kind, err := decisionKind(d)
		if err != nil {
			return fmt.Errorf("conversation %s: %w", c.ID, err)
		}
		k, _ := json.Marshal(kind)
		b := append(bw.buf[:0], `{"type":"decision","conversation":`...)
		b = append(b, id...)
		b = append(append(b, `,"kind":`...), k...)
		b = append(b, `,"record":`...)
		b = append(append(b, d...), '}', '\n')
		bw.buf = b
		if err := bw.line(b); err != nil {
			return err
		}
	}
	bw.stats.Conversations++
	bw.stats.Messages += len(c.Messages)
	bw.stats.Decisions += len(c.Decisions)
	return nil
}

// close writes the trailer and flushes.
func (bw *bundleWriter) close() (BundleStats, error) {
	t := trailerLine{Type: bundleTrailer, Conversations: bw.stats.Conversations, Messages: bw.stats.Messages,
		Decisions: bw.stats.Decisions, SHA256: hex.EncodeToString(bw.sum.Sum(nil))}
	if err := bw.value(t); err != nil {
		return bw.stats, err
	}
	if err := bw.w.Flush(); err != nil {
		return bw.stats, fmt.Errorf("write bundle: %w", err)
	}
	return bw.stats, nil
}

// WriteBundle writes b to w: the header (format and version set here), each
// conversation, and the trailer.
func WriteBundle(w io.Writer, b *Bundle) (BundleStats, error) {
	bw, err := newBundleWriter(w, b.Header)
	if err != nil {
		return BundleStats{}, err
	}
	for _, c := range b.Conversations {
		if err := bw.conversation(c); err != nil {
			return bw.stats, err
		}
	}
	return bw.close()
}

// decisionKind reads the kind of a decisions record.
func decisionKind(rec []byte) (string, error) {
	var d struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(rec, &d); err != nil {
		return "", fmt.Errorf("decision record: %w", err)
	}
	if d.Kind == "" {
		return "", errors.New("decision record has no kind")
	}
	return d.Kind, nil
}

// ReadBundle reads and verifies a whole bundle: header, format version,
// the order and shape of every line, every message record's own checksum,
// the declared counts, and the trailer's checksum of everything before it.
// Any failure is an error wrapping ErrBadBundle (or ErrBundleVersion) that
// names the line; a caller that writes only after ReadBundle returns writes
// nothing for a truncated or damaged file.
func ReadBundle(r io.Reader) (*Bundle, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	sum := sha256.New()
	b := &Bundle{}
	n := 0
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrBadBundle, n, fmt.Sprintf(format, args...))
	}
	var cur *BundleConversation
	var want convLine
	seen := map[string]bool{}
	lastSeq := 0
	closeConv := func() error {
		if cur == nil {
			return nil
		}
		if len(cur.Messages) != want.Messages || len(cur.Decisions) != want.Decisions {
			return bad("conversation %s declares %d messages and %d decisions but holds %d and %d (lines are missing: the bundle was cut or edited)",
				cur.ID, want.Messages, want.Decisions, len(cur.Messages), len(cur.Decisions))
		}
		b.Conversations = append(b.Conversations, *cur)
		cur = nil
		return nil
	}
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read bundle: %w", err)
		}
		if len(line) == 0 {
			if n == 0 {
				return nil, fmt.Errorf("%w: the file is empty", ErrBadBundle)
			}
			return nil, fmt.Errorf("%w: it ends after line %d without its trailer: the file is truncated", ErrBadBundle, n)
		}
		n++
		body := bytes.TrimSuffix(line, []byte{'\n'})
		if n == 1 {
			if err := readBundleHeader(body, &b.Header); err != nil {
				return nil, err
			}
			sum.Write(line)
			continue
		}
		var l bundleLine
		if err := json.Unmarshal(body, &l); err != nil {
			if line[len(line)-1] != '\n' {
				return nil, bad("incomplete line at the end of the file: the file is truncated")
			}
			return nil, bad("not a JSON object: %v", err)
		}
		switch l.Type {
		case bundleConversation:
			if err := closeConv(); err != nil {
				return nil, err
			}
			if err := ValidateConversationID(l.ID); err != nil {
				return nil, bad("conversation id: %v", err)
			}
			if seen[l.ID] {
				return nil, bad("conversation %s appears twice", l.ID)
			}
			if l.Messages == nil || l.Decisions == nil || *l.Messages < 0 || *l.Decisions < 0 {
				return nil, bad("conversation %s has no message and decision counts", l.ID)
			}
			seen[l.ID] = true
			cur = &BundleConversation{ID: l.ID}
			want = convLine{ID: l.ID, Messages: *l.Messages, Decisions: *l.Decisions}
			lastSeq = 0
		case bundleMessage, bundleDecision:
			if cur == nil || l.Conversation != cur.ID {
				return nil, bad("%s of conversation %q outside that conversation's lines", l.Type, l.Conversation)
			}
			rec := []byte(l.Record)
			// A message record is an array since master log format 4, an
			// object before; a decision record is an object.
			if len(rec) == 0 || rec[0] != '{' && (rec[0] != '[' || l.Type != bundleMessage) {
				return nil, bad("%s without a record object", l.Type)
			}
			if bytes.ContainsAny(rec, "\r\n") {
				return nil, bad("%s record spans lines", l.Type)
			}
			if l.Type == bundleMessage {
				r, err := masterlog.Decode(rec)
				if err != nil {
					return nil, bad("message record does not verify: %v", err)
				}
				if r.Seq <= lastSeq {
					return nil, bad("message t%d of %s comes after t%d (records must be in sequence order)", r.Seq, cur.ID, lastSeq)
				}
				lastSeq = r.Seq
				cur.Messages = append(cur.Messages, rec)
				break
			}
			kind, err := decisionKind(rec)
			if err != nil {
				return nil, bad("%v", err)
			}
			if kind != l.Kind {
				return nil, bad("decision line says kind %q, its record %q", l.Kind, kind)
			}
			cur.Decisions = append(cur.Decisions, rec)
		case bundleTrailer:
			if err := closeConv(); err != nil {
				return nil, err
			}
			st := b.Stats()
			if l.Conversations == nil || l.Messages == nil || l.Decisions == nil {
				return nil, bad("trailer without its counts")
			}
			if *l.Conversations != st.Conversations || *l.Messages != st.Messages || *l.Decisions != st.Decisions {
				return nil, bad("trailer counts %d conversations, %d messages, %d decisions; the bundle holds %d, %d, %d",
					*l.Conversations, *l.Messages, *l.Decisions, st.Conversations, st.Messages, st.Decisions)
			}
			if got := hex.EncodeToString(sum.Sum(nil)); got != l.SHA256 {
				return nil, bad("checksum mismatch: the lines before the trailer hash to %s, the trailer says %q (the file was damaged or edited)", got, l.SHA256)
			}
			if rest, _ := io.ReadAll(br); len(bytes.TrimSpace(rest)) > 0 {
				return nil, bad("data after the trailer")
			}
			return b, nil
		case "":
			return nil, bad("a line without a type")
		default:
			return nil, bad("unknown line type %q (a version %d bundle has conversation, message, decision and trailer lines)", l.Type, BundleVersion)
		}
		sum.Write(line)
	}
}

// readBundleHeader checks the first line.
func readBundleHeader(line []byte, h *BundleHeader) error {
	var raw struct {
		Format  string          `json:"format"`
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(line, &raw); err != nil || raw.Format != BundleFormat {
		return fmt.Errorf("%w: line 1 is not a %s header (want {\"format\":%q,\"version\":%d,...})", ErrBadBundle, BundleFormat, BundleFormat, BundleVersion)
	}
	v, err := strconv.Atoi(string(raw.Version))
	if err != nil || v < 1 {
		return fmt.Errorf("%w: line 1: version %s is not a positive whole number", ErrBadBundle, raw.Version)
	}
	if v > BundleVersion {
		return fmt.Errorf("%w: the bundle is version %d and this vc-mcp reads versions up to %d: upgrade vc-mcp to import it", ErrBundleVersion, v, BundleVersion)
	}
	if err := json.Unmarshal(line, h); err != nil {
		return fmt.Errorf("%w: line 1: %v", ErrBadBundle, err)
	}
	return nil
}

// IsBundle reports whether data (a file's first bytes) opens like a bundle.
func IsBundle(data []byte) bool {
	line, _, _ := bytes.Cut(data, []byte{'\n'})
	var h struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(line, &h) == nil && h.Format == BundleFormat
}
