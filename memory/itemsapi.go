package memory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ContextItemInfo is one catalogue item as a conversation sees it.
type ContextItemInfo struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Priority    int    `json:"priority"`
	Include     string `json:"include"`
	// Tokens is the item's size in an assembly (cl100k); Chunks how many
	// pieces it is searched by.
	Tokens int `json:"tokens"`
	Chunks int `json:"chunks"`
	// Session is how the item is in the conversation's session context
	// ("always" or "manual"), "" when it is not; Removed says it was
	// removed from this conversation (never included here).
	Session string `json:"session,omitempty"`
	Removed bool   `json:"removed,omitempty"`
}

// ContextItemsResult lists the catalogue for one conversation; after an
// add or remove, Item and Changed say what the call did.
type ContextItemsResult struct {
	ConversationID string            `json:"conversation_id"`
	Items          []ContextItemInfo `json:"items"`
	Item           string            `json:"item,omitempty"`
	Changed        bool              `json:"changed"`
}

// ContextItems lists the context items and their place in a
// conversation's session context (list_context_items).
func (s *Store) ContextItems(ctx context.Context, conversationID string) (ContextItemsResult, error) {
	ctx, end, id, err := s.beginOn(ctx, opRead, conversationID)
	if err != nil {
		return ContextItemsResult{}, err
	}
	defer end()
	sel, err := s.selection(ctx, id)
	if err != nil {
		return ContextItemsResult{}, err
	}
	return s.itemList(id, sel), nil
}

func (s *Store) itemList(id string, sel *itemSelection) ContextItemsResult {
	res := ContextItemsResult{ConversationID: id, Items: make([]ContextItemInfo, 0, len(s.items.items))}
	for _, ci := range s.items.items {
		res.Items = append(res.Items, ContextItemInfo{
			Type: ci.Type, Name: ci.Name, Description: ci.Description, Priority: ci.Priority, Include: ci.Include,
			Tokens: ci.tokens, Chunks: len(ci.chunks), Session: sessionMode(ci, sel), Removed: sel.removed(ci.Name),
		})
	}
	return res
}

// ContextItem returns one item of the catalogue, text included.
func (s *Store) ContextItem(name string) (ContextItem, error) {
	ci, err := s.items.find(name)
	if err != nil {
		return ContextItem{}, err
	}
	return ci.ContextItem, nil
}

// AddContextItem puts an item in a conversation's session context (it is
// then in every recall of it, whatever its include mode) and lifts an
// earlier removal (add_context_item). Adding an item already there
// changes nothing.
func (s *Store) AddContextItem(ctx context.Context, conversationID, name string) (ContextItemsResult, error) {
	return s.changeSelection(ctx, conversationID, name, true)
}

// RemoveContextItem takes an item out of a conversation's session context
// and keeps it out of the conversation's recalls, also as an agent item
// (remove_context_item). AddContextItem undoes it.
func (s *Store) RemoveContextItem(ctx context.Context, conversationID, name string) (ContextItemsResult, error) {
	return s.changeSelection(ctx, conversationID, name, false)
}

