package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ConversationView is a whole conversation as people read it: its topics
// with their summaries, its compacted segments with their turns verbatim,
// and the turns not compacted yet (the active tail). It is a read-only
// snapshot taken under the conversation's read lock; the Markdown view
// (memory/markdown) renders it.
type ConversationView struct {
	ConversationID string
	// LogFile is the master log's path relative to the data directory,
	// slash-separated (e.g. "logs/default.jsonl").
	LogFile string
	// Turns counts every stored turn; CompactedThrough is the last turn
	// folded into a segment (0 = none).
	Turns            int
	CompactedThrough int
	FirstSeen        time.Time
	LastSeen         time.Time
	// Tags is every tag of the conversation, by name.
	Tags []TagView
	// Segments are the compacted segments, in order.
	Segments []SegmentView
	// Active holds the turns after CompactedThrough.
	Active []ViewTurn
}

// TagView is one topic: its one-line description and Layer 2 summary (empty
// until a compaction summarised it) and what carries it.
type TagView struct {
	Tag           string
	Description   string
	Summary       string
	SummaryMethod string
	SummaryModel  string
	Version       string
	Turns         int
	// Segments are the ids ("s3") of the segments carrying the tag.
	Segments []string
}

// SegmentView is one Layer 1 segment with its turns.
type SegmentView struct {
	ID                  string
	Primary             string
	Tags                []string
	FirstTurn, LastTurn string
	Start, End          time.Time
	Summary             string
	// SummaryMethod is "extractive" or "llm"; SummaryModel names the model
	// ("provider/model") of an LLM summary.
	SummaryMethod string
	SummaryModel  string
	Version       string
	// LogStart and LogEnd bound the segment's records in the master log.
	LogStart, LogEnd int64
	Turns            []ViewTurn
}

// ViewTurn is one turn read back verbatim from the master log.
type ViewTurn struct {
	TurnID    string
	Role      string
	Speaker   string
	Timestamp time.Time
	// Text is the message's text exactly as stored ("" for an empty turn,
	// e.g. a tool call without text).
	Text       string
	Tags       []string
	ToolUse    bool
	ToolResult bool
	// LogStart and LogEnd are the turn's byte range in the master log.
	LogStart, LogEnd int64
}

// View returns a snapshot of a conversation ("" = the default) for people
// to read. A conversation with nothing stored gives ErrNotFound.
func (s *Store) View(ctx context.Context, conversationID string) (ConversationView, error) {
	id, err := s.resolve(conversationID)
	if err != nil {
		return ConversationView{}, err
	}
	c, err := s.conversation(ctx, id, false)
	if err != nil {
		return ConversationView{}, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	v := ConversationView{ConversationID: id, Turns: len(c.turns), CompactedThrough: c.meta.CompactedThrough}
	if rel, err := filepath.Rel(s.opts.Dir, c.log.Path()); err == nil {
		v.LogFile = filepath.ToSlash(rel)
	} else {
		v.LogFile = filepath.ToSlash(c.log.Path())
	}
	if len(c.turns) > 0 {
		v.FirstSeen, v.LastSeen = c.turns[0].When, c.turns[len(c.turns)-1].When
	}
	readTurn := func(seq int) (ViewTurn, error) {
		if err := ctx.Err(); err != nil {
			return ViewTurn{}, err
		}
		t := &c.turns[seq-1]
		vt := ViewTurn{
			TurnID: turnID(seq), Role: t.Role, Speaker: t.Name, Timestamp: t.When,
			Tags: nonNil(t.Tags), ToolUse: t.ToolUse, ToolResult: t.ToolResult,
			LogStart: t.Start, LogEnd: t.End,
		}
		rec, err := c.log.Read(t.Start, t.End)
		if err != nil {
			return vt, fmt.Errorf("view %s turn %s: %w", id, vt.TurnID, err)
		}
		vt.Text = rec.Content
		return vt, nil
	}
	segTags := map[string][]string{}
	for _, sg := range c.segs {
		sv := SegmentView{
			ID: segmentName(sg.ID), Primary: sg.Primary, Tags: nonNil(sg.Tags),
			FirstTurn: turnID(sg.First), LastTurn: turnID(sg.Last), Start: sg.Start, End: sg.End,
			Summary: sg.Summary, Version: sg.Version,
		}
		sv.SummaryMethod, sv.SummaryModel = splitMethod(sg.Method)
		for seq := sg.First; seq <= sg.Last && seq <= len(c.turns); seq++ {
			if c.turns[seq-1].Forgotten {
				continue // forgotten turns leave the view
			}
			vt, err := readTurn(seq)
			if err != nil {
				return ConversationView{}, err
			}
			sv.Turns = append(sv.Turns, vt)
		}
		if n := len(sv.Turns); n > 0 {
			sv.LogStart, sv.LogEnd = sv.Turns[0].LogStart, sv.Turns[n-1].LogEnd
		} else if sg.Summary == "" {
			continue // emptied by forget: nothing left to show
		}
		for _, tag := range sg.Tags {
			segTags[tag] = append(segTags[tag], sv.ID)
		}
		v.Segments = append(v.Segments, sv)
	}
	for seq := c.meta.CompactedThrough + 1; seq <= len(c.turns); seq++ {
		if c.turns[seq-1].Forgotten {
			continue
		}
		vt, err := readTurn(seq)
		if err != nil {
			return ConversationView{}, err
		}
		v.Active = append(v.Active, vt)
	}
	names := map[string]bool{}
	for tag, n := range c.vocab {
		if n > 0 {
			names[tag] = true
		}
	}
	for tag := range c.tagSums {
		names[tag] = true
	}
	for tag := range names {
		tv := TagView{Tag: tag, Turns: c.vocab[tag], Segments: nonNil(segTags[tag])}
		if sum, ok := c.tagSums[tag]; ok {
			tv.Description, tv.Summary, tv.Version = sum.Description, sum.Summary, sum.Version
			tv.SummaryMethod, tv.SummaryModel = splitMethod(sum.Method)
		}
		v.Tags = append(v.Tags, tv)
	}
	sort.Slice(v.Tags, func(i, j int) bool { return v.Tags[i].Tag < v.Tags[j].Tag })
	return v, nil
}

// splitMethod reads a summary method ("extractive", "llm:openai/gpt-4o")
// into the method and the model.
func splitMethod(m string) (method, model string) {
	if rest, ok := strings.CutPrefix(m, "llm:"); ok {
		return "llm", rest
	}
	return m, ""
}
