// Command vc-mcp is an MCP server that gives AI assistants an unbounded,
// inspectable conversation memory.
//
//	vc-mcp [serve] [flags]         serve MCP over stdio (or --http ADDR)
//	vc-mcp rebuild [flags]         recreate vc.db and the index from the master logs
//	vc-mcp check [flags]           verify the logs and vc.db without changing them
//	vc-mcp model ...               manage the local embedding model
//	vc-mcp bench ...               run the benchmarks
//	vc-mcp cost-report ...         report LLM usage and cost
//	vc-mcp version | help
//
// Settings come from flags > VC_* environment variables > a YAML config file
// > a preset > defaults; the README documents every key. This package only
// wires: the MCP surface is package mcp, the engine package memory.
package main
