// Package bench measures vc-mcp's memory: how much of the evidence a question
// needs comes back within a token budget (LoCoMo-R), beside baselines computed
// in the same run, and what ingest, recall and find_quote cost as a
// conversation grows.
//
// The LoCoMo-R measurement follows shared/bench/locomo/README.md to the
// letter: one fresh store per conversation, sessions ingested through
// memory.Store.Ingest exactly as a client would send them, every question
// asked read-only through memory.Store.Recall, evidence normalised, and a gold
// turn counted as recalled when its content appears verbatim in the returned
// context after lowercasing and collapsing whitespace. The baselines
// (truncation, BM25 over raw turns and, when an Embedder is given, dense and
// hybrid retrieval) see the same turns and the same budgets.
//
// The scale measurement drives the same Store with a deterministic synthetic
// conversation (Generate) at growing sizes. Plots are hand-written SVG.
package bench
