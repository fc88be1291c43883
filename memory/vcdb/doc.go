// Package vcdb opens and keeps vc.db, the bbolt file of vc-mcp's data
// directory, as a file: opening it safely (Open, OpenReadOnly), a panic
// of bbolt on a damaged page made an error (DB, Guard), compacting it in
// place and cutting it to its pages when the store closes (DB.Compact,
// DB.Trim), finishing a compaction a crash interrupted
// (FinishCompaction), and the rewrite after a forget (Rewrite). What
// vc.db holds (its buckets, its schema), which data directory it belongs
// to and what to tell a user about a damaged one are package memory's:
// here a damaged file is an error IsDamaged reports, and a panic a
// *PanicError the caller may turn into its own (DB.Damaged). It imports
// no package of the project but internal ones.
//
// vc.db is derived state: package memory makes it again from the master
// logs (`vc-mcp rebuild`), so what this package does to it favours never
// crashing and never leaving it half written over keeping it at any cost.
//
// # Opening
//
// bbolt reads the file through a memory map. A file cut short below the
// pages its meta page names (a full disk, a copy that stopped) faults
// the process (SIGBUS) at the first read past its end, which no recover
// catches; so Open first opens it read-only and checks its size against
// the meta page (CutShort), and only then opens it for use. The size is
// read under bbolt's lock: a writer that held the file while Open waited
// may have grown it. A file shorter than bbolt's two meta pages, one that
// is not a bbolt file, or one cut short is an error IsDamaged reports; a
// lock another process holds is bolt.ErrTimeout. A reader that opens the
// file itself (OpenReadOnly) calls CutShort before it reads a page past
// the meta pages.
//
// # A damaged page
//
// bbolt panics when a page it reads is not what it expects (one
// overwritten on disk). Its View and Update roll the transaction back as
// the panic passes; DB's View and Update, and Guard around an open or a
// pass over the whole file, recover it into a *PanicError, which wraps
// bbolt's ErrInvalid, so that the caller releases its locks and answers,
// and the server goes on serving what is intact.
//
// # Growing and trimming
//
// Past its first 256 KiB, Open's vc.db grows 256 KiB at a time (bbolt's
// default makes the file the next power of two above its pages, up to
// twice what it holds). Pages past the high-water mark hold nothing:
// DB.Trim cuts the file to it before the store lets the file go, and the
// next write that needs them grows it again. Windows cannot truncate a
// mapped file (and maps and grows it its own way): there Trim does
// nothing.
//
// # Compaction in place
//
// bbolt never returns pages: the file keeps the high-water mark of its
// largest transaction (package memory's compaction rewrites most topic
// summaries and segment blocks while the old pages are still in use), so
// at 10,000 turns a quarter of it was free pages (1.69 MB; 1.28 MB
// compacted, 11 ms). DB.Compact compacts it when free pages and the
// unused part of half-filled ones are at least an eighth of it and 128
// KiB.
//
// The file keeps its inode: bbolt's lock (flock on the file) is what
// decides which process owns the data directory, and a process waiting
// for it holds the file open, so replacing the file by a rename would let
// that process lock and use the old, unlinked one. Instead, while this
// process still holds the lock:
//
//  1. bbolt copies the live pages into vc.db.compacting (bolt.Compact),
//     which is synced and renamed to vc.db.compacted (synced directory);
//  2. its pages are written over vc.db from the start, the file is cut to
//     their end and synced;
//  3. vc.db.compacted is removed; then the lock is released.
//
// A crash during 2 leaves vc.db damaged beside a complete vc.db.compacted:
// the next open (FinishCompaction, with the file locked) copies it again
// before bbolt reads vc.db. A crash before 2 leaves vc.db as it was.
// Without flock(2) (Windows) there is no compaction in place
// (CompactsInPlace).
//
// After a forget, no freed page may keep a forgotten message's bytes:
// DB.Scrub compacts in place whatever that saves, while the store still
// holds the lock, so every byte of the file is written anew and the inode
// stays. Without compaction in place, Rewrite copies the closed file into
// a fresh one renamed over it (a new inode; on Windows a rename over a
// file another process has open fails rather than leave it an unlinked
// copy).
package vcdb
