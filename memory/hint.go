package memory

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// HintStyleFor resolves HintAuto from the client's name: its model name
// (the proxy's request model) or its MCP clientInfo name. The rule, in order:
//
//  1. a parameter count in the name ("llama3.2:3b", "qwen2.5-72b"): below
//     30B is short, 30B and up is dashboard;
//  2. a small-model word (mini, nano, haiku, small, tiny, lite, phi, gemma,
//     ollama) is short;
//  3. a frontier model or a host that runs one (claude, gpt-4, gpt-5, o1,
//     o3, o4, gemini, opus, sonnet, deepseek, grok, cursor, copilot, codex,
//     windsurf) is dashboard;
//  4. anything else, and no name at all, is short: a list costs fewer
//     tokens and never confuses a model.
//
// A style other than HintAuto is returned as it is.
func HintStyleFor(style HintStyle, client string) HintStyle {
	if style != HintAuto && style != "" {
		return style
	}
	name := strings.ToLower(client)
	if m := paramCount.FindStringSubmatch(name); m != nil {
		if b, err := strconv.ParseFloat(m[1], 64); err == nil {
			if b < 30 {
				return HintShort
			}
			return HintDashboard
		}
	}
	words := strings.FieldsFunc(name, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
	for _, w := range words {
		if smallWords[w] {
			return HintShort
		}
	}
	for _, w := range words {
		if strongWords[w] {
			return HintDashboard
		}
	}
	for _, s := range strongPrefixes {
		if strings.Contains(name, s) {
			return HintDashboard
		}
	}
	return HintShort
}

var (
	paramCount  = regexp.MustCompile(`(?:^|[^a-z0-9.])(?:\d+x)?(\d+(?:\.\d+)?)b(?:$|[^a-z0-9])`)
	smallWords  = map[string]bool{"mini": true, "nano": true, "haiku": true, "small": true, "tiny": true, "lite": true, "phi": true, "gemma": true, "ollama": true}
	strongWords = map[string]bool{"claude": true, "o1": true, "o3": true, "o4": true, "gemini": true, "opus": true, "sonnet": true,
		"deepseek": true, "grok": true, "cursor": true, "copilot": true, "codex": true, "windsurf": true}
	strongPrefixes = []string{"gpt-4", "gpt-5", "gpt4", "gpt5", "claude"}
)

// hintInput is what the topics hint is sized and styled by.
type hintInput struct {
	style  HintStyle // resolved: HintShort or HintDashboard
	room   int       // tokens the hint may take
	budget int       // the recall's whole budget
	used   int       // tokens the rest of the recall takes
	multi  bool      // several conversations (scope all)
}

// hintTopic is one topic of the hint.
type hintTopic struct {
	c   *conv
	tag string
	n   int
}

// topicHint names the biggest topics on record, so the model knows what it
// can expand: a list with a one-line description each (short), or a budget
// dashboard with tokens per topic, depth and the budget left.
func (s *Store) topicHint(convs []*conv, in hintInput) string {
	var all []hintTopic
	for _, c := range convs {
		for tag, n := range c.vocab {
			if tag != tagging.General && n > 1 && !c.spreadTag(tag) { // a speaker's name, "chatting": not a topic
				all = append(all, hintTopic{c, tag, n})
			}
		}
	}
	if len(all) == 0 {
		return ""
	}
	prio := func(tag string) int {
		if s.opts.TagPriority == nil {
			return 0
		}
		return s.opts.TagPriority(tag)
	}
	sort.Slice(all, func(i, j int) bool {
		if pi, pj := prio(all[i].tag), prio(all[j].tag); pi != pj {
			return pi > pj
		}
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		if all[i].tag != all[j].tag {
			return all[i].tag < all[j].tag
		}
		return all[i].c.id < all[j].c.id
	})
	var b strings.Builder
	if in.style == HintDashboard {
		s.dashboardHead(&b, convs, in)
	} else {
		b.WriteString("## Topics on record (expand_topic to page one in)\n")
	}
	// Estimated; the assembly is counted exactly at the end.
	used := estimateTokens(b.String())
	named, most := 0, 40
	if in.style == HintShort {
		most = 12 // a short list for a small model
	}
	for _, t := range all {
		if named >= most {
			break
		}
		line := s.hintLine(t, in)
		n := estimateTokens(line)
		if used+n > in.room {
			if named == 0 && in.style == HintDashboard {
				// Not even one row fits: the short form might.
				in.style = HintShort
				return s.topicHint(convs, in)
			}
			break
		}
		used += n
		b.WriteString(line)
		named++
	}
	if named == 0 {
		return ""
	}
	return strings.TrimRight(b.String(), "\n")
}

// dashboardHead writes the dashboard's budget lines and column header.
func (s *Store) dashboardHead(b *strings.Builder, convs []*conv, in hintInput) {
	b.WriteString("## Memory dashboard (expand_topic pages a topic in, collapse_topic frees budget)\n")
	fmt.Fprintf(b, "Recall budget: %d tokens, %d used by the context above, %d left.\n", in.budget, in.used, max(0, in.budget-in.used))
	if !in.multi && len(convs) == 1 {
		c := convs[0]
		set := s.set.get()
		fmt.Fprintf(b, "Conversation: %d turns, %d active of %d window tokens (%.0f%%); compaction at %.0f%%.\n",
			len(c.turns), c.active, s.opts.ContextWindow, 100*float64(c.active)/float64(s.opts.ContextWindow), 100*set.SoftThreshold)
	}
	b.WriteString("topic | turns | full tokens | summary tokens | depth | about\n")
}

// hintLine is one topic's line.
func (s *Store) hintLine(t hintTopic, in hintInput) string {
	name := t.tag
	if in.multi {
		name = t.c.id + "/" + t.tag
	}
	about := topicAbout(t.c, t.tag)
	if in.style == HintDashboard {
		ts := t.c.tagStatus(t.tag)
		if about == "" {
			about = "-"
		}
		return fmt.Sprintf("%s | %d | %d | %d | %s | %s\n", name, t.n, ts.FullTokens, ts.SummaryTokens, ts.Depth, about)
	}
	if about == "" {
		return fmt.Sprintf("- %s (%d turns)\n", name, t.n)
	}
	return fmt.Sprintf("- %s (%d turns): %s\n", name, t.n, about)
}

// hintWords bounds a topic's one-line description.
const hintWords = 14

// topicAbout is a topic's one-line description: its rollup's description,
// else the first sentence of its summary, else of its latest turn's
// segment summary; "" when nothing is summarised yet.
func topicAbout(c *conv, tag string) string {
	text := ""
	if ts, ok := c.tagSums[tag]; ok {
		text = ts.Description
		if strings.TrimSpace(text) == "" {
			text = ts.Summary
		}
	}
	if strings.TrimSpace(text) == "" {
		for i := len(c.segs) - 1; i >= 0; i-- {
			if contains(c.segs[i].Tags, tag) {
				text = c.segs[i].Summary
				break
			}
		}
	}
	text = strings.Join(strings.Fields(text), " ")
	if i := strings.IndexAny(text, ".!?"); i > 0 {
		text = text[:i]
	}
	w := strings.Fields(text)
	if len(w) > hintWords {
		return strings.Join(w[:hintWords], " ") + "..."
	}
	return strings.Join(w, " ")
}
