// Package requestlog reads and writes vc-mcp's request histories: one file
// per conversation (requests/<file>.jsonl.gz in the data directory) in
// which package memory records what each recall used (memory's
// RequestRecord). This package holds the file mechanics: a history's
// numbering, its queue and the background writer that appends it
// (History, Writer), its trimming and rewriting, the gzip member codec,
// the move of an earlier version's plain history, and the scope-all
// markers (ScopeAll). What a record holds, when to record one and how to
// scrub one are package memory's: here a record is an opaque line of JSON
// (Record to write one, Format to read one). It imports no package of the
// project but internal ones.
//
// # Format
//
// A history is <file>.jsonl.gz (Ext), newest record last: one gzip member
// per record, each holding the record as one JSON object and a newline,
// so any gzip reader (`zcat`) reads the file as JSON lines. A record's
// inclusion list repeats the same field names for every turn, which
// compresses about tenfold; appending a member never touches the ones
// before it, and trimming copies whole members without decoding them. A
// record carries its sequence number (Format.Seq reads it); the first is
// 1.
//
// Histories are for people, not state: appends are not fsync'd, and only
// the newest Retention are kept (a history is trimmed back to Retention
// when it holds half as many more). A member that does not decompress is
// skipped (reading resumes at the next member's header) and a line that
// is not a record is left out; both stay in the file. A member cut short
// at the end (a write that did not finish) is cut off when the history is
// opened.
//
// Histories written before 2026-11-24 as plain JSON lines (<file>.jsonl,
// PlainExt) are moved into the compressed file the first time the
// conversation's history is used (Open): their record lines, as they were,
// come first, and those the compressed file holds too (a move cut short)
// are kept once.
//
// # Scope-all markers
//
// A history that holds records of recalls over every conversation (scope
// "all"), which name other conversations' turns ("<conversation>/t12"),
// has a marker beside it, <file>.scope-all (MarkerExt), made before the
// first such record is queued: a forget looks through those histories
// only (ScopeAll), not through every conversation's. A trim or rewrite
// (a scrub) that leaves the history no such record, the queue holding
// none either, removes the marker (and one that leaves one makes it again,
// if it was lost); an emptied history has none. The empty file
// scope-all-markers-made (MarkersMade) in the directory says the histories
// of earlier versions, which had no markers, were looked through once and
// marked; a directory this package creates has it from the start.
//
// # Writing
//
// A caller numbers its record and queues it (History.Append), holding the
// history's queue lock for that (and to make the scope-all marker, and to
// run the caller's check); the store's history writer (Writer, one
// goroutine) encodes and appends the queue after the caller has answered,
// under the history's file lock, so a caller does not wait while the
// previous record is compressed and written (unless the writer has fallen
// behind: with 64 new records queued, or its channel full, the caller
// writes the queue itself). A record is appended once: a write is made at
// the file's end in one piece, and one that fails is cut off the file
// again (should that cut fail too, the members the disk took whole count
// as written, and the next write goes over the torn one). The
// records of a failed write (a full disk) stay queued, ahead of newer
// ones, and a later write tries them again, in order: the writer and
// callers wait a second after a failed write before the next try, so a
// disk that stays full costs a try and a warning a second; Flush always
// tries. At most Retention wait, the oldest dropped first (the next error
// says so). A record's number is given when it is queued: one dropped
// while the disk is full leaves its number unused in the file, and
// numbering after a restart goes on from the file's newest record. A
// process that writes histories marks their directory in use (Begin,
// the file InUse) and removes the mark once all it numbered is written
// (End); the mark counts the processes that began since the last End, so
// Begin knows how many crashed in a row, and the histories opened then
// number Retention past their newest record for each (Resume): no number
// a crashed process gave out names another record.
// Reading a history reads the queued records too, so a reader sees every
// record a caller has numbered; rewriting one (Update, a scrub) writes
// what is queued first, drops it when that fails (so that no record
// escapes a scrub), and rewrites the file all the same, also when nothing
// changed but the file holds a damaged or torn member; a rewrite that
// cannot be written (its new copy needs free space) clears the history
// instead, so that a scrub never leaves what it was to remove. Stopping
// the writer writes what was sent to it, but not within a second of a
// failed write: its caller flushes each history a last time (Flush always
// tries).
// Lock order: a history's file lock, then its queue lock.
package requestlog
