// Package share lets every host on the machine use one memory: the first
// `vc-mcp serve` started on a data directory launches a background owner
// process that opens the store once and serves MCP on a local socket, one
// MCP session per connection; each stdio host's `vc-mcp serve` is a bridge
// that forwards its stdio to that socket (gopls's -remote=auto shape). The
// bbolt lock of the data directory decides which process owns it.
//
// Package share is an adapter: it imports mcp-go and the project's mcp
// package; memory never imports it.
package share
