package memory

import (
	"context"
	"fmt"
	"maps"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
	bolt "go.etcd.io/bbolt"
)

// Aliases returns a conversation's tag aliases: other names (alias ->
// tag) the tagger maps to a stored tag. Tag splits register some; AddAlias
// the user's. A conversation with nothing stored has none.
func (s *Store) Aliases(ctx context.Context, conversationID string) (map[string]string, error) {
	ctx, end, id, err := s.beginOn(ctx, opRead, conversationID)
	if err != nil {
		return nil, err
	}
	defer end()
	c, err := s.conversation(ctx, id, false)
	if err != nil {
		if isNotFound(err) {
			return map[string]string{}, nil
		}
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := maps.Clone(c.meta.Aliases)
	if out == nil {
		out = map[string]string{}
	}
	return out, nil
}

// AddAlias registers alias as another name of an existing tag: turns that
// say alias are tagged tag from now on. It returns the conversation's
// aliases afterwards. The alias must not itself be a tag with turns.
func (s *Store) AddAlias(ctx context.Context, conversationID, alias, tag string) (map[string]string, error) {
	// opAppend: the aliases are a line of the decisions log.
	ctx, end, id, err := s.beginOn(ctx, opAppend, conversationID)
	if err != nil {
		return nil, err
	}
	defer end()
	name := tagging.Canonicalize(alias, nil)
	if name == "" {
		return nil, fmt.Errorf("%w: alias %q has no letters or digits to use", ErrInvalid, alias)
	}
	c, canon, unlock, err := s.lockTopic(ctx, id, tag)
	if err != nil {
		return nil, err
	}
	defer unlock()
	switch {
	case name == canon:
		return nil, fmt.Errorf("%w: %q is the tag itself, not another name for it", ErrInvalid, alias)
	case c.vocab[name] > 0:
		return nil, fmt.Errorf("%w: %q is already a tag with %d turn(s); an alias must be a name not in use", ErrInvalid, name, c.vocab[name])
	}
	aliases := maps.Clone(c.meta.Aliases)
	if aliases == nil {
		aliases = map[string]string{}
	}
	aliases[name] = canon
	end2, err := s.recordDecision(c, decision{Kind: decAliases, Aliases: aliases})
	if err != nil {
		return nil, err
	}
	meta := c.meta
	meta.DecisionsSize, meta.Aliases = end2, aliases
	if err := s.db.Update(func(tx *bolt.Tx) error { return putMeta(tx, meta) }); err != nil {
		return nil, fmt.Errorf("save aliases of %s: %w", c.id, err)
	}
	c.mu.Lock()
	c.meta = meta
	c.mu.Unlock()
	if err := s.commitShared(ctx); err != nil {
		return nil, err
	}
	return maps.Clone(aliases), nil
}
