package memory

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// rankedList is a recall's candidates, best first as far as anyone reads
// them: the first sorted are in order, the rest (each ranked below all of
// them) in no order. A recall scores thousands of turns but reads a few
// hundred in order; the packer reads past them only for turns small enough
// for what is left, and sorts just those (see packer.pack).
type rankedList struct {
	list   []candidate
	sorted int
}

// rankedHead is how many candidates are sorted up front: more than topic
// summaries read (40), and than the turns a 2,000-token budget takes; a
// larger budget's packing goes on through the sorted tail it needs.
const rankedHead = 256

// candCmp orders candidates best first: by score, then the conversation
// whose id sorts first, then the later turn. It is a total order, so a
// subset sorted alone keeps the order it has in the whole.
func candCmp(a, b candidate) int {
	if a.score != b.score {
		if a.score > b.score {
			return -1
		}
		return 1
	}
	if a.c != b.c {
		return strings.Compare(a.c.id, b.c.id)
	}
	return cmp.Compare(b.seq, a.seq)
}

// rankCandidates sorts the best head of cs (all of it when it is small)
// and leaves the rest after it, unsorted.
func rankCandidates(cs []candidate, head int) rankedList {
	if len(cs) <= 2*head {
		slices.SortFunc(cs, candCmp)
		return rankedList{list: cs, sorted: len(cs)}
	}
	// cs[:head] as a heap with the worst of the best at the root; a later
	// candidate that beats the root takes its place.
	worse := func(i, j int) bool { return candCmp(cs[i], cs[j]) > 0 }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= head {
				return
			}
			m := l
			if r := l + 1; r < head && worse(r, l) {
				m = r
			}
			if !worse(m, i) {
				return
			}
			cs[i], cs[m] = cs[m], cs[i]
			i = m
		}
	}
	for i := head/2 - 1; i >= 0; i-- {
		down(i)
	}
	for i := head; i < len(cs); i++ {
		if candCmp(cs[i], cs[0]) < 0 {
			cs[0], cs[i] = cs[i], cs[0]
			down(0)
		}
	}
	slices.SortFunc(cs[:head], candCmp)
	return rankedList{list: cs, sorted: head}
}

// len is the number of candidates.
func (r rankedList) len() int { return len(r.list) }

// top returns up to n of the best candidates, in order (n <= rankedHead).
func (r rankedList) top(n int) []candidate {
	return r.list[:min(n, r.sorted)]
}

// filter keeps the candidates keep accepts, in their order.
func (r rankedList) filter(keep func(candidate) bool) rankedList {
	out := rankedList{list: make([]candidate, 0, len(r.list))}
	for i, cd := range r.list {
		if keep(cd) {
			out.list = append(out.list, cd)
			if i < r.sorted {
				out.sorted++
			}
		}
	}
	if r.sorted == len(r.list) {
		out.sorted = len(out.list)
	} else if out.sorted < rankedHead {
		// Much of the head was left out: sort a new one.
		return rankCandidates(out.list, rankedHead)
	}
	return out
}

// freeCandidates recycles the candidate lists of recalls (a recall's is a
// hundred KB or so) between them.
var freeCandidates struct {
	sync.Mutex
	lists [][]candidate
}

// newCandidates returns an empty candidate list with room for n.
func newCandidates(n int) []candidate {
	freeCandidates.Lock()
	defer freeCandidates.Unlock()
	for i := len(freeCandidates.lists) - 1; i >= 0; i-- {
		if l := freeCandidates.lists[i]; cap(l) >= n {
			freeCandidates.lists = slices.Delete(freeCandidates.lists, i, i+1)
			return l[:0]
		}
	}
	// Rounded up to a power of two, so that a list fits the next recalls
	// of about the same size: their sizes vary with the query.
	return make([]candidate, 0, 1<<bits.Len(uint(max(n, 64)-1)))
}

// release gives r's list back for another recall; r must not be used
// after.
func (r rankedList) release() {
	if cap(r.list) == 0 {
		return
	}
	clear(r.list) // no pointers kept alive from the free list
	freeCandidates.Lock()
	defer freeCandidates.Unlock()
	if len(freeCandidates.lists) < 4 {
		freeCandidates.lists = append(freeCandidates.lists, r.list[:0])
	}
}
