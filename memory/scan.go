package memory

import (
	"context"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/vc-mcp/vc-mcp/memory/masterlog"
	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

// ScanRequest asks Scan to look for secrets already stored: in one
// conversation ("" = every conversation), optionally redacting them.
type ScanRequest struct {
	ConversationID string
	// AllConversations scans every conversation (ConversationID is then
	// ignored).
	AllConversations bool
	// Redact rewrites each turn holding a secret with the placeholder in
	// its place (the turn itself is kept), through the same atomic rewrite
	// and cascade as Forget.
	Redact bool
}

// ScanFinding is one rule's matches in one place. It never holds the
// secret.
type ScanFinding struct {
	ConversationID string `json:"conversation_id"`
	// TurnID is the turn holding the secret; Where is "turn", or
	// "summary" (a segment's summary, Segment set) or "topic" (a topic
	// summary, Tag set) recorded in the decisions log.
	TurnID  string `json:"turn_id,omitempty"`
	Where   string `json:"where"`
	Segment string `json:"segment,omitempty"`
	Tag     string `json:"tag,omitempty"`
	Rule    string `json:"rule"`
	Count   int    `json:"count"`
}

// ScanResult is what Scan found (and redacted).
type ScanResult struct {
	Conversations int            `json:"conversations"`
	TurnsScanned  int            `json:"turns_scanned"`
	Findings      []ScanFinding  `json:"findings"`
	ByRule        map[string]int `json:"by_rule"`
	// TurnsRedacted counts the turns rewritten (Redact).
	TurnsRedacted int `json:"turns_redacted"`
}

var placeholderName = regexp.MustCompile(`\[secret:([a-z0-9-]{1,40})\]`)

// secretsFound counts, by rule, the placeholders in after that are not in
// before: the secrets a scrubber replaced.
func secretsFound(before, after string) map[string]int {
	if before == after {
		return nil
	}
	out := map[string]int{}
	for _, m := range placeholderName.FindAllStringSubmatch(after, -1) {
		out[m[1]]++
	}
	for _, m := range placeholderName.FindAllStringSubmatch(before, -1) {
		out[m[1]]--
	}
	for k, v := range out {
		if v <= 0 {
			delete(out, k)
		}
	}
	return out
}

// Scan runs the current scrubber over stored master logs and decisions
// logs: messages stored before scrubbing existed, or before a rule was
// added. It reports findings by rule and turn, never the secret. With
// Redact, each turn holding a secret is rewritten with the placeholder in
// place of the secret, and everything derived from it follows.
func (s *Store) Scan(ctx context.Context, req ScanRequest) (ScanResult, error) {
	kind := opWrite
	if req.Redact {
		kind = opAppend // with shared logs: each conversation's lock, to the commit
	}
	ctx, end, err := s.begin(ctx, kind)
	if err != nil {
		return ScanResult{}, err
	}
	defer end()
	res := ScanResult{Findings: []ScanFinding{}, ByRule: map[string]int{}}
	var ids []string
	if req.AllConversations {
		if ids, err = s.conversationIDs(); err != nil {
			return res, err
		}
	} else {
		id, err := s.resolve(req.ConversationID)
		if err != nil {
			return res, err
		}
		ids = []string{id}
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		c, err := s.conversation(ctx, id, false)
		if err != nil {
			return res, err
		}
		if err := s.scanConv(ctx, c, req.Redact, &res); err != nil {
			return res, fmt.Errorf("scan %s: %w", id, err)
		}
		// With shared logs, each conversation's lock ends here: holding
		// every one to the end would keep the other processes out of all
		// of them, and a pool connection each.
		if err := s.commitShared(ctx); err != nil {
			return res, err
		}
		res.Conversations++
	}
	for _, f := range res.Findings {
		res.ByRule[f.Rule] += f.Count
	}
	return res, nil
}

func (s *Store) scanConv(ctx context.Context, c *conv, redact bool, res *ScanResult) error {
	sc := s.scrubber()
	c.compactMu.Lock()
	defer c.compactMu.Unlock()
	edits := map[int]*masterlog.Record{}
	drop := map[string]bool{} // topics made of a secret
	c.mu.RLock()
	for i := range c.turns {
		t := &c.turns[i]
		if t.Empty && !t.ToolUse && !t.ToolResult || t.Damaged || t.Forgotten {
			continue
		}
		rec, err := c.log.Read(t.Start, t.End)
		if err != nil {
			continue // damaged since it was verified: nothing to scan
		}
		res.TurnsScanned++
		content, _ := sc.Scrub(rec.Content)
		found := secretsFound(rec.Content, content)
		nr := rec
		nr.Content = content
		if len(rec.Raw) > 0 {
			raw, _ := sc.JSON(rec.Raw)
			addCounts(&found, secretsFound(string(rec.Raw), string(raw)), rec.Content != content)
			nr.Raw = raw
		}
		if len(rec.ToolCalls) > 0 {
			calls, _ := sc.JSON(rec.ToolCalls)
			addCounts(&found, secretsFound(string(rec.ToolCalls), string(calls)), false)
			nr.ToolCalls = calls
		}
		// The fields beside the text, as Ingest scrubs them now
		// (scrubMessages): the speaker's name, the tool call id (the same
		// placeholder as in the call it answers) and the message id (a
		// digest, so ids still tell messages apart).
		nr.Name, _ = sc.Scrub(rec.Name)
		addCounts(&found, secretsFound(rec.Name, nr.Name), false)
		nr.ToolCallID, _ = sc.Scrub(rec.ToolCallID)
		addCounts(&found, secretsFound(rec.ToolCallID, nr.ToolCallID), false)
		if id, n := sc.Scrub(rec.ID); n > 0 {
			addCounts(&found, secretsFound(rec.ID, id), false)
			nr.ID = redactedID(rec.ID)
		}
		if len(found) == 0 {
			continue
		}
		for _, rule := range sortedKeys(found) {
			res.Findings = append(res.Findings, ScanFinding{ConversationID: c.id, TurnID: turnID(t.Seq), Where: "turn", Rule: rule, Count: found[rule]})
		}
		in := turnInput{Role: rec.Role, Name: nr.Name, Text: nr.Content, Raw: nr.Raw, ToolCalls: nr.ToolCalls, ToolCallID: nr.ToolCallID}
		if rec.Timestamp != nil {
			in.Timestamp, in.HasTime = *rec.Timestamp, true
		}
		h := messageHash(in)
		nr.Hash, nr.CRC = hex.EncodeToString(h[:]), ""
		edits[t.Seq] = &nr
		for _, tag := range secretTopics(t.Tags, rec.Name+"\n"+rec.Content, nr.Name+"\n"+nr.Content) {
			drop[tag] = true
		}
	}
	var sums []ScanFinding
	for _, sg := range c.segs {
		out, _ := sc.Scrub(sg.Summary)
		for rule, n := range secretsFound(sg.Summary, out) {
			sums = append(sums, ScanFinding{ConversationID: c.id, Where: "summary", Segment: segmentName(sg.ID), Rule: rule, Count: n})
		}
	}
	for _, tag := range sortedKeys(c.tagSums) {
		ts := c.tagSums[tag]
		text := ts.Description + "\n" + ts.Summary
		out, _ := sc.Scrub(text)
		for rule, n := range secretsFound(text, out) {
			sums = append(sums, ScanFinding{ConversationID: c.id, Where: "topic", Tag: tag, Rule: rule, Count: n})
		}
	}
	c.mu.RUnlock()
	sort.SliceStable(sums, func(i, j int) bool { return sums[i].Rule < sums[j].Rule })
	res.Findings = append(res.Findings, sums...)
	if !redact || len(edits) == 0 {
		return nil
	}
	if _, err := s.rewriteTurns(ctx, c, edits, "redact", drop); err != nil {
		return err
	}
	res.TurnsRedacted += len(edits)
	s.log.Info("redacted secrets in stored turns", "conversation", c.id, "turns", len(edits))
	return nil
}

// addCounts adds b to *a; with skipSame, rules a already counts are left
// as they are (the raw content repeats the text's secrets).
func addCounts(a *map[string]int, b map[string]int, skipSame bool) {
	if len(b) == 0 {
		return
	}
	if *a == nil {
		*a = map[string]int{}
	}
	for k, v := range b {
		if skipSame && (*a)[k] > 0 {
			continue
		}
		(*a)[k] += v
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// String is a one-line summary, without any secret.
func (r ScanResult) String() string {
	if len(r.Findings) == 0 {
		return fmt.Sprintf("no secrets found (%d turns scanned in %d conversations)", r.TurnsScanned, r.Conversations)
	}
	var parts []string
	for _, rule := range sortedKeys(r.ByRule) {
		parts = append(parts, fmt.Sprintf("%s: %d", rule, r.ByRule[rule]))
	}
	return fmt.Sprintf("%d findings (%s); %d turns scanned in %d conversations", len(r.Findings), strings.Join(parts, ", "), r.TurnsScanned, r.Conversations)
}

// secretTopics returns the tags of tags that a turn's text held only
// where a secret was: the tagger lowercases words into topics ("ghp_x..."
// becomes the topic "ghp-x..."), so a key stored before scrubbing can be
// a topic, carried on by the turns after it. before and after are the
// text before and after redaction; a tag is looked for in both written as
// tags are (tagging.Slug).
func secretTopics(tags []string, before, after string) []string {
	if len(tags) == 0 {
		return nil
	}
	b, a := "-"+tagging.Slug(before)+"-", "-"+tagging.Slug(after)+"-"
	var out []string
	for _, t := range tags {
		if needle := "-" + t + "-"; strings.Contains(b, needle) && !strings.Contains(a, needle) {
			out = append(out, t)
		}
	}
	return out
}
