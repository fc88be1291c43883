package proxy

import (
	"fmt"
	"math"
	"strings"
	"unicode"
)

// narrowTools applies the tool policy (seed 002 at the request level):
// "always" tools are forwarded; "agent" tools only when the new message is
// similar enough to their name and description. Every decision is
// recorded with its reason.
func (s *Server) narrowTools(p *plan, query string) []ToolDecision {
	pol := s.opts.Tools
	tools := p.d.tools(p.body)
	if len(tools) == 0 {
		return nil
	}
	q := words(query)
	out := make([]ToolDecision, 0, len(tools))
	keep := map[string]bool{}
	for _, t := range tools {
		mode := pol.Include[t.Name]
		if mode == "" {
			mode = pol.Default
		}
		if mode == "" {
			mode = "always"
		}
		dec := ToolDecision{Name: t.Name, Mode: mode}
		if mode == "always" {
			dec.Kept, dec.Why = true, "include: always"
		} else {
			dec.Score = similarity(q, words(t.Name+" "+t.Description))
			dec.Kept = dec.Score >= pol.Threshold
			cmp := "below"
			if dec.Kept {
				cmp = "at or above"
			}
			dec.Why = fmt.Sprintf("include: agent; similarity %.2f %s threshold %.2f", dec.Score, cmp, pol.Threshold)
		}
		keep[t.Name] = dec.Kept
		out = append(out, dec)
	}
	p.d.keepTools(p.body, func(name string) bool { return keep[name] })
	return out
}

// words splits text into lowercase words, names split at _ - . and case
// changes (read_file -> read, file).
func words(s string) map[string]bool {
	out := map[string]bool{}
	var cur []rune
	flush := func() {
		if len(cur) > 1 {
			out[string(cur)] = true
		}
		cur = cur[:0]
	}
	prevLower := false
	for _, r := range s {
		switch {
		case unicode.IsUpper(r) && prevLower:
			flush()
			cur = append(cur, unicode.ToLower(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, unicode.ToLower(r))
		default:
			flush()
		}
		prevLower = unicode.IsLower(r)
	}
	flush()
	for w := range out {
		if stop[w] {
			delete(out, w)
		}
	}
	return out
}

var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("the a an and or of to in on for with is are be it this that what how can you me my i we our your do does please use from by at as") {
		m[w] = true
	}
	return m
}()

// similarity is the cosine of two word sets.
func similarity(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return float64(n) / math.Sqrt(float64(len(a))*float64(len(b)))
}
