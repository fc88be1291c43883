package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
)

// Series is one line of a chart.
type Series struct {
	Name string
	X, Y []float64
}

// Chart is a line chart rendered as standalone SVG.
type Chart struct {
	Title, XLabel, YLabel string
	// LogX and LogY put an axis on a log10 scale; points <= 0 on a log
	// axis are left out.
	LogX, LogY bool
	// YMin and YMax fix the y range when YMax > YMin; otherwise it is 0..max.
	YMin, YMax float64
	Series     []Series
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

const (
	svgW, svgH             = 720, 440
	padL, padR, padT, padB = 70, 170, 50, 60
	plotW, plotH           = svgW - padL - padR, svgH - padT - padB
	yTicks                 = 5
)

// SVG renders the chart.
func (c Chart) SVG() []byte {
	var b bytes.Buffer
	xs, ys := c.ranges()
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", padL, esc(c.Title))
	// Axes.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padL, padT+plotH, padL+plotW, padT+plotH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padL, padT, padL, padT+plotH)
	for _, v := range c.yTickValues(ys) {
		y := c.py(v, ys)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", padL, y, padL+plotW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, y+4, esc(fmtNum(v)))
	}
	for _, v := range c.xTicks(xs) {
		x := c.px(v, xs)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>`+"\n", x, padT+plotH, x, padT+plotH+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, padT+plotH+20, esc(fmtNum(v)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padL+plotW/2, svgH-15, esc(c.XLabel))
	fmt.Fprintf(&b, `<text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">%s</text>`+"\n", padT+plotH/2, padT+plotH/2, esc(c.YLabel))
	for i, s := range c.Series {
		color := palette[i%len(palette)]
		var pts bytes.Buffer
		for k := range min(len(s.X), len(s.Y)) {
			if !c.plottable(s.X[k], s.Y[k]) {
				continue
			}
			fmt.Fprintf(&pts, "%.1f,%.1f ", c.px(s.X[k], xs), c.py(s.Y[k], ys))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, bytes.TrimSpace(pts.Bytes()))
		for k := range min(len(s.X), len(s.Y)) {
			if !c.plottable(s.X[k], s.Y[k]) {
				continue
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s at %s</title></circle>`+"\n",
				c.px(s.X[k], xs), c.py(s.Y[k], ys), color, esc(s.Name), esc(fmtPoint(s.X[k], s.Y[k])))
		}
		ly := padT + 10 + i*20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", padL+plotW+15, ly, padL+plotW+40, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", padL+plotW+46, ly+4, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func (c Chart) plottable(x, y float64) bool {
	return !(c.LogX && x <= 0) && !(c.LogY && y <= 0) && !math.IsNaN(x) && !math.IsNaN(y) && !math.IsInf(x, 0) && !math.IsInf(y, 0)
}

func (c Chart) yTickValues(ys [2]float64) []float64 {
	var out []float64
	if c.LogY {
		for e := math.Log10(ys[0]); e <= math.Log10(ys[1])+1e-9; e++ {
			out = append(out, math.Pow(10, math.Round(e)))
		}
		return out
	}
	for i := 0; i <= yTicks; i++ {
		out = append(out, ys[0]+(ys[1]-ys[0])*float64(i)/yTicks)
	}
	return out
}

func (c Chart) ranges() (xs, ys [2]float64) {
	xs = [2]float64{math.Inf(1), math.Inf(-1)}
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for k := range min(len(s.X), len(s.Y)) {
			if !c.plottable(s.X[k], s.Y[k]) {
				continue
			}
			xs[0], xs[1] = math.Min(xs[0], s.X[k]), math.Max(xs[1], s.X[k])
			ymin, ymax = math.Min(ymin, s.Y[k]), math.Max(ymax, s.Y[k])
		}
	}
	if c.LogY {
		if math.IsInf(ymax, -1) {
			return c.fixX(xs), [2]float64{1, 10}
		}
		lo, hi := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
		if hi <= lo {
			hi = lo + 1
		}
		return c.fixX(xs), [2]float64{math.Pow(10, lo), math.Pow(10, hi)}
	}
	xs = c.fixX(xs)
	if c.YMax > c.YMin {
		return xs, [2]float64{c.YMin, c.YMax}
	}
	if math.IsInf(ymax, -1) || ymax <= 0 {
		ymax = 1
	}
	return xs, [2]float64{0, niceCeil(ymax)}
}

func (c Chart) fixX(xs [2]float64) [2]float64 {
	if math.IsInf(xs[0], 1) {
		return [2]float64{1, 10}
	}
	if xs[0] == xs[1] {
		if c.LogX {
			return [2]float64{xs[0], xs[0] * 10}
		}
		return [2]float64{xs[0], xs[0] + 1}
	}
	return xs
}

func (c Chart) xTicks(xs [2]float64) []float64 {
	seen := map[float64]bool{}
	var out []float64
	for _, s := range c.Series {
		for k, x := range s.X {
			if k >= len(s.Y) || !c.plottable(x, s.Y[k]) || seen[x] {
				continue
			}
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func (c Chart) px(x float64, xs [2]float64) float64 {
	f := (x - xs[0]) / (xs[1] - xs[0])
	if c.LogX {
		f = (math.Log10(x) - math.Log10(xs[0])) / (math.Log10(xs[1]) - math.Log10(xs[0]))
	}
	return padL + f*plotW
}

func (c Chart) py(y float64, ys [2]float64) float64 {
	f := (y - ys[0]) / (ys[1] - ys[0])
	if c.LogY {
		f = (math.Log10(y) - math.Log10(ys[0])) / (math.Log10(ys[1]) - math.Log10(ys[0]))
	}
	return padT + plotH - f*plotH
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	switch {
	case v >= 1000 && v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

// fmtPoint labels a data point for its tooltip: "x: y" with y to 1 or 2 decimals.
func fmtPoint(x, y float64) string {
	prec := 1
	if math.Abs(y) < 10 {
		prec = 2
	}
	return fmtNum(x) + ": " + strconv.FormatFloat(y, 'f', prec, 64)
}

func esc(s string) string {
	var b bytes.Buffer
	if err := xml.EscapeText(&b, []byte(s)); err != nil {
		return ""
	}
	return b.String()
}

// RecallChart plots overall recall against budget, one line per method.
func (r *LoCoMoReport) RecallChart() Chart {
	c := Chart{Title: "LoCoMo-R evidence recall vs token budget", XLabel: "budget (cl100k tokens, log scale)",
		YLabel: "evidence recall (%)", LogX: true, YMin: 0, YMax: 100}
	for _, m := range r.Methods {
		s := Series{Name: m}
		for _, b := range r.Budgets {
			if res, ok := r.Result(m, b); ok {
				s.X = append(s.X, float64(b))
				s.Y = append(s.Y, res.Overall)
			}
		}
		c.Series = append(c.Series, s)
	}
	return c
}
