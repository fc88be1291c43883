// Package memory is vc-mcp's domain: an unbounded, inspectable conversation
// memory.
//
// Every message is appended verbatim to a per-conversation master log
// (Layer 0, JSONL, fsync'd before Ingest returns). A bbolt file holds the
// index over the logs (turn id -> byte range, tags, time) and everything
// derived: segments and their summaries (Layer 1), tag summaries (Layer 2),
// the working set. A Bleve index holds the full text.
//
// What the store decided about the logs (a tagger's tags for each turn,
// compaction boundaries, segment and tag summaries with their method and
// version, summary regenerations, tag splits and aliases, working-set
// changes) goes to a second append-only log per conversation, the
// derived-decisions log (decisions/<id>.log): one line per record,
// "<crc32c> <json>", so each record verifies on its own; a damaged record
// is skipped and reported, never fatal, and reading resumes at the next
// line. Every decision but tags is fsync'd before the bbolt transaction
// that applies it; tags reach the disk with the next fsync'd decision.
// vc.db and the index are a function of the master logs plus these logs:
// Rebuild, or Open when vc.db is missing or behind, replays both and gives
// the same status and the same recall answers, without calling a tagger,
// summariser or splitter for anything recorded.
//
// The full-text index keeps watermarks per conversation (turns indexed,
// summary generation indexed). A background reconciler, one goroutine per
// store, catches up whatever a write could not index (a failed or
// cancelled index write, documents a failed flush dropped, an index
// deleted or left unclean by a crash) without delaying Open; until it has,
// Recall and FindQuote say they are catching up.
//
// Recall assembles, inside a strict cl100k token budget, the summaries and
// exact past turns that matter for a message.
package memory
