// Package index is the full-text index of vc-mcp: one document per
// conversation turn, segment summary or tag summary, searched with BM25.
//
// It wraps Bleve (scorch index type) behind a small API: Open, Add,
// Delete, Search, Count, Close and Analyze. No Bleve type crosses the
// package boundary, so the engine can be swapped without touching callers.
//
// # Fields
//
// Doc.Text is analysed with Bleve's English analyzer (Unicode word
// segmentation, possessive 's stripped, lowercase, stop words removed,
// Porter stemming); Analyze exposes the same pipeline. Conversation, Kind
// and Speaker are keywords matched exactly (Speaker lowercased on both
// sides); nothing else is indexed that no query filters on (no role, no
// tags). Nothing but the document ID is stored: a Hit is the ID the
// caller chose, and its score. No time is indexed (a
// datetime costs 16 prefix terms a document); Query.IDs filters by document
// instead, for a caller that knows which documents fall in a time range. The
// text itself is not stored (the caller holds it, a turn's in its master
// log): a highlighted search returns the matches' byte spans, and
// Fragments cuts excerpts from the caller's copy of the text. Nor are term
// vectors (positions and offsets, 40% of an index of conversation turns):
// phrases and highlighting ask the caller for a document's text
// (Query.DocText) and analyse it again, which gives the hits, scores and
// spans Bleve gave from term vectors (phrase.go).
//
// # Queries
//
// Query.Text and Query.Phrases are user or model text and are never parsed
// as query syntax: Text is analysed into terms that are OR'ed and ranked
// by Bleve's "bm25" scoring model; each phrase is an exact phrase match
// that adds to the score (boost 2), or is required with RequirePhrases.
// Bleve scores each term with BM25 (k1=1.2, b=0.75) times its query weight
// (boost x idf x query norm) and multiplies an OR by the share of its
// clauses that matched, so documents matching more query terms rank
// higher than plain BM25 would put them; scores are for ranking only.
// Conversation, kind, speaker and document-id filters select documents
// without changing scores. Equal scores are ordered by ID, so two indexes built
// from the same documents answer alike.
//
// # Writes and durability
//
// Every Bleve batch becomes an index segment with a large fixed cost, so
// Add and Delete buffer changes and write them as one batch when
// Options.BatchSize changes are pending, Options.FlushDelay after the
// first one, or before any Search or Count: readers always see every
// completed Add. Batches are written with scorch's unsafe_batch, so they
// are searchable before they reach disk. Together this makes one-document
// Adds about as cheap per document as bulk ones (see BenchmarkAdd).
//
// The index is derived data: callers rebuild it from their own log. Close
// persists everything before returning. An index that was not closed (the
// process crashed) may miss recent Adds, so Open reports it as ErrCorrupt,
// like damaged or unreadable files and indexes of another schema version:
// the caller deletes the directory and rebuilds. ErrLocked means another
// process has the index open; do not delete it then.
//
// All methods are safe for concurrent use.
package index
