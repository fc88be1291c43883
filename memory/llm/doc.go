// Package llm gives vc-mcp model-backed tagging and summaries on top of the
// deterministic ones in memory/tagging and memory/summarize.
//
// A Completer sends one request to one model. Three kinds exist: OpenAI
// (any OpenAI-compatible chat completions server: OpenAI, Ollama, LM Studio,
// vLLM), Anthropic (the Messages API), and MCP sampling (package mcp, which
// asks the connected client's own model). The HTTP ones retry 429 and 5xx
// answers with exponential backoff and jitter, honouring Retry-After, and
// bound each attempt with a timeout.
//
// A Client wraps a Completer with bounded concurrency and usage accounting:
// each call's tokens and estimated cost are appended to llm-usage.jsonl in
// the data directory, per conversation (see WithConversation), and
// CostReport prints them.
//
// Tagger and Summarizer render prompts from package prompts, send them
// through a Client, and parse the answer robustly (code fences, <think>
// blocks, prose around the JSON, trailing commas) before validating it
// strictly (kebab-case tags, 1..5 tags, the primary among them, summaries
// that only ever add tags). Any failure, from the network to a bad answer,
// falls back to the deterministic implementation handed to the constructor;
// the failure is counted and shown by Ready, never returned to the caller.
// After repeated failures the model is skipped for a growing cool-down, so a
// dead provider does not slow every turn down.
//
// MapOrdered runs a bounded, order-preserving fan-out, so compaction can
// summarise segments concurrently without holding any store lock.
package llm
