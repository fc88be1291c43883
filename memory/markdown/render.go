// Package markdown renders memory as a tree of Markdown files people can
// read, diff in git and open in an editor: one directory per conversation,
// one per tag inside it, a file per compacted segment (YAML frontmatter,
// summary, the turns verbatim), a topic file per tag and an index per
// conversation. The tree is a view: it is written from the store and never
// read back as truth (the master logs stay the source).
package markdown

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vc-mcp/vc-mcp/internal/files"
	"github.com/vc-mcp/vc-mcp/memory"
	"go.yaml.in/yaml/v3"
)

// Generator marks every file this package writes (in its frontmatter), so
// that the mirror only ever removes directories it wrote.
const Generator = "vc-mcp"

// File names inside a conversation's directory and a tag's directory.
const (
	IndexFile  = "index.md"
	ActiveFile = "active.md"
	TopicFile  = "topic.md"
)

// untaggedDir holds segments whose primary tag is empty.
const untaggedDir = "_untagged"

// SafeName maps a conversation id or tag to a directory name that is valid
// on every platform: letters, digits, '-' and '_' are kept; anything else
// becomes '_' and a short hash of the original is appended so that two
// names never collide. A name with upper-case letters gets the hash too
// ("Chat" and "chat" would share a directory on macOS and Windows), and
// so does a Windows device name ("con").
func SafeName(name string) string {
	if name == "" {
		return untaggedDir
	}
	var b strings.Builder
	changed := files.WindowsDevice(name)
	for _, r := range name {
		switch {
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r)
			changed = true
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
			changed = true
		}
	}
	if strings.HasPrefix(name, "_") {
		changed = true // "_untagged" and the like are ours
	}
	if looksHashed(name) {
		changed = true // "con-1143da2b" is where "con" goes
	}
	if !changed {
		return b.String()
	}
	sum := sha256.Sum256([]byte(name))
	return b.String() + "-" + hex.EncodeToString(sum[:4])
}

// looksHashed reports whether name ends as SafeName's changed names do,
// in "-" and 8 hex digits: such a name is changed too, so that it never
// stands for another's.
func looksHashed(name string) bool {
	i := len(name) - 9
	if i < 0 || name[i] != '-' {
		return false
	}
	for _, c := range name[i+1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Render returns a conversation's files, keyed by slash-separated paths
// relative to its directory (SafeName(v.ConversationID)). The output
// depends only on the view: rendering the same memory twice gives the same
// bytes.
func Render(v memory.ConversationView) map[string][]byte {
	files := map[string][]byte{}
	segDir := map[string]string{}
	for _, sg := range v.Segments {
		segDir[sg.ID] = SafeName(sg.Primary)
	}
	for _, sg := range v.Segments {
		files[segDir[sg.ID]+"/"+sg.ID+".md"] = renderSegment(v, sg)
	}
	for _, tv := range v.Tags {
		files[SafeName(tv.Tag)+"/"+TopicFile] = renderTopic(v, tv, segDir)
	}
	files[ActiveFile] = renderActive(v)
	files[IndexFile] = renderIndex(v)
	return files
}

// flow renders a string list on one line in the frontmatter.
type flow []string

func (f flow) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Tag: "!!seq"}
	for _, s := range f {
		var item yaml.Node
		if err := item.Encode(s); err != nil {
			return nil, err
		}
		n.Content = append(n.Content, &item)
	}
	return n, nil
}

// byteRange is [start, end) in the master log, on one line.
type byteRange struct {
	Turn       string
	Start, End int64
}

func (r byteRange) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Tag: "!!map"}
	add := func(k, v string, tag string) {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v})
	}
	if r.Turn != "" {
		add("turn", r.Turn, "!!str")
	}
	add("start", strconv.FormatInt(r.Start, 10), "!!int")
	add("end", strconv.FormatInt(r.End, 10), "!!int")
	return n, nil
}

