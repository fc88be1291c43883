// Package memory is vc-mcp's domain: an unbounded, inspectable conversation
// memory.
//
// Every message is appended verbatim to a per-conversation master log
// (Layer 0, JSONL, fsync'd before Ingest returns). A bbolt file holds the
// index over the logs (turn id -> byte range, tags, time) and everything
// derived: segments and their summaries (Layer 1), tag summaries (Layer 2),
// the working set. A Bleve index holds the full text. Deleting the bbolt file
// and the index loses nothing: Rebuild recreates them from the logs.
//
// Recall assembles, inside a strict cl100k token budget, the summaries and
// exact past turns that matter for a message.
package memory
