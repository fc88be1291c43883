package memory

import (
	"testing"

	"github.com/vc-mcp/vc-mcp/index"
)

func TestQueryTagsRelated(t *testing.T) {
	c := newConv("c")
	c.addTurn(turnMeta{Seq: 1, Tags: []string{"materialized-views"}, Related: []string{"caching", "feed"}})
	c.addTurn(turnMeta{Seq: 2, Tags: []string{"caching"}})
	c.addTurn(turnMeta{Seq: 3, Tags: []string{"dog-walks"}})
	tests := []struct {
		query string
		want  map[string]float64
	}{
		{"caching", map[string]float64{"caching": 1, "materialized-views": 0.5}},
		{"feed", map[string]float64{"materialized-views": 0.5}},
		{"materialized views and caching", map[string]float64{"materialized-views": 1, "caching": 1}},
		{"dog walks", map[string]float64{"dog-walks": 1}},
		{"planes", map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got := map[string]float64{}
			for _, qt := range c.queryTags(index.Analyze(tt.query)) {
				got[qt.tag] = qt.weight
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for tag, w := range tt.want {
				if got[tag] != w {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}