type segmentFront struct {
	Generator      string      `yaml:"generator"`
	Conversation   string      `yaml:"conversation"`
	Segment        string      `yaml:"segment"`
	PrimaryTag     string      `yaml:"primary_tag"`
	Tags           flow        `yaml:"tags"`
	Turns          flow        `yaml:"turns"`
	Start          string      `yaml:"start"`
	End            string      `yaml:"end"`
	SummaryMethod  string      `yaml:"summary_method"`
	SummaryModel   string      `yaml:"summary_model,omitempty"`
	SummaryVersion string      `yaml:"summary_version,omitempty"`
	Log            string      `yaml:"log"`
	LogBytes       byteRange   `yaml:"log_bytes"`
	TurnBytes      []byteRange `yaml:"turn_bytes"`
}

type topicFront struct {
	Generator      string `yaml:"generator"`
	Conversation   string `yaml:"conversation"`
	Tag            string `yaml:"tag"`
	Description    string `yaml:"description,omitempty"`
	Turns          int    `yaml:"turns"`
	Segments       flow   `yaml:"segments"`
	SummaryMethod  string `yaml:"summary_method,omitempty"`
	SummaryModel   string `yaml:"summary_model,omitempty"`
	SummaryVersion string `yaml:"summary_version,omitempty"`
}

type activeFront struct {
	Generator    string      `yaml:"generator"`
	Conversation string      `yaml:"conversation"`
	Turns        flow        `yaml:"turns"`
	Log          string      `yaml:"log"`
	TurnBytes    []byteRange `yaml:"turn_bytes"`
}

type indexFront struct {
	Generator        string `yaml:"generator"`
	Conversation     string `yaml:"conversation"`
	Turns            int    `yaml:"turns"`
	CompactedThrough string `yaml:"compacted_through,omitempty"`
	Segments         int    `yaml:"segments"`
	Topics           int    `yaml:"topics"`
	FirstSeen        string `yaml:"first_seen,omitempty"`
	LastSeen         string `yaml:"last_seen,omitempty"`
	Log              string `yaml:"log"`
}

func frontmatter(b *strings.Builder, v any) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	err := enc.Encode(v)
	if err == nil {
		err = enc.Close()
	}
	out := buf.Bytes()
	if err != nil {
		// Only plain strings, ints and the marshalers above go in: an error
		// here is a programming error, so say so in the file rather than
		// drop it.
		out = []byte(fmt.Sprintf("error: %q\n", err.Error()))
	}
	b.WriteString("---\n")
	b.Write(out)
	b.WriteString("---\n\n")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func turnIDs(ts []memory.ViewTurn) flow {
	out := flow{}
	for _, t := range ts {
		out = append(out, t.TurnID)
	}
	return out
}

func turnBytes(ts []memory.ViewTurn) []byteRange {
	out := []byteRange{}
	for _, t := range ts {
		out = append(out, byteRange{Turn: t.TurnID, Start: t.LogStart, End: t.LogEnd})
	}
	return out
}

