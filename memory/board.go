package memory

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// board holds one recall's scores: a score per scored turn, read and
// written by sequence number in pages of boardPage turns, allocated when a
// conversation's page is first scored, so memory follows the turns scored
// (a few thousand), not the turns stored, even over many conversations.
// The scored turns are kept in the order they were first scored. It
// replaces a map keyed by (conversation, sequence): recall writes and
// reads tens of thousands of scores, and hashing each was a fifth of it.
type board struct {
	convs map[*conv][]*boardPageOf
	keys  []rkey
	// The last conversation looked up: recall is mostly over one.
	last      *conv
	lastPages []*boardPageOf
	scratch   []boardEntry // top's, kept with the board
}

// boardEntry is a scored turn, as top sorts them.
type boardEntry struct {
	k rkey
	v float64
}

const boardShift = 7
const boardPage = 1 << boardShift

type boardPageOf struct {
	v  [boardPage]float64
	in [boardPage]bool
}

// freePages recycles pages between recalls (a recall fills a few hundred
// KB of them); a page is zeroed before it goes back. It is a plain free
// list, not a sync.Pool: a pool is emptied by every other garbage
// collection, and a recall makes garbage enough to run one every few
// recalls, so pages came back from the pool rarely. Up to maxFreePages
// (about 4.5 MB) are kept.
var freePages struct {
	sync.Mutex
	pages  []*boardPageOf
	boards []*board
}

const maxFreePages = 4096

func getPage() *boardPageOf {
	freePages.Lock()
	defer freePages.Unlock()
	if n := len(freePages.pages); n > 0 {
		pg := freePages.pages[n-1]
		freePages.pages = freePages.pages[:n-1]
		return pg
	}
	return new(boardPageOf)
}

// release returns b and its pages to the free lists; b must not be used
// after.
func (b *board) release() {
	for _, ps := range b.convs {
		for _, pg := range ps {
			if pg != nil {
				*pg = boardPageOf{}
			}
		}
	}
	freePages.Lock()
	for _, ps := range b.convs {
		for _, pg := range ps {
			if pg != nil && len(freePages.pages) < maxFreePages {
				freePages.pages = append(freePages.pages, pg)
			}
		}
	}
	clear(b.convs)
	b.keys, b.last, b.lastPages = b.keys[:0], nil, nil
	if len(freePages.boards) < maxFreeBoards {
		freePages.boards = append(freePages.boards, b)
	}
	freePages.Unlock()
}

// maxFreeBoards is how many released boards are kept (a recall uses six,
// at most four at once), with their key lists and page tables.
const maxFreeBoards = 16

// newBoard returns an empty board with room for n scored turns.
func newBoard(n int) *board {
	freePages.Lock()
	var b *board
	if k := len(freePages.boards); k > 0 {
		b = freePages.boards[k-1]
		freePages.boards = freePages.boards[:k-1]
	}
	freePages.Unlock()
	if b == nil {
		return &board{convs: make(map[*conv][]*boardPageOf, 1), keys: make([]rkey, 0, n)}
	}
	if cap(b.keys) < n {
		b.keys = make([]rkey, 0, n)
	}
	return b
}

// pages returns c's page table, grown to hold seq when grow is set. The
// last conversation's table is kept at hand, and written back only when it
// changes: most calls are for the same conversation, and a pointer write
// costs a write barrier while the collector runs.
func (b *board) pages(c *conv, seq int, grow bool) []*boardPageOf {
	ps := b.lastPages
	if c != b.last {
		ps = b.convs[c]
		b.last, b.lastPages = c, ps
	}
	if p := seq >> boardShift; p >= len(ps) && grow {
		ps = append(ps, make([]*boardPageOf, p+1-len(ps))...)
		b.convs[c], b.lastPages = ps, ps
	}
	return ps
}

// get returns k's score and whether k has one.
func (b *board) get(k rkey) (float64, bool) {
	if k.seq < 0 {
		return 0, false
	}
	ps := b.pages(k.c, k.seq, false)
	p := k.seq >> boardShift
	if p >= len(ps) || ps[p] == nil {
		return 0, false
	}
	i := k.seq & (boardPage - 1)
	return ps[p].v[i], ps[p].in[i]
}

// slot returns k's score cell, making it (at 0) if k has none.
func (b *board) slot(k rkey) *float64 {
	ps := b.pages(k.c, k.seq, true)
	p := k.seq >> boardShift
	pg := ps[p]
	if pg == nil {
		pg = getPage()
		ps[p] = pg
	}
	i := k.seq & (boardPage - 1)
	if !pg.in[i] {
		pg.in[i] = true
		b.keys = append(b.keys, k)
	}
	return &pg.v[i]
}

// add adds d to k's score.
func (b *board) add(k rkey, d float64) { *b.slot(k) += d }

// score returns k's score, 0 if it has none.
func (b *board) score(k rkey) float64 {
	v, _ := b.get(k)
	return v
}

// len is the number of scored turns.
func (b *board) len() int { return len(b.keys) }

// ranked returns the scored turns, best first; ties go to the later turn,
// then to the conversation whose id sorts first.
func (b *board) ranked() []rkey {
	return b.top(len(b.keys))
}

// top returns the n best scored turns, best first (as ranked), without
// sorting the rest.
func (b *board) top(n int) []rkey {
	es := slices.Grow(b.scratch[:0], len(b.keys))[:len(b.keys)]
	b.scratch = es
	for i, k := range b.keys {
		es[i] = boardEntry{k, b.score(k)}
	}
	byScore := func(a, b boardEntry) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		if a.k.seq != b.k.seq {
			return cmp.Compare(b.k.seq, a.k.seq)
		}
		return strings.Compare(a.k.c.id, b.k.c.id)
	}
	n = min(n, len(es))
	if n <= 0 {
		return nil
	}
	if n < len(es)/4 {
		// Keep the n best in a sorted prefix: one pass, a shift per
		// entry that beats the current n-th.
		best := es[:0:0]
		for _, e := range es {
			if len(best) == n && byScore(e, best[n-1]) >= 0 {
				continue
			}
			at, _ := slices.BinarySearchFunc(best, e, byScore)
			if len(best) < n {
				best = slices.Insert(best, at, e)
			} else {
				copy(best[at+1:], best[at:n-1])
				best[at] = e
			}
		}
		es = best
	} else {
		slices.SortFunc(es, byScore)
		es = es[:n]
	}
	out := make([]rkey, len(es))
	for i := range es {
		out[i] = es[i].k
	}
	return out
}
