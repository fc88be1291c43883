package memory

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Owners. A call made on behalf of an owner (WithOwner: the HTTP transport
// names one per bearer token when the server has several) sees only the
// conversations that owner first wrote and those nobody owns. The first
// compact_context (Ingest) that creates a conversation for an owner records
// the owner as a decision (kind "owner") in the conversation's decisions
// log, so it survives a rebuild, travels in bundles and reaches every
// process sharing the logs (PostgreSQL). A conversation without an owner
// record stays open to every caller. Calls with no owner (stdio, the
// command line, a single token) see everything, as before owners existed.

// ErrForbidden: the conversation belongs to another owner. Errors wrapping
// it also wrap ErrInvalid (the caller's mistake: a message, not a fault).
var ErrForbidden = errors.New("forbidden")

// decOwner records the conversation's owner.
const decOwner = "owner"

type ownerKey struct{}

// WithOwner returns a context whose calls act on behalf of owner ("" is no
// owner).
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFrom returns the owner a context acts for ("" for none).
func OwnerFrom(ctx context.Context) string {
	o, _ := ctx.Value(ownerKey{}).(string)
	return o
}

// checkOwner refuses a caller acting for another owner than c's.
func checkOwner(ctx context.Context, c *conv) error {
	caller := OwnerFrom(ctx)
	if caller == "" {
		return nil
	}
	c.mu.RLock()
	owner := c.meta.Owner
	c.mu.RUnlock()
	if owner == "" || owner == caller {
		return nil
	}
	return fmt.Errorf("%w: %w: conversation %q belongs to another owner: this token reads and writes only its own conversations and those without an owner; use another conversation_id", ErrForbidden, ErrInvalid, c.id)
}

// claimOwner records the caller's owner on a conversation that has nothing
// stored and no owner yet (its first write). c.mu is not held.
func (s *Store) claimOwner(ctx context.Context, c *conv) error {
	caller := OwnerFrom(ctx)
	if caller == "" {
		return nil
	}
	c.wmu.Lock() // the state changes under mu too, after the commit
	defer c.wmu.Unlock()
	if c.meta.Owner != "" || len(c.turns) > 0 {
		if c.meta.Owner != "" && c.meta.Owner != caller {
			return fmt.Errorf("%w: %w: conversation %q belongs to another owner; use another conversation_id", ErrForbidden, ErrInvalid, c.id)
		}
		return nil
	}
	end, err := s.recordDecision(c, decision{Kind: decOwner, Owner: caller})
	if err != nil {
		return s.storageError(err, "nothing was stored")
	}
	meta := c.meta
	meta.DecisionsSize, meta.Owner = end, caller
	if err := s.db.Update(func(tx *bolt.Tx) error { return putMeta(tx, meta) }); err != nil {
		return s.storageError(fmt.Errorf("save the owner of %s: %w", c.id, err), "nothing was stored")
	}
	c.mu.Lock()
	c.meta = meta
	c.mu.Unlock()
	return nil
}

// ownerAllows checks the caller's owner against conversation id's, for
// reads that do not load the conversation otherwise. A conversation that
// does not exist is allowed (the read finds nothing).
func (s *Store) ownerAllows(ctx context.Context, id string) error {
	if OwnerFrom(ctx) == "" {
		return nil
	}
	if _, err := s.conversation(ctx, id, false); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}
