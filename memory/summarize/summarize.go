// Package summarize builds Layer 1 (segment) and Layer 2 (tag) summaries
// without a language model, by extraction.
//
// Its Input and Result types are also the contract for model-backed
// summarisers (see memory/llm).
package summarize

import "time"

// Kind of summary being asked for.
type Kind string

const (
	// Segment summarises a run of contiguous turns sharing a primary tag (Layer 1).
	Segment Kind = "segment"
	// Tag rolls the segment summaries of one tag up into one (Layer 2).
	Tag Kind = "tag"
	// Single summarises one long turn in the light of its neighbours (seed 003).
	Single Kind = "turn"
	// Conversation writes the note that replaces the earlier part of a
	// conversation in summary-replacement mode (seed 001).
	Conversation Kind = "conversation"
)

// Turn is one original turn handed to a summariser.
type Turn struct {
	ID      string
	Role    string
	Speaker string
	Time    time.Time
	Text    string
}

// Input describes what to summarise.
type Input struct {
	// ConversationID names the memory space (for cost accounting by
	// model-backed summarisers).
	ConversationID string
	Kind           Kind
	// Tag is the segment's primary tag, or the tag being rolled up.
	Tag string
	// Tags are all tags on the segment (Kind Segment).
	Tags []string
	// Turns are the original turns (Kind Segment; Kind Single: exactly one).
	Turns []Turn
	// Segments are the Layer 1 summaries to roll up (Kind Tag), oldest first.
	Segments []string
	// Previous and Next are the neighbouring turns' text (Kind Single), so the
	// summary keeps the conversation's flow. For Kind Conversation, Previous
	// is the note of an earlier replacement, to be folded into the new one.
	Previous, Next string
	// MaxTokens bounds the summary (cl100k tokens); 0 means the
	// summariser's default.
	MaxTokens int
	// Prompt optionally overrides the instructions (tag rules' custom summary prompts).
	Prompt string
	// Simple asks for the short prompt (small or fast models) whatever the
	// summariser's own prompt mode is.
	Simple bool
}

// Result is a summary and what was extracted along the way.
type Result struct {
	Summary string
	// Description is a one-line (<= 80 words) description (Kind Tag).
	Description string
	Entities    []string
	Decisions   []string
	ActionItems []string
	Dates       []string
	// Tags are the refined tags: a superset of the input tags (tags may be
	// added, never removed).
	Tags []string
	// Method is "extractive" or "llm:<provider>/<model>".
	Method string
	// Version identifies the algorithm or prompt version, so summaries can
	// be regenerated when it changes.
	Version string
}
