package main

// chatSession is a chat as "vc-mcp chat" exports it (/export FILE) and
// "vc-mcp replay" reads it back.
type chatSession struct {
	Format       string `json:"format"` // chatSessionFormat
	Version      int    `json:"version"`
	Conversation string `json:"conversation"`
	// Model is the provider and model that answered, e.g. "openai/gpt-4o-mini".
	Model  string      `json:"model,omitempty"`
	Budget int         `json:"budget"`
	Turns  []chatTurn  `json:"turns"`
	Events []chatEvent `json:"events"`
}

// chatTurn is one exchange, with what memory did for it.
type chatTurn struct {
	User      string      `json:"user"`
	Assistant string      `json:"assistant"`
	Timestamp string      `json:"timestamp"`
	Report    *turnReport `json:"report,omitempty"`
}

// chatEvent is something that happened between turns (a /compact).
type chatEvent struct {
	AfterTurn   int    `json:"after_turn"`
	Kind        string `json:"kind"` // "compact"
	Segments    int    `json:"segments"`
	TokensFreed int    `json:"tokens_freed"`
}
