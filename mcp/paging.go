package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"hash/fnv"

	"github.com/vc-mcp/vc-mcp/memory"
)

// Lists that fit the client: every list answer has a size cap and an
// opaque cursor for the next page.
const (
	defaultStatusTags = 50
	maxStatusTags     = 500
	maxResourceItems  = 200
)

// pageCursor is what an opaque cursor holds: which list it pages, the
// offset of the next item, and a fingerprint of the request it belongs to.
type pageCursor struct {
	Kind   string `json:"k"`
	Offset int    `json:"o"`
	Hash   uint32 `json:"h,omitempty"`
}

func encodeCursor(kind string, offset int, hash uint32) string {
	b, _ := json.Marshal(pageCursor{Kind: kind, Offset: offset, Hash: hash})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor returns the offset a cursor points at ("" = the start).
func decodeCursor(kind, s string, hash uint32) (int, error) {
	if s == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c pageCursor
	if err != nil || json.Unmarshal(b, &c) != nil || c.Kind != kind || c.Offset < 0 {
		return 0, argErrorf("cursor: not a next_cursor from a %s answer; omit it for the first page", kind)
	}
	if c.Hash != hash {
		return 0, argErrorf("cursor: belongs to a %s call with other arguments; repeat the same arguments with it, or omit it for the first page", kind)
	}
	return c.Offset, nil
}

func fingerprint(parts ...string) uint32 {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum32()
}

// page returns items[off:off+limit] and the cursor of the next page ("" at
// the end).
func page[T any](items []T, off, limit int, kind string, hash uint32) ([]T, string) {
	if off >= len(items) {
		return []T{}, ""
	}
	end := min(len(items), off+limit)
	next := ""
	if end < len(items) {
		next = encodeCursor(kind, end, hash)
	}
	return items[off:end], next
}

// StatusPage is domain_status's structured result: one page of tags.
type StatusPage struct {
	ConversationID string             `json:"conversation_id"`
	Tags           []memory.TagStatus `json:"tags"`
	// TotalTags counts every tag; Tags holds at most limit of them.
	TotalTags int `json:"total_tags"`
	// NextCursor, when set, fetches the next page (pass it as cursor).
	NextCursor string          `json:"next_cursor,omitempty"`
	Totals     memory.Totals   `json:"totals"`
	Features   memory.Features `json:"features"`
}

type statusReq struct {
	conv          string
	offset, limit int
}

func decodeStatusPage(raw []byte) (statusReq, error) {
	conv, err := decodeStatus(raw)
	if err != nil {
		return statusReq{}, err
	}
	var a StatusArgs
	if err := decodeStrict(raw, &a); err != nil {
		return statusReq{}, err
	}
	r := statusReq{conv: conv, limit: defaultStatusTags}
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > maxStatusTags {
			return statusReq{}, argErrorf("limit: must be between 1 and %d, got %d", maxStatusTags, *a.Limit)
		}
		r.limit = *a.Limit
	}
	if r.offset, err = decodeCursor("domain_status", a.Cursor, fingerprint(conv)); err != nil {
		return statusReq{}, err
	}
	return r, nil
}

type findQuoteReq struct {
	memory.FindQuoteRequest
	offset int
	hash   uint32
}

func decodeFindQuotePage(raw []byte) (findQuoteReq, error) {
	req, err := decodeFindQuote(raw)
	if err != nil {
		return findQuoteReq{}, err
	}
	var a FindQuoteArgs
	if err := decodeStrict(raw, &a); err != nil {
		return findQuoteReq{}, err
	}
	r := findQuoteReq{FindQuoteRequest: req, hash: fingerprint(req.ConversationID, req.Query, a.Since, a.Until, req.Speaker, string(req.Scope))}
	if r.offset, err = decodeCursor("find_quote", a.Cursor, r.hash); err != nil {
		return findQuoteReq{}, err
	}
	if r.offset >= maxMaxResults {
		return findQuoteReq{}, argErrorf("cursor: find_quote pages through the best %d hits only; narrow the query or the time range", maxMaxResults)
	}
	return r, nil
}

// FindQuotePage is find_quote's structured result: one page of hits.
type FindQuotePage struct {
	Query  string         `json:"query"`
	Quotes []memory.Quote `json:"quotes"`
	// NextCursor, when set, fetches the next hits (pass it as cursor).
	NextCursor string `json:"next_cursor,omitempty"`
	// CatchingUp, IndexedThrough and Note say the full-text index is still
	// catching up (after a crash or a deleted index): hits may be missing.
	CatchingUp     bool   `json:"catching_up,omitempty"`
	IndexedThrough string `json:"indexed_through,omitempty"`
	Note           string `json:"note,omitempty"`
}

// findQuotePage asks memory for the hits up to the end of this page plus
// one (to know whether there is a next page) and keeps this page's.
func findQuotePage(ctx context.Context, mem Memory, r findQuoteReq) (FindQuotePage, error) {
	n := r.MaxResults
	q := r.FindQuoteRequest
	q.MaxResults = min(maxMaxResults, r.offset+n+1)
	res, err := mem.FindQuote(ctx, q)
	if err != nil {
		return FindQuotePage{}, err
	}
	quotes, next := page(res.Quotes, r.offset, n, "find_quote", r.hash)
	return FindQuotePage{Query: res.Query, Quotes: quotes, NextCursor: next,
		CatchingUp: res.CatchingUp, IndexedThrough: res.IndexedThrough, Note: res.Note}, nil
}
