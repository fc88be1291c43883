package bench

import (
	"slices"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory/tokens"
)

// packer packs lines into a token budget. It caches per-line counts, which
// every method reuses across questions and budgets.
type packer struct {
	counter *tokens.Counter
	lines   []string
	tokens  []int
	newline int
}

func newPacker(c *tokens.Counter, lines []string) *packer {
	p := &packer{counter: c, lines: lines, tokens: make([]int, len(lines)), newline: c.Count("\n")}
	for i, l := range lines {
		p.tokens[i] = c.Count(l)
	}
	return p
}

// firstFit walks order (indices into lines, best first) and takes every line
// that still fits in budget, skipping those that do not. When stopAtFirstMiss
// is set it stops at the first line that does not fit instead (a contiguous
// run, as truncation needs). The chosen lines are returned joined by
// newlines, in ascending index order (chronological for turns), and the
// result is verified with a real count so it always fits.
func (p *packer) firstFit(order []int, budget int, stopAtFirstMiss bool) string {
	var chosen []int
	used := 0
	for _, i := range order {
		cost := p.tokens[i]
		if len(chosen) > 0 {
			cost += p.newline
		}
		if used+cost > budget {
			if stopAtFirstMiss {
				break
			}
			continue
		}
		used += cost
		chosen = append(chosen, i)
	}
	for {
		text := p.join(chosen)
		if p.counter.Count(text) <= budget || len(chosen) == 0 {
			return text
		}
		// BPE counts are not strictly additive; drop the lowest-ranked line.
		chosen = chosen[:len(chosen)-1]
	}
}

func (p *packer) join(chosen []int) string {
	sorted := append([]int(nil), chosen...)
	slices.Sort(sorted)
	parts := make([]string, len(sorted))
	for k, i := range sorted {
		parts[k] = p.lines[i]
	}
	return strings.Join(parts, "\n")
}
