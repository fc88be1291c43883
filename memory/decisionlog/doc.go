// Package decisionlog reads and writes the files of vc-mcp's
// derived-decisions logs: one append-only file per conversation
// (decisions/<file>.log in the data directory) in which package memory
// records what it decided about the master log (see memory/decisions.go
// for what, and which of it is fsync'd when). This package holds the
// framing of a record (Frame, Body), the file (Log: open, append, sync,
// close) and the scanner that reads it (Scan). What a record's body holds
// (JSON, its kind) and what to do with one that does not decode are
// package memory's. It imports no package of the project but internal
// ones.
//
// # Format
//
// A decisions log holds one record per line: the checksum of the body, a
// space, the body, then '\n':
//
//	96bc41c7 {"kind":"working","at":"2026-11-24T02:29:58.457Z"}
//
// The checksum is the CRC-32C (Castagnoli) of the body's bytes, as 8
// hex digits (written lower-case; read in either case). The body is
// opaque here: any non-empty bytes without a newline (package memory
// writes a JSON object). Each record verifies on its own, and the log
// stays greppable.
//
// # Reading
//
// Scan reads complete (newline-terminated) lines and gives each to its
// caller with its byte range and whether its checksum holds: a line that
// is shorter than a checksum, a space and one byte, has no space after
// the checksum, or whose checksum does not match is damaged. A damaged
// line is the caller's to report and skip; it is never cut or rewritten,
// and reading goes on at the next line (there is no resynchronisation
// inside a line: damage that ate a newline loses both records it
// glued). Only an unterminated last line is a torn tail, a crash during
// an append: Scan stops before it and says so.
//
// # Writing
//
// Open creates the file (owner-only, with its directory; a new file's
// directory entry is fsync'd) and scans it for its end, the offset after
// the last complete line. Append writes a record there (AppendAll
// several, in one write), at an explicit offset rather than with
// O_APPEND, then truncates the file to the new end: a torn tail is
// overwritten by the next append, or cut where it was longer, and never
// lies between two records. With sync set the file is fsync'd before the
// append returns; without, the record is written (it survives a process
// crash, not a power loss) and reaches the disk with the next fsync'd
// append, Sync or Close. A failed append (its write, or its fsync) leaves
// the end where it was and cuts the file back to it, so that nothing the
// disk took of it is read as a record by the next Open. A
// whole new file (a rewrite) is put in place by the caller, atomically;
// a Log on the old file is closed first and opened again after.
package decisionlog
