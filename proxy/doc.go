// Package proxy is an HTTP proxy between an LLM client (an OpenAI,
// Anthropic or Gemini SDK, Claude Code, curl) and its upstream API that
// gives the client memory without any change on its side.
//
// For each request it detects the API format, finds the conversation (a
// session marker it writes into every answer, or a fingerprint of the first
// user message), recalls what matters for the new message and injects it
// where the format keeps its system prompt, drops old turns about other
// topics (never splitting a tool call from its result, always keeping the
// recent turns), offers the model three paging tools that it answers from
// memory, forwards the request, and stores the exchange afterwards. If any
// of that fails, the request goes upstream exactly as the client sent it:
// the proxy never stands between a user and their model.
//
// The proxy is an adapter over memory; it needs only the small Memory
// interface below, which *memory.Store satisfies.
package proxy
