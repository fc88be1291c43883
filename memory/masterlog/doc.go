// Package masterlog reads and writes vc-mcp's master logs: the
// append-only, per-conversation JSONL files (logs/<file>.jsonl in the data
// directory) that hold every stored message verbatim. They are the store's
// source of truth: everything package memory keeps besides them is derived
// from them. This package holds the record and its versioned codec
// (Record, Encode, Decode, VerifyLine), the file (Log: append, read, cut,
// replace) and the scanner that verifies a whole log (Scan); what to do
// with a damaged record or a torn tail is package memory's decision. It
// imports no package of the project but internal ones.
//
// # Format
//
// A master log holds one record per line: a JSON value, then '\n'.
// Since format version 4 (this one) a record is a JSON array whose last
// element is its checksum:
//
//	[4,7,"user","Ana","yes","2024-03-01T09:00:00Z","2026-11-24T02:29:58.457Z","66f62035"]
//
// The elements are: the version (4), seq, role, name ("" for none),
// content, ts (when the message was said, as the client gave it, or null),
// at (when vc-mcp stored it, to the millisecond), then, only when the
// record has any, an object of its rarer members under their version 3
// names (id, raw, tool_calls, tool_call_id, tool_use, tool_result, hash,
// forgotten), and last the checksum: the CRC-32C (Castagnoli), as 8
// lower-case hex digits in a string, of the line with that last element
// (`,"xxxxxxxx"`) removed, so of the bytes from `[4,` to `]`. Member names
// and the stored time's nanoseconds were two fifths of a short turn's
// version 3 line. The message's hash (Record.MessageHash) is left out when
// the record's own fields give it (they do unless the turn is a forgotten
// placeholder or its text changed after hashing), and reading computes it.
//
// Older lines are read as they were, and a log may hold several versions
// (new records follow old ones in the same file): version 3 and 2 lines
// are JSON objects ending in their checksum member,
//
//	{"v":3,"seq":7,"role":"user","content":"yes","at":"...","crc":"1c291ca3"}
//
// where crc is over the line with `,"crc":"xxxxxxxx"` removed; version 2
// lines always hold "hash"; lines with "v":1 and no crc (logs written
// before checksums) are verified only as JSON.
//
// The log stays greppable and each record is verifiable on its own (the
// LevelDB/etcd-wal rule). seq numbers the conversation's turns from 1
// (turn id "t"+seq). content is the message text byte for byte; raw holds
// non-string content as sent; id is the client's message id, when given.
// A forgotten message is a placeholder with the same seq, no text and
// "forgotten":true; its hash is kept so that the message is never stored
// again (a resend or re-import).
//
// # Reading
//
// Scan verifies each line. A complete line that fails verification is
// damaged: it goes to the caller (offset, reason, the bytes) and is
// skipped; the records after it are kept, and inside a damaged line the
// reader resynchronises at a later record that verifies. Only an
// unterminated last line that does not verify is a torn tail (a crash
// during an append that was never acknowledged): Scan returns where it
// begins. One that verifies lost only its newline, and is kept
// (an empty Log.AppendLines puts the newline back). A record read by
// its byte range (Log.Read, Log.ReadContent) is verified too; a damaged
// one is an error wrapping ErrDamaged, never served.
//
// # Writing
//
// Records are written at the committed end of the log (an explicit
// offset, not O_APPEND), then the file is fsync'd, and a new file's
// directory too. An append refuses a file shorter than what was committed,
// so it never lands behind a hole. A rewrite (Log.Replace, Log.Successor)
// puts a whole new file in place atomically.
package masterlog
