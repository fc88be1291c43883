package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// wellFormed parses b completely and returns the root element name and the
// number of polylines.
func wellFormed(t *testing.T, b []byte) (root string, lines int) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return root, lines
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, b)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "polyline" {
				lines++
			}
		}
	}
}

func TestChartSVG(t *testing.T) {
	tests := []struct {
		name  string
		chart Chart
		lines int
	}{
		{"recall", Chart{Title: "Recall <&> budget", XLabel: "budget", YLabel: "%", LogX: true, YMax: 100,
			Series: []Series{{Name: "bm25 & co", X: []float64{1000, 2000, 4000}, Y: []float64{70, 75, 80}}, {Name: "vc-mcp", X: []float64{1000, 2000}, Y: []float64{80, 90}}}}, 2},
		{"latency", Chart{Title: "Latency", LogX: true, Series: []Series{{Name: "p50", X: []float64{1000, 10000, 100000}, Y: []float64{1.5, 3, 9}}}}, 1},
		{"log y with a zero", Chart{Title: "Latency", LogX: true, LogY: true, Series: []Series{{Name: "p99", X: []float64{1000, 10000, 100000}, Y: []float64{0.4, 0, 1200}}}}, 1},
		{"empty", Chart{Title: "nothing"}, 0},
		{"empty log", Chart{Title: "nothing", LogX: true, LogY: true}, 0},
		{"single point", Chart{Series: []Series{{Name: "one", X: []float64{5}, Y: []float64{0}}}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.chart.SVG()
			root, lines := wellFormed(t, b)
			if root != "svg" {
				t.Errorf("root element %q, want svg", root)
			}
			if lines != tt.lines {
				t.Errorf("%d polylines, want %d", lines, tt.lines)
			}
			if strings.Contains(string(b), "NaN") || strings.Contains(string(b), "Inf") {
				t.Errorf("SVG has NaN/Inf coordinates:\n%s", b)
			}
		})
	}
}
