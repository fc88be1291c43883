// Package memory is vc-mcp's domain: an unbounded, inspectable conversation
// memory.
//
// Every message is appended verbatim to a per-conversation master log
// (Layer 0, fsync'd before Ingest returns). A bbolt file holds the index
// over the logs (turn id -> byte range, tags, time) and everything derived:
// segments and their summaries (Layer 1), tag summaries (Layer 2), the
// working set. A Bleve index makes the turns' text searchable (it does not
// keep a copy: excerpts are cut from the log). The master logs are the
// source of truth: Rebuild recreates the bbolt file and the index from them.
//
// What the store decided about the logs (a tagger's tags for each turn,
// compaction boundaries, segment and tag summaries with their method and
// version, summary regenerations, tag splits and aliases, working-set
// changes) goes to a second append-only log per conversation, the
// derived-decisions log (decisions/<id>.log): one line per record,
// "<crc32c> <json>", so each record verifies on its own; a damaged record
// is skipped and reported, never fatal, and reading resumes at the next
// line. Package memory/decisionlog holds the file, its framing and the
// scanner (its doc gives the format); the records, JSON decisions, are
// this package's (decisions.go). Every decision but tags is fsync'd
// before the bbolt transaction that applies it; tags reach the disk with
// the next fsync'd decision.
// Tags decisions name each turn by the first 16 hex digits of its hash,
// and an extractive topic summary (rollup) of a compaction is recorded by
// reference (rollupref.go: its segments, version, time and a digest) and
// made again on replay, since it is a function of what replay already
// holds; anything a model wrote is recorded in full.
// vc.db and the index are a function of the master logs plus these logs:
// Rebuild, or Open when vc.db is missing or behind, replays both and gives
// the same status and the same recall answers, without calling a tagger,
// summariser or splitter for anything recorded.
//
// vc.db stores each turn's metadata in a compact binary form
// (turncodec.go; JSON records of earlier versions are still read), turns
// and segments in DEFLATE-compressed blocks once a block is full
// (blocks.go). The file itself is package vcdb's: it is probed before
// bbolt maps it, a page bbolt panics on is an error (here a StorageError
// naming `vc-mcp rebuild`, storageerr.go), and Close compacts it in place
// when it is mostly free pages and cuts it to its pages. The full-text
// index stores neither the text nor term vectors: find_quote cuts its
// excerpts from the master log and checks phrases on it (index/phrase.go).
//
// The full-text index keeps watermarks per conversation (turns indexed,
// summary generation indexed). A background reconciler, one goroutine per
// store, catches up whatever a write could not index (a failed or
// cancelled index write, documents a failed flush dropped, an index
// deleted or left unclean by a crash) without delaying Open; until it has,
// Recall and FindQuote say they are catching up.
//
// Recall assembles, inside a strict cl100k token budget, the summaries and
// exact past turns that matter for a message, ending with a topics hint in
// the form the client suits (HintStyleFor: a short list or a budget
// dashboard). Package memory/tokens counts the tokens of every budget.
//
// CompactMessages is summary-replacement mode for clients that keep their
// own message list: it stores the messages, then returns the system
// messages, one summary standing in for the older ones and the latest
// ones. Settings (thresholds, protected turns, summary replacement, the
// hint's form) can change while the store is open (UpdateSettings); the
// changes are kept in runtime-settings.json in the data directory.
//
// A data directory this process may not write, or one opened with
// Options.ReadOnly, is served from a private snapshot in the temporary
// directory (readonly.go): the read path, which itself writes (a load's
// log verification and repairs, catching the index up, the request
// history), runs unchanged on the copy; calls that would store, forget or
// change anything fail with ErrReadOnly; the directory is never opened for
// writing.
//
// # Master log
//
// logs/<file>.jsonl is a conversation's master log: one record per line
// (since format version 4 a JSON array ending in its CRC-32C, older
// versions still read), each verifiable on its own; seq numbers the
// conversation's turns from 1 (turn id "t"+seq). Package memory/masterlog
// reads and writes it, and its package comment describes the format, how
// a damaged line or a torn tail is found, and how records are appended.
//
// A forgotten message (Forget, tag TTL) is rewritten in place as a
// placeholder with the same seq, no text and "forgotten":true; its hash is
// kept so that the message is never stored again (a resend or re-import).
// The rewrite goes through a temporary file, fsync and rename, like every
// rewrite of either log; the decisions log then holds a "forget" tombstone
// (turn numbers, hashes, reason, time; never text). See forget.go.
//
// Loading a log: every time a conversation is loaded its whole log is
// verified against the store.
//   - a damaged line is reported (slog Warn; Status.Totals.DamagedRecords),
//     copied to quarantine/<file>.jsonl (offset, reason, the bytes), left
//     in place and skipped; the records after it are kept. A stored turn
//     whose record is damaged or missing stays as a placeholder: its id is
//     never reused.
//   - a torn tail is copied to quarantine and cut.
//   - a log that is shorter than what was committed (cut outside vc-mcp) is
//     repaired to its last complete record before anything is appended, and
//     records whose bytes moved are found at their new place.
//
// Idempotency: Ingest lines a batch up against the end of the stored
// conversation (the longest run of stored turns that equals the start of
// the batch is a resend), so resending the whole history or only the last
// exchange stores each message once, while the same words said again later
// are kept. A message with a client id (Message.ID) is stored once per id,
// one with a timestamp once per role, name, content and timestamp.
//
// Concurrency: the lock order is written at the top of store.go. A
// conversation's writers hold its writer lock across their I/O and take its
// state lock only to put what they committed in place, so reads (which
// hold the state lock for reading) never wait for a writer's fsync. Each
// exported method is an operation; Close refuses new ones (ErrClosed),
// waits for those in flight, then saves and closes. At most
// Options.MaxOpenConversations conversations stay loaded (LRU); each loads
// without holding Store.mu, and servers load the conversations written last
// in the background at Open (Options.WarmConversations). A replay of what
// another process or a bundle appended runs on a private copy of the
// conversation (conv.fork) that is put in place in one step. An operation
// that appends a line to either log, a decision alone included (an alias,
// a context item, a working-set change), begins as opAppend: on shared
// logs (shared.go) it holds the conversation's cross-process lock from its
// catch-up to its commit, and commits before it reports success, one
// conversation at a time.
//
// Failures of the data directory (disk full, permissions, a damaged vc.db)
// are *StorageError values wrapping ErrStorage, whose message says what to
// do and whether anything was stored.
//
// Context items (items.go): a catalogue of rules and references from
// Options.ContextItems joins each recall inside its budget. A
// conversation's additions and removals are decisions (kind "context");
// vectors of the items' chunks are cached in cache/context-vectors/ (one
// file per chunk and model, safe to delete); what each recall used is
// appended to requests/<file>.jsonl.gz (not fsync'd, the newest 200 kept;
// a history for people, never read back into state; requests/in-use is
// there while a store may write them, and after a crash). Package
// memory/requestlog reads and writes those files, and its package comment
// describes their format; requests.go holds what is recorded.
//
// File names: a conversation id names its files with ':' and every
// upper-case letter written %XX (upper-case hex): "Proj:Chat" is
// %50roj%3A%43hat.jsonl, so ids that differ only in case never share a file
// on a case-insensitive file system. Logs named the old way ("Chat.jsonl")
// are renamed when the store opens. (On such a file system, an old store in
// which "Chat" and "chat" already shared one file cannot be separated.)
//
// # Where things are
//
// The package's files by responsibility (tests sit beside each file):
//
//   - The API: api.go (requests, results, sentinel errors), storageerr.go
//     and storageerr_*.go (what a user is told of a failing disk or a
//     damaged vc.db), events.go (Watch), owner.go (per-owner calls).
//   - The store's life: store.go (Open, Close, Rebuild, the lock order),
//     convcache.go (operations, the table of loaded conversations, the
//     LRU, loading one), settings.go (settings changed at run time),
//     readonly.go (a snapshot of a directory this process may not write),
//     shared.go (logs shared through PostgreSQL), check.go (vc-mcp check).
//   - State, derived and rebuildable: state.go (conv and vc.db's buckets),
//     turncodec.go and blocks.go (how turns and segments are stored),
//     decisions.go, tagvocab.go, rollupref.go, segmentref.go (the
//     derived-decisions log's records and their replay), recovery.go (a
//     log checked against the state at load: damage, torn tails,
//     quarantine), reconcile.go (the index and its watermarks caught up in
//     the background), dense.go (turn vectors), linecount.go (each turn's
//     line tokens, cached).
//   - The write path: normalize.go (a message validated and hashed),
//     ingest.go (dedup, the master log append, tags, the commit),
//     compact.go (segments and their summaries under token pressure),
//     rollups.go and hierarchy.go (topic summaries, Layer 2), turnsums.go
//     (per-message summaries), split.go (an over-broad tag split), aliases.go,
//     regenerate.go, importers.go, bundle.go and store_bundle.go (import and
//     export).
//   - The read path: recall.go (Recall), signals.go, ranking.go, listkind.go,
//     listnames.go (the named signals and their weights), board.go and
//     ranked.go (scores and candidates), assemble.go (the packer inside the
//     budget), hint.go (the topics hint), items.go, itemsapi.go and
//     itemselect.go (context items), requests.go (the request history's
//     records), truncref.go (references to what an answer cut), quote.go
//     (find_quote), paging.go (expand and collapse), turns.go, status.go,
//     view.go, usage.go, replace.go (summary replacement).
//   - Privacy and forgetting: privacy.go (secrets redacted on the way in),
//     scan.go (secrets already stored), forget.go (forget and redaction:
//     logs rewritten, state and histories scrubbed), ttl.go (per-tag
//     expiry).
//   - Files and names: ids.go (conversation ids and their file names),
//     writable_*.go.
//
// Subpackages hold what needs none of the above: masterlog, decisionlog
// and requestlog (the three logs' files), vcdb (vc.db as a file), tokens
// (cl100k counting), tagging, summarize, llm, scrub, markdown, modelctx,
// bench.
package memory
