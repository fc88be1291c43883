package memory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Turn is one stored message read back verbatim from its master log (the
// virtualcontext://conversations/{conversation}/turns/{turn} resource).
type Turn struct {
	ConversationID string    `json:"conversation_id"`
	TurnID         string    `json:"turn_id"`
	Role           string    `json:"role"`
	Speaker        string    `json:"speaker,omitempty"`
	Timestamp      time.Time `json:"timestamp"`
	// Text is the message's text exactly as stored.
	Text string   `json:"text"`
	Tags []string `json:"tags"`
	// Segment is the compacted segment holding the turn ("s3"), if any.
	Segment    string `json:"segment,omitempty"`
	ToolUse    bool   `json:"tool_use,omitempty"`
	ToolResult bool   `json:"tool_result,omitempty"`
	Ref        LogRef `json:"ref"`
}

// Turn reads one turn ("t12") of a conversation ("" = the default) back from
// its master log.
func (s *Store) Turn(ctx context.Context, conversationID, id string) (Turn, error) {
	conv, err := s.resolve(conversationID)
	if err != nil {
		return Turn{}, err
	}
	seq, err := parseTurnID(id)
	if err != nil {
		return Turn{}, err
	}
	c, err := s.conversation(ctx, conv, false)
	if err != nil {
		return Turn{}, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	t := c.turn(seq)
	if t == nil {
		return Turn{}, fmt.Errorf("%w: conversation %q has no turn %s (it has t1 to t%d)", ErrNotFound, conv, id, len(c.turns))
	}
	if t.Forgotten {
		return Turn{}, fmt.Errorf("%w: turn %s of %q was forgotten (removed on request); its text is gone", ErrNotFound, id, conv)
	}
	rec, err := c.log.Read(t.Start, t.End)
	if err != nil {
		return Turn{}, fmt.Errorf("read turn %s of %s: %w", id, conv, err)
	}
	out := Turn{
		ConversationID: conv, TurnID: turnID(seq), Role: t.Role, Speaker: t.Name, Timestamp: t.When,
		Text: rec.Content, Tags: nonNil(t.Tags), ToolUse: t.ToolUse, ToolResult: t.ToolResult,
		Ref: LogRef{File: s.refPath(c.log.Path()), Start: t.Start, End: t.End},
	}
	if t.Segment > 0 {
		out.Segment = segmentName(t.Segment)
	}
	return out, nil
}

// DefaultConversation is the conversation used when a request names none.
func (s *Store) DefaultConversation() string { return s.opts.DefaultConversation }

// parseTurnID reads "t12" (as turn ids are written) into 12.
func parseTurnID(id string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "t"))
	if err != nil || !strings.HasPrefix(id, "t") || n < 1 || id != turnID(n) {
		return 0, fmt.Errorf("%w: turn id %q is not of the form t<number> (e.g. t12)", ErrInvalid, id)
	}
	return n, nil
}

// TagsOfTexts returns, for each text that is the text of a stored turn of
// the conversation (surrounding white space aside), that turn's tags (the
// latest such turn). A caller that holds messages but not what memory made
// of them, such as a proxy after a restart, learns their topics this way.
// Texts not stored are absent from the answer.
func (s *Store) TagsOfTexts(ctx context.Context, conversationID string, texts []string) (map[string][]string, error) {
	ctx, end, conv, err := s.beginOn(ctx, opRead, conversationID)
	if err != nil {
		return nil, err
	}
	defer end()
	c, err := s.conversation(ctx, conv, false)
	if err != nil {
		return nil, err
	}
	want := make(map[string][]string, len(texts)) // text key -> texts asked
	for _, t := range texts {
		if strings.TrimSpace(t) != "" {
			k := textKey(t)
			want[k] = append(want[k], t)
		}
	}
	out := make(map[string][]string, len(texts))
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i := len(c.turns) - 1; i >= 0 && len(want) > 0; i-- {
		t := &c.turns[i]
		asked, ok := want[t.TextKey]
		if !ok || t.TextKey == "" {
			continue
		}
		for _, text := range asked {
			out[text] = nonNil(slices.Clone(t.Tags))
		}
		delete(want, t.TextKey)
	}
	return out, nil
}
