package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/vc-mcp/vc-mcp/memory/requestlog"
)

// Each conversation's recalls are recorded in its request history,
// requests/<conversation file>.jsonl.gz: package memory/requestlog holds
// the file (its format, numbering, queue and writer, trimming, the
// scope-all markers); this file holds what is recorded (RequestRecord,
// itemsapi.go, as one JSON object) and the store's wiring. A recall numbers
// its record and queues it; the store's history writer appends it after
// the recall has answered, and keeps it queued to try again when the write
// fails (a full disk). Close writes what is still queued.
const (
	requestsDir = "requests"
	// RequestRetention is how many request records a conversation keeps.
	RequestRetention = requestlog.Retention
)

// requestEntry is a RequestRecord as its history queues and writes it.
type requestEntry RequestRecord

func (e *requestEntry) SetSeq(seq int) { e.Seq, e.ID = seq, "r"+strconv.Itoa(seq) }

func (e *requestEntry) MarshalLine() ([]byte, error) { return json.Marshal((*RequestRecord)(e)) }

func (e *requestEntry) ScopeAll() bool { return e.Scope == ScopeAll }

// scopeAllField is how a record of a recall over every conversation says
// so in its JSON.
var scopeAllField = []byte(`"scope":"` + string(ScopeAll) + `"`)

// requestFormat is what package requestlog knows of a request record.
var requestFormat = requestlog.Format{
	Seq: func(line []byte) int {
		r, ok := decodeRequest(line)
		if !ok {
			return 0
		}
		return r.Seq
	},
	ScopeAll: func(data []byte) bool { return bytes.Contains(data, scopeAllField) },
}

// decodeRequest decodes a history's line; ok is false for a line that is
// not a request record.
func decodeRequest(line []byte) (r RequestRecord, ok bool) {
	return r, json.Unmarshal(line, &r) == nil && r.Seq > 0
}

// decodeRequests decodes a history's lines, skipping those that are not
// request records.
func decodeRequests(lines [][]byte) []RequestRecord {
	var recs []RequestRecord
	for _, line := range lines {
		if r, ok := decodeRequest(line); ok {
			recs = append(recs, r)
		}
	}
	return recs
}

// markRequests marks the request histories in use (requestlog.Begin)
// before anything opens one (the line warmer does, in the background):
// when the last processes to write them crashed, numbering resumes past
// the records they may have numbered and not written, so no request id
// they gave names another record.
func (s *Store) markRequests() {
	if s.ro != nil {
		return
	}
	crashes, err := requestlog.Begin(filepath.Join(s.opts.Dir, requestsDir))
	if err != nil {
		s.log.Warn("request ids given before a crash may be given again", "err", err)
	}
	s.reqCrashes, s.reqMarked = crashes, err == nil
}

// startRequestWriter starts the history writer; Close stops it.
func (s *Store) startRequestWriter() {
	s.reqw = requestlog.StartWriter(func(err error) {
		s.log.Warn("recording the request context failed; the recall was unaffected", "err", err)
	})
}

// stopRequestWriter writes what is queued and ends the writer; records
// that a failed write left queued get a last try. No operation is in
// flight.
func (s *Store) stopRequestWriter() {
	if s.reqw != nil {
		s.reqw.Stop()
		s.reqw = nil
	}
	written := true
	s.reqs.Range(func(id, v any) bool {
		if err := v.(*requestlog.History).Flush(); err != nil {
			s.log.Warn("writing the request history at close failed; records it could not write are lost", "conversation", id, "err", err)
			written = false
		}
		return true
	})
	// Records numbered and not written keep the mark: the next start
	// numbers past them, as after a crash.
	if s.reqMarked && written {
		if err := requestlog.End(filepath.Join(s.opts.Dir, requestsDir)); err != nil {
			s.log.Warn("the next start will number request records as after a crash", "err", err)
		}
	}
}

func (s *Store) requestsPath(id string) string {
	return convFile(s.opts.Dir, requestsDir, id, requestlog.Ext)
}

func (s *Store) requestLog(id string) *requestlog.History {
	if v, ok := s.reqs.Load(id); ok { // a recall's path: no allocation
		return v.(*requestlog.History)
	}
	v, _ := s.reqs.LoadOrStore(id, requestlog.New(s.requestsPath(id), requestFormat).Resume(s.reqCrashes))
	return v.(*requestlog.History)
}

// errRewrittenMeanwhile: a record is not kept because a log rewrite began
// after the recall that made it did.
var errRewrittenMeanwhile = errors.New("a conversation's logs were rewritten during the recall")

// recallRecordHook, when set (tests only), runs after a recall has
// answered and before its request record is queued.
var recallRecordHook func()

// appendRequest gives rec its id and queues it for its conversation's
// request history. The history writer appends it (and trims the history to
// RequestRetention now and then); rec must not change after the call.
//
// rewrites is Store.logRewrites as the recall found it when it began. A
// forget or redaction that rewrote a log since may have taken out turns
// and topics rec names, and its scrub of the history may be done already:
// rec is then dropped (errRewrittenMeanwhile). The check is made under the
// history's queue lock, which a scrub takes (after bumping logRewrites) to
// write the queue before it rewrites the file, so a record either reaches
// the scrub or is dropped here.
func (s *Store) appendRequest(rec *RequestRecord, rewrites uint64) error {
	return s.requestLog(rec.ConversationID).Append((*requestEntry)(rec), s.reqw, func() error {
		if s.logRewrites.Load() != rewrites {
			return errRewrittenMeanwhile
		}
		return nil
	})
}

// readRequestHistory returns a conversation's request records, oldest
// first.
func (s *Store) readRequestHistory(id string) ([]RequestRecord, error) {
	lines, err := s.requestLog(id).Read()
	if err != nil {
		return nil, err
	}
	return decodeRequests(lines), nil
}

// scopeAllHistories lists the conversations whose request histories hold
// records of recalls over every conversation. The first call on a data
// directory written by an earlier version looks through every history once
// and marks those that do.
func (s *Store) scopeAllHistories() ([]string, error) {
	names, err := requestlog.ScopeAll(filepath.Join(s.opts.Dir, requestsDir), requestFormat)
	ids := make([]string, 0, len(names))
	for _, name := range names {
		ids = append(ids, idFromFileName(name))
	}
	slices.Sort(ids)
	return slices.Compact(ids), err
}
