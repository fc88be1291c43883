package memory

import (
	"context"
	"time"
)

// ConversationUsage is one conversation's context usage and its last
// compactions (the REST API's /api/status).
type ConversationUsage struct {
	ConversationID string `json:"conversation_id"`
	Turns          int    `json:"turns"`
	// Tokens are all stored turns' cl100k tokens; ActiveTokens those not
	// compacted into summaries yet, which the thresholds are measured on.
	Tokens          int `json:"tokens"`
	ActiveTokens    int `json:"active_tokens"`
	CompactedTokens int `json:"compacted_tokens"`
	Segments        int `json:"segments"`
	// WindowUsed is ActiveTokens as a fraction of the context window;
	// compaction starts at the soft threshold.
	ContextWindow int       `json:"context_window"`
	WindowUsed    float64   `json:"window_used"`
	LastSeen      time.Time `json:"last_seen,omitzero"`
	// LastCompaction is memory's latest compaction into topic summaries
	// (kept across restarts); LastReplacement the latest summary
	// replacement (CompactMessages) since the server started.
	LastCompaction  *CompactionInfo `json:"last_compaction,omitempty"`
	LastReplacement *Replacement    `json:"last_replacement,omitempty"`
}

// CompactionInfo describes memory's latest compaction of a conversation.
type CompactionInfo struct {
	At time.Time `json:"at"`
	// Through is the last turn compacted so far.
	Through string `json:"through"`
	// Method is the summariser of the newest segment summary.
	Method string `json:"method"`
}

// Usage reports every conversation's context usage and last compactions.
func (s *Store) Usage(ctx context.Context) ([]ConversationUsage, error) {
	ctx, end, err := s.begin(ctx, opRead)
	if err != nil {
		return nil, err
	}
	defer end()
	var out []ConversationUsage
	err = s.eachConversation(ctx, func(id string, c *conv) {
		u := ConversationUsage{ConversationID: id, Turns: len(c.turns), Tokens: c.tokens, ActiveTokens: c.active,
			CompactedTokens: c.tokens - c.active, Segments: len(c.segs), ContextWindow: s.opts.ContextWindow}
		u.WindowUsed = float64(c.active) / float64(s.opts.ContextWindow)
		if len(c.turns) > 0 {
			u.LastSeen = c.turns[len(c.turns)-1].When
		}
		if n := len(c.segs); n > 0 {
			last := c.segs[n-1]
			u.LastCompaction = &CompactionInfo{At: last.CreatedAt, Through: turnID(c.meta.CompactedThrough), Method: last.Method}
		}
		if r, ok := s.set.lastReplacement(id); ok {
			u.LastReplacement = &r
		}
		out = append(out, u)
	})
	if out == nil {
		out = []ConversationUsage{}
	}
	return out, err
}