// oneLine folds text onto one line (descriptions in lists).
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// link is a Markdown link whose text cannot break out of its brackets.
func link(text, target string) string {
	r := strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`)
	return "[" + r.Replace(text) + "](" + target + ")"
}

func tagLinks(tags []string, prefix string) string {
	if len(tags) == 0 {
		return "none"
	}
	parts := make([]string, len(tags))
	for i, t := range tags {
		parts[i] = link(t, prefix+SafeName(t)+"/"+TopicFile)
	}
	return strings.Join(parts, ", ")
}

func renderSegment(v memory.ConversationView, sg memory.SegmentView) []byte {
	var b strings.Builder
	frontmatter(&b, segmentFront{
		Generator: Generator, Conversation: v.ConversationID, Segment: sg.ID, PrimaryTag: sg.Primary,
		Tags: flow(sg.Tags), Turns: turnIDs(sg.Turns), Start: stamp(sg.Start), End: stamp(sg.End),
		SummaryMethod: sg.SummaryMethod, SummaryModel: sg.SummaryModel, SummaryVersion: sg.Version,
		Log: v.LogFile, LogBytes: byteRange{Start: sg.LogStart, End: sg.LogEnd}, TurnBytes: turnBytes(sg.Turns),
	})
	primary := sg.Primary
	if primary == "" {
		primary = "untagged"
	}
	fmt.Fprintf(&b, "# %s: %s (%s to %s)\n\n", sg.ID, primary, sg.FirstTurn, sg.LastTurn)
	fmt.Fprintf(&b, "%s · Tags: %s · %s to %s\n\n", link("Conversation "+v.ConversationID, "../"+IndexFile),
		tagLinks(sg.Tags, "../"), stamp(sg.Start), stamp(sg.End))
	b.WriteString("## Summary\n\n")
	if s := strings.TrimSpace(sg.Summary); s != "" {
		b.WriteString(quote(s))
	} else {
		b.WriteString("_(no summary)_\n")
	}
	b.WriteString("\n## Turns\n")
	writeTurns(&b, sg.Turns)
	return []byte(b.String())
}

func renderTopic(v memory.ConversationView, tv memory.TagView, segDir map[string]string) []byte {
	var b strings.Builder
	frontmatter(&b, topicFront{
		Generator: Generator, Conversation: v.ConversationID, Tag: tv.Tag, Description: oneLine(tv.Description),
		Turns: tv.Turns, Segments: flow(tv.Segments), SummaryMethod: tv.SummaryMethod,
		SummaryModel: tv.SummaryModel, SummaryVersion: tv.Version,
	})
	fmt.Fprintf(&b, "# %s\n\n", tv.Tag)
	if d := oneLine(tv.Description); d != "" {
		b.WriteString(d + "\n\n")
	}
	fmt.Fprintf(&b, "%s · %s\n\n", link("Conversation "+v.ConversationID, "../"+IndexFile), count(tv.Turns, "turn"))
	b.WriteString("## Summary\n\n")
	if s := strings.TrimSpace(tv.Summary); s != "" {
		b.WriteString(quote(s))
	} else {
		b.WriteString("_(not summarised yet: its turns are in the " + link("active tail", "../"+ActiveFile) + ")_\n")
	}
	b.WriteString("\n## Segments\n\n")
	if len(tv.Segments) == 0 {
		b.WriteString("_(none yet)_\n")
	}
	segs := map[string]memory.SegmentView{}
	for _, sg := range v.Segments {
		segs[sg.ID] = sg
	}
	for _, id := range tv.Segments {
		sg := segs[id]
		role := ""
		if sg.Primary == tv.Tag {
			role = ", primary"
		}
		fmt.Fprintf(&b, "- %s: %s to %s, %s to %s%s\n", link(id, "../"+segDir[id]+"/"+id+".md"),
			sg.FirstTurn, sg.LastTurn, stamp(sg.Start), stamp(sg.End), role)
	}
	return []byte(b.String())
}

func renderActive(v memory.ConversationView) []byte {
	var b strings.Builder
	frontmatter(&b, activeFront{
		Generator: Generator, Conversation: v.ConversationID, Turns: turnIDs(v.Active),
		Log: v.LogFile, TurnBytes: turnBytes(v.Active),
	})
	fmt.Fprintf(&b, "# Active tail of %s\n\n", v.ConversationID)
	fmt.Fprintf(&b, "%s\n\n", link("Conversation "+v.ConversationID, IndexFile))
	if len(v.Active) == 0 {
		b.WriteString("Every turn is compacted into a segment.\n")
		return []byte(b.String())
	}
	fmt.Fprintf(&b, "Not compacted into segments yet (%s); the next compaction summarises them.\n\n## Turns\n", count(len(v.Active), "turn"))
	writeTurns(&b, v.Active)
	return []byte(b.String())
}

func renderIndex(v memory.ConversationView) []byte {
	var b strings.Builder
	front := indexFront{
		Generator: Generator, Conversation: v.ConversationID, Turns: v.Turns, Segments: len(v.Segments),
		Topics: len(v.Tags), FirstSeen: stamp(v.FirstSeen), LastSeen: stamp(v.LastSeen), Log: v.LogFile,
	}
	if v.CompactedThrough > 0 {
		front.CompactedThrough = "t" + strconv.Itoa(v.CompactedThrough)
	}
	frontmatter(&b, front)
	fmt.Fprintf(&b, "# Conversation %s\n\n", v.ConversationID)
	b.WriteString(count(v.Turns, "turn"))
	if v.Turns > 0 {
		fmt.Fprintf(&b, " from %s to %s", stamp(v.FirstSeen), stamp(v.LastSeen))
	}
	fmt.Fprintf(&b, ", kept verbatim in the master log `%s` (relative to the data directory).", v.LogFile)
	if v.CompactedThrough > 0 {
		fmt.Fprintf(&b, " Turns t1 to t%d are compacted into %s.", v.CompactedThrough, count(len(v.Segments), "segment"))
	}
	b.WriteString("\n\n")
	if len(v.Active) > 0 {
		fmt.Fprintf(&b, "%s (%s to %s) not compacted yet: see the %s.\n\n",
			count(len(v.Active), "turn"), v.Active[0].TurnID, v.Active[len(v.Active)-1].TurnID, link("active tail", ActiveFile))
	} else {
		fmt.Fprintf(&b, "No turn is waiting for compaction (%s).\n\n", link("active tail", ActiveFile))
	}
	b.WriteString("## Topics\n\n")
	if len(v.Tags) == 0 {
		b.WriteString("_(none yet)_\n")
	}
	for _, tv := range v.Tags {
		fmt.Fprintf(&b, "- %s", link(tv.Tag, SafeName(tv.Tag)+"/"+TopicFile))
		if d := oneLine(tv.Description); d != "" {
			b.WriteString(": " + d)
		}
		fmt.Fprintf(&b, " (%s, %s)\n", count(tv.Turns, "turn"), count(len(tv.Segments), "segment"))
	}
	return []byte(b.String())
}

// writeTurns writes each turn under its own heading, its text verbatim in a
// block quote (so that headings or fences inside a message stay inside it).
func writeTurns(b *strings.Builder, ts []memory.ViewTurn) {
	for _, t := range ts {
		fmt.Fprintf(b, "\n### %s · %s", t.TurnID, t.Role)
		if t.Speaker != "" {
			fmt.Fprintf(b, " · %s", oneLine(t.Speaker))
		}
		if ts := stamp(t.Timestamp); ts != "" {
			fmt.Fprintf(b, " · %s", ts)
		}
		b.WriteString("\n\n")
		var notes []string
		if len(t.Tags) > 0 {
			notes = append(notes, "Tags: "+strings.Join(t.Tags, ", "))
		}
		if t.ToolUse {
			notes = append(notes, "tool call")
		}
		if t.ToolResult {
			notes = append(notes, "tool result")
		}
		if len(notes) > 0 {
			b.WriteString("_" + strings.Join(notes, " · ") + "_\n\n")
		}
		if t.Text == "" {
			b.WriteString("_(no text)_\n")
			continue
		}
		b.WriteString(quote(t.Text))
	}
}

// quote writes text as a Markdown block quote, line for line.
func quote(text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.TrimRight(text, "\n")
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			b.WriteString(">\n")
			continue
		}
		b.WriteString("> " + line + "\n")
	}
	return b.String()
}

// sortedPaths lists a file map's paths in order.
func sortedPaths(files map[string][]byte) []string {
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// count says "1 turn", "3 turns".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
