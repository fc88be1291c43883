// Package prompts holds the instructions vc-mcp sends to a language model,
// as text/template files embedded in the binary and rendered from typed data.
//
// There is one template per job: tagging a turn (Tag), summarising a segment
// of turns (Segment), rolling a tag's segment summaries up into one summary
// and a short description (Rollup), splitting an over-broad tag into compound
// sub-tags (Split), summarising one long turn so that the flow from the
// previous message to the next survives (TurnSummary), and writing the note
// that replaces the earlier part of a conversation in summary-replacement
// mode (Replace).
//
// Every template answers in a JSON shape the memory/llm package parses and
// validates, and every template comes in two modes: Detailed (the default,
// for capable models) and Simple (shorter instructions for small local
// models). Each rendered Prompt carries a Version that names the template,
// its revision and the mode; summaries record it so they can be regenerated
// when a template changes. Change a template's text, bump its revision.
//
// The golden files under testdata/ show exactly what a model receives;
// regenerate them with `go test ./prompts -update` and review the diff.
package prompts
