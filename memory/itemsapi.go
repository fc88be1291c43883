package memory

import (
	"context"
	"fmt"
	"slices"
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
	// opAppend: the selection is a line of the decisions log (shared logs:
	// written under the conversation's lock and sent before success).
	ctx, end, id, err := s.beginOn(ctx, opAppend, conversationID)
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
	c.wmu.Lock()
	defer c.wmu.Unlock()
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
	if err := s.commitShared(ctx); err != nil {
		return ContextItemsResult{}, err
	}
	return res, nil
}

// saveSelection records a conversation's new item selection in its
// decisions log, then commits it to bbolt and memory. c.wmu is held; c.mu
// is taken for the change in memory only.
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
	c.mu.Lock()
	c.meta = meta
	c.mu.Unlock()
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
	recs, err := s.readRequestHistory(id)
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
