// Package tokens counts cl100k_base tokens, as OpenAI's tiktoken counts
// them (text that looks like a special token, "<|endoftext|>", counts as
// ordinary text): every token budget in vc-mcp is measured with it, and so
// are the benchmarks' figures. It holds the counter (Counter: Count,
// CountChunks, Truncate) and a hand-written pre-tokenizer and byte-pair
// encoder (cl100k.go) that give tiktoken-go's tokens several times faster.
// It imports no package of the project.
//
// # Nothing is fetched
//
// The BPE ranks come from tiktoken-go-loader's offline loader, which
// serves them from tables embedded in the binary; tiktoken-go's own
// encoding, when it is made, gets the same ranks from this package. No
// count ever makes a network request, and none is needed to start.
//
// # Loading
//
// Loading the ranks and the decode table that Truncate uses takes tens of
// milliseconds, so Cl100k starts it in the background (package memory
// calls it when a store opens) and the first count waits for it: an MCP
// handshake does not. The counter is process-wide: every store shares it.
// tiktoken-go's whole encoding, which serves only text that is not valid
// UTF-8 (it reads invalid bytes as U+FFFD), costs more than the ranks and
// is made the first time such text is counted.
//
// If the embedded tables failed to load (they do not), counts fall back
// to bytes, an upper bound, so budgets still hold; Err says so, for a
// caller that needs exact counts.
//
// # Exactness
//
// The fast encoder's pieces and tokens are tiktoken-go's for all valid
// UTF-8: TestCl100kParity checks it on hand-picked edge cases, every
// string of the LoCoMo dev split, random strings and a sweep of the code
// space; TestTruncateMatchesTiktoken and TestCountChunksExact do the same
// for Truncate and CountChunks. BenchmarkCountTokens compares the two
// encoders' speed, BenchmarkCl100kLoad what a process does before its
// first count.
package tokens