func (s *Store) changeSelection(ctx context.Context, conversationID, name string, add bool) (ContextItemsResult, error) {
	ctx, end, id, err := s.beginOn(ctx, opWrite, conversationID)
	if err != nil {
		return ContextItemsResult{}, err
	}
	defer end()
	ci, err := s.items.find(name)
	if err != nil {
		return ContextItemsResult{}, err
	}
	c, err := s.conversation(ctx, id, true)
	if err != nil {
		return ContextItemsResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sel := c.meta.Items.clone()
	sel.Added = slices.DeleteFunc(sel.Added, func(n string) bool { return n == ci.Name })
	sel.Removed = slices.DeleteFunc(sel.Removed, func(n string) bool { return n == ci.Name })
	switch {
	case add && ci.Include != IncludeAlways:
		sel.Added = append(sel.Added, ci.Name)
	case !add && ci.Include != IncludeManual:
		sel.Removed = append(sel.Removed, ci.Name)
	}
	old := c.meta.Items.clone()
	changed := !slices.Equal(old.Added, sel.Added) || !slices.Equal(old.Removed, sel.Removed)
	if changed {
		if err := s.saveSelection(c, sel); err != nil {
			return ContextItemsResult{}, err
		}
	}
	res := s.itemList(id, c.meta.Items)
	res.Item, res.Changed = ci.Name, changed
	return res, nil
}

// saveSelection records a conversation's new item selection in its
// decisions log, then commits it to bbolt and memory. c.mu is held for
// writing.
func (s *Store) saveSelection(c *conv, sel *itemSelection) error {
	end, err := s.recordDecision(c, decision{Kind: decItems, Items: sel})
	if err != nil {
		return err
	}
	meta := c.meta
	meta.DecisionsSize = end
	meta.Items = sel
	if err := s.db.Update(func(tx *bolt.Tx) error {
		if _, err := convBucket(tx, c.id); err != nil {
			return err
		}
		return putMeta(tx, meta)
	}); err != nil {
		return fmt.Errorf("save context items of %s: %w", c.id, err)
	}
	c.meta = meta
	return nil
}

// RequestRecord is what one recall used: every context item included or
// considered (with why), how agent items were searched, and the memory
// parts chosen. The message itself is not kept (only its size).
type RequestRecord struct {
	ID             string         `json:"id"`
	Seq            int            `json:"seq"`
	At             time.Time      `json:"at"`
	ConversationID string         `json:"conversation_id"`
	Scope          Scope          `json:"scope"`
	MessageTokens  int            `json:"message_tokens"`
	Budget         int            `json:"budget"`
	Tokens         int            `json:"tokens"`
	Items          []ItemDecision `json:"items"`
	Search         ItemSearch     `json:"search"`
	Memory         RequestMemory  `json:"memory"`
}

// RequestMemory is the memory part of a request record.
type RequestMemory struct {
	MatchedTags []string       `json:"matched_tags"`
	TurnIDs     []string       `json:"turn_ids"`
	Summaries   []SummaryRef   `json:"summaries"`
	Included    []Inclusion    `json:"included"`
	Breakdown   TokenBreakdown `json:"breakdown"`
}

// Request records live in requests/<conversation file>.jsonl, one JSON
// object a line, newest last. They are a history for people, not state:
// appends are not fsync'd, and only the newest RequestRetention are kept.
const (
	requestsDir = "requests"
	// RequestRetention is how many request records a conversation keeps.
	RequestRetention = 200
)

type requestLog struct {
	mu     sync.Mutex
	loaded bool
	next   int // seq of the next record
	count  int // records in the file
}

func (s *Store) requestsPath(id string) string {
	return filepath.Join(s.opts.Dir, requestsDir, fileName(id)+".jsonl")
}

func (s *Store) requestLog(id string) *requestLog {
	v, _ := s.reqs.LoadOrStore(id, &requestLog{})
	return v.(*requestLog)
}

// appendRequest gives rec its id and appends it to its conversation's
// request history, trimming the history to RequestRetention now and then.
func (s *Store) appendRequest(rec *RequestRecord) error {
	l := s.requestLog(rec.ConversationID)
	l.mu.Lock()
	defer l.mu.Unlock()
	path := s.requestsPath(rec.ConversationID)
	if !l.loaded {
		recs, err := readRequests(path, true)
		if err != nil {
			return err
		}
		l.next, l.count = 1, len(recs)
		if len(recs) > 0 {
			l.next = recs[len(recs)-1].Seq + 1
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
		}
		l.loaded = true
	}
	rec.Seq, rec.ID = l.next, "r"+strconv.Itoa(l.next)
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode request record: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if errors.Is(err, fs.ErrNotExist) { // requests/ removed by hand since
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		}
	}
	if err != nil {
		return fmt.Errorf("open request history: %w", err)
	}
	_, werr := f.Write(append(line, '\n'))
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("append to request history: %w", err)
	}
	l.next++
	l.count++
	if l.count > RequestRetention+RequestRetention/2 {
		return l.trim(path, RequestRetention)
	}
	return nil
}

// trim keeps the newest keep lines of the request history at path
// (atomically), copied as they are: trimming decodes nothing. l.mu is
// held.
func (l *requestLog) trim(path string, keep int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read request history: %w", err)
	}
	data = data[:bytes.LastIndexByte(data, '\n')+1] // whole lines only
	start, lines := len(data), 0
	for start > 0 && lines < keep {
		start = bytes.LastIndexByte(data[:start-1], '\n') + 1
		lines++
	}
	if err := atomicWrite(path, data[start:]); err != nil {
		return err
	}
	l.count = lines
	return nil
}

// rewrite replaces the request history at path with recs (atomically).
// l.mu is held.
func (l *requestLog) rewrite(path string, recs []RequestRecord) error {
	var b bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode request record: %w", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := atomicWrite(path, b.Bytes()); err != nil {
		return err
	}
	l.count = len(recs)
	return nil
}

// readRequests reads a request history, oldest first, skipping lines that
// do not decode. With fixTail, an unterminated last line (a write cut
// short) is cut off so the next append starts a fresh line.
func readRequests(path string, fixTail bool) ([]RequestRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read request history: %w", err)
	}
	if n := len(data); n > 0 && data[n-1] != '\n' {
		keep := bytes.LastIndexByte(data, '\n') + 1
		data = data[:keep]
		if fixTail {
			if err := os.Truncate(path, int64(keep)); err != nil {
				return nil, fmt.Errorf("repair request history: %w", err)
			}
		}
	}
	var out []RequestRecord
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var r RequestRecord
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Seq > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// Requests returns a conversation's recorded recalls, newest first (at
// most RequestRetention).
func (s *Store) Requests(ctx context.Context, conversationID string) ([]RequestRecord, error) {
	ctx, end, id, err := s.beginOn(ctx, opRead, conversationID)
	if err != nil {
		return nil, err
	}
	defer end()
	if err := s.ownerAllows(ctx, id); err != nil {
		return nil, err
	}
	l := s.requestLog(id)
	l.mu.Lock()
	recs, err := readRequests(s.requestsPath(id), false)
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	slices.Reverse(recs)
	if len(recs) > RequestRetention {
		recs = recs[:RequestRetention]
	}
	if recs == nil {
		recs = []RequestRecord{}
	}
	return recs, nil
}
