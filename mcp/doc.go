// Package mcp is vc-mcp's protocol adapter: it publishes the memory as MCP
// tools, resources and prompts with github.com/mark3labs/mcp-go.
//
// It owns the argument structs and their JSON schemas (snapshot-tested under
// testdata), decodes and validates every request itself so that a model gets
// a clear, actionable message instead of a Go-formatted one, and maps
// memory's sentinel errors to tool results with isError. It knows memory's
// API and nothing of bbolt or Bleve. NewServer builds the server; ServeStdio
// and NewHTTPHandler carry it over stdio or over Streamable HTTP and legacy
// SSE with an Origin check. Completions, resource subscriptions (fed by
// memory's Watch) and turn links are in completions.go, subscriptions.go and
// turns.go.
package mcp
