// Package tagging assigns topic tags to conversation turns and classifies
// recall queries, without any language model.
//
// The types here are also the contract for model-backed taggers (see
// memory/llm): memory.Tagger takes an Input and returns a Result whatever
// produced it.
package tagging

// Input is one turn to tag, with the conversation's vocabulary so far.
type Input struct {
	// ConversationID names the memory space the turn belongs to (for cost
	// accounting by model-backed taggers).
	ConversationID string
	// Text is the turn's normalised text (or a user+assistant pair joined by
	// a blank line).
	Text string
	// Role is "user", "assistant", "system" or "tool".
	Role string
	// Speaker is the message's name, if any (e.g. "Caroline").
	Speaker string
	// Vocabulary maps every canonical tag already used in this conversation
	// to the number of turns carrying it. Read-only.
	Vocabulary map[string]int
	// Aliases maps alias -> canonical tag. Read-only.
	Aliases map[string]string
	// Previous holds the tags of the previous turn, for short follow-ups
	// ("yes, do that") that carry no topic words of their own.
	Previous []string
}

// Result is the tagging of one turn.
type Result struct {
	// Tags are 1..5 canonical tags; Tags[0] == Primary.
	Tags    []string
	Primary string
	// Related are alternative names for the same topics, used for
	// cross-vocabulary recall at half weight. Never overlaps Tags.
	Related []string
	// Broad and Temporal flag queries such as "what did we discuss" or
	// "at the very beginning".
	Broad    bool
	Temporal bool
	// Rule marks an explicit standing instruction ("always", "never",
	// "from now on").
	Rule bool
	// Source says what produced the tags: "keyword", "embedding", "llm:<model>",
	// "inherited" or "fallback".
	Source string
}

// General is the tag for turns with no topical content.
const General = "_general"
