package memory

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestBoardMatchesMap scores random keys over three conversations on a
// board and in a map, and checks that every score, the set of scored keys
// and every top-n agree with a plain sort of the map. The cases run in
// turn, each on pages the one before released.
func TestBoardMatchesMap(t *testing.T) {
	convs := []*conv{{id: "b"}, {id: "a"}, {id: "c"}}
	for _, tc := range []struct {
		name  string
		keys  int
		maxSq int
		adds  int
		convs int  // how many of the three conversations are scored
		neg   bool // scores below zero too
	}{
		{"empty", 0, 1, 0, 3, false},
		{"one page", 20, 100, 200, 3, false},
		{"page edges", 300, 3 * boardPage, 2000, 3, false},
		{"sparse and far", 500, 200000, 1500, 3, false},
		{"ties", 50, 10, 400, 3, false}, // few distinct seqs: equal scores happen
		// One conversation and enough turns: ranked by radix sort.
		{"one conversation", 3000, 5000, 6000, 1, false},
		{"one conversation, ties and signs", 2000, 2500, 5000, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.keys), uint64(tc.adds)))
			b := newBoard(0)
			m := map[rkey]float64{}
			for range tc.adds {
				k := rkey{convs[rng.IntN(tc.convs)], rng.IntN(tc.maxSq)}
				d := float64(rng.IntN(4)) / 2 // 0, 0.5, 1, 1.5: ties and zeros
				if tc.neg {
					d = float64(rng.IntN(7)-3) / 2 // -1.5 .. 1.5
					if d == 0 && rng.IntN(2) == 0 {
						d = math.Copysign(0, -1)
					}
				}
				b.add(k, d)
				m[k] += d
			}
			if b.len() != len(m) {
				t.Fatalf("%d keys on the board, %d in the map", b.len(), len(m))
			}
			for k, v := range m {
				if got, ok := b.get(k); !ok || got != v {
					t.Fatalf("%s/%d: board %v (%v), map %v", k.c.id, k.seq, got, ok, v)
				}
			}
			if _, ok := b.get(rkey{convs[0], tc.maxSq + 5000}); ok {
				t.Fatal("an unscored key has a score")
			}
			want := make([]rkey, 0, len(m))
			for k := range m {
				want = append(want, k)
			}
			slices.SortFunc(want, func(x, y rkey) int {
				if m[x] != m[y] {
					return cmp.Compare(m[y], m[x])
				}
				if x.seq != y.seq {
					return cmp.Compare(y.seq, x.seq)
				}
				return strings.Compare(x.c.id, y.c.id)
			})
			if got := b.ranked(); !slices.Equal(got, want) {
				t.Fatalf("ranked differs from the map's sort")
			}
			for _, n := range []int{0, 1, 5, len(want) / 5, len(want)} {
				got := b.top(n)
				if !slices.Equal(got, want[:min(n, len(want))]) {
					t.Fatalf("top(%d) differs from the first %d of the map's sort", n, n)
				}
			}
			// Its pages go back to the pool zeroed: the next case's board
			// (made from them) must still agree with its map.
			b.release()
		})
	}
}

func BenchmarkBoardVsMap(b *testing.B) {
	c := &conv{id: "x"}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]rkey, 8000)
	for i := range keys {
		keys[i] = rkey{c, rng.IntN(10000)}
	}
	b.Run("map", func(b *testing.B) {
		for range b.N {
			m := make(map[rkey]float64, len(keys))
			for _, k := range keys {
				m[k] += 1
			}
			for _, k := range keys {
				_ = m[rkey{c, k.seq + 1}]
			}
		}
	})
	b.Run("board", func(b *testing.B) {
		for range b.N {
			bd := newBoard(len(keys))
			for _, k := range keys {
				bd.add(k, 1)
			}
			for _, k := range keys {
				_ = bd.score(rkey{c, k.seq + 1})
			}
		}
	})
}
