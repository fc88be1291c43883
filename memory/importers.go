package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"time"
)

// ImportedConversation is one conversation read from another assistant's
// export, ready to ingest.
type ImportedConversation struct {
	// ID is the conversation id it is stored under: source, title slug and
	// the export's own id, stable across re-runs ("chatgpt:trip-to-kyoto-6743a1b2").
	ID       string
	Title    string
	Messages []Message
	// Problem, when set, says what of the conversation could not be read
	// (a thread whose parent is missing from the export): the messages
	// that could are in Messages, and an importer reports it.
	Problem string
}

// ImportResult says what Import did.
type ImportResult struct {
	Conversations int `json:"conversations"`
	Stored        int `json:"stored"`
	Duplicates    int `json:"duplicates"`
	Redacted      int `json:"redacted"`
}

// Import ingests conversations one after the other (each in batches of up
// to maxBatchMessages, through Ingest: scrubbed, idempotent on re-run).
// progress, if set, is called after each conversation.
func (s *Store) Import(ctx context.Context, convs []ImportedConversation, progress Progress) (ImportResult, error) {
	var res ImportResult
	for i, c := range convs {
		if len(c.Messages) == 0 { // nothing of it could be read (c.Problem)
			if progress != nil {
				progress(i+1, len(convs), c.ID)
			}
			continue
		}
		for lo := 0; lo < len(c.Messages); lo += maxBatchMessages {
			hi := min(len(c.Messages), lo+maxBatchMessages)
			r, err := s.Ingest(ctx, IngestRequest{ConversationID: c.ID, Messages: c.Messages[lo:hi]})
			if err != nil {
				return res, fmt.Errorf("import %s (%q), messages %d-%d: %w", c.ID, c.Title, lo+1, hi, err)
			}
			res.Stored += r.Stored
			res.Duplicates += r.Duplicates
			res.Redacted += r.Redacted
		}
		res.Conversations++
		if progress != nil {
			progress(i+1, len(convs), c.ID)
		}
	}
	return res, nil
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// importID is a stable conversation id: source, title slug, and the first
// characters of the export's id (so two chats with one title stay apart).
func importID(source, title, id string) string {
	// A secret in the title would name the conversation (its files, every
	// answer): its placeholder does instead.
	title = RedactSecrets(title)
	slug := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(title), "-"), "-")
	if len(slug) > 60 {
		slug = strings.TrimRight(slug[:60], "-")
	}
	short := slugRE.ReplaceAllString(strings.ToLower(id), "")
	if len(short) > 8 {
		short = short[:8]
	}
	parts := []string{}
	for _, p := range []string{slug, short} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		parts = []string{"untitled"}
	}
	return source + ":" + strings.Join(parts, "-")
}

func textMessage(role, text string, when time.Time) Message {
	b, _ := json.Marshal(text)
	m := Message{Role: role, Content: b}
	if !when.IsZero() {
		m.Timestamp = when.UTC().Format(time.RFC3339Nano)
	}
	return m
}

// --- ChatGPT: conversations.json from Settings > Data controls > Export ---

type gptConversation struct {
	ID             string             `json:"id"`
	ConversationID string             `json:"conversation_id"`
	Title          string             `json:"title"`
	CreateTime     *float64           `json:"create_time"`
	CurrentNode    string             `json:"current_node"`
	Mapping        map[string]gptNode `json:"mapping"`
}

type gptNode struct {
	ID       string      `json:"id"`
	Message  *gptMessage `json:"message"`
	Parent   *string     `json:"parent"`
	Children []string    `json:"children"`
}

type gptMessage struct {
	ID     string `json:"id"`
	Author struct {
		Role string `json:"role"`
		Name string `json:"name"`
	} `json:"author"`
	CreateTime *float64 `json:"create_time"`
	Content    struct {
		ContentType string            `json:"content_type"`
		Parts       []json.RawMessage `json:"parts"`
		Text        string            `json:"text"`
		Result      string            `json:"result"`
	} `json:"content"`
	Metadata struct {
		Hidden bool `json:"is_visually_hidden_from_conversation"`
	} `json:"metadata"`
}

// ParseChatGPT reads ChatGPT's conversations.json. Each conversation's
// visible thread is the path from current_node up through parent links
// (the branch the user last saw; edited-away branches are left out).
// System, hidden and empty messages are skipped; create_time is kept.
func ParseChatGPT(r io.Reader) ([]ImportedConversation, error) {
	var raw []gptConversation
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: not a ChatGPT conversations.json (want a JSON array of conversations with \"mapping\" and \"current_node\"): %v", ErrInvalid, err)
	}
	out := make([]ImportedConversation, 0, len(raw))
	for i, c := range raw {
		id := c.ConversationID
		if id == "" {
			id = c.ID
		}
		if c.Mapping == nil {
			return nil, fmt.Errorf("%w: conversation %d (%q) has no \"mapping\"", ErrInvalid, i, RedactSecrets(c.Title))
		}
		var path []*gptMessage
		var problem string
		start := c.CurrentNode
		if start == "" {
			// Without current_node the thread the user last saw cannot be
			// told: the one ending at the latest message is taken, and said.
			start = latestLeaf(c.Mapping)
			problem = "it has no current_node: the thread ending at its latest message was imported"
			if start == "" {
				problem = "it has no current_node and no message to start from: nothing could be read"
			}
		}
		seen := map[string]bool{}
		for node := start; node != "" && !seen[node]; {
			seen[node] = true
			n, ok := c.Mapping[node]
			if !ok {
				// An export cut or edited by hand: the thread below the
				// missing node is still worth keeping, and the other
				// conversations are not held up by this one.
				problem = fmt.Sprintf("node %q is not in the mapping: only the %d message(s) below it could be read", node, len(path))
				if node == start {
					problem = fmt.Sprintf("its current_node %q is not in the mapping: nothing could be read", node)
				}
				break
			}
			if n.Message != nil {
				path = append(path, n.Message)
			}
			if n.Parent == nil {
				break
			}
			node = *n.Parent
		}
		ic := ImportedConversation{ID: importID("chatgpt", c.Title, id), Title: RedactSecrets(c.Title), Problem: problem}
		for j := len(path) - 1; j >= 0; j-- {
			m := path[j]
			role := m.Author.Role
			if role == "system" || m.Metadata.Hidden || (role != "user" && role != "assistant" && role != "tool") {
				continue
			}
			text := strings.TrimSpace(gptText(m))
			if text == "" {
				continue
			}
			when := epoch(m.CreateTime)
			if when.IsZero() {
				when = epoch(c.CreateTime)
			}
			msg := textMessage(role, text, when)
			if role == "tool" {
				msg.Name = m.Author.Name
			}
			ic.Messages = append(ic.Messages, msg)
		}
		if len(ic.Messages) > 0 || problem != "" {
			out = append(out, ic)
		}
	}
	return distinctIDs(out), nil
}

// latestLeaf returns the node without children whose message is the
// latest (by create_time, then id), or "" when no node has a message.
func latestLeaf(mapping map[string]gptNode) string {
	best, bestAt := "", -1.0
	for id, n := range mapping {
		if len(n.Children) > 0 || n.Message == nil {
			continue
		}
		at := 0.0
		if n.Message.CreateTime != nil {
			at = *n.Message.CreateTime
		}
		if at > bestAt || at == bestAt && id > best {
			best, bestAt = id, at
		}
	}
	return best
}

// distinctIDs gives each conversation of one export its own id. importID
// keeps only a title slug and 8 characters of the export's id, so two
// chats with one title whose ids begin alike, or two untitled ones
// without ids, had the same one and were merged into one conversation
// (while the import counted two). The first keeps its id (an earlier
// import stored it under that one); each later one gets a digest of its
// export id, title and messages after it, the same on every re-run.
func distinctIDs(convs []ImportedConversation) []ImportedConversation {
	seen := make(map[string]bool, len(convs))
	for i := range convs {
		c := &convs[i]
		if seen[c.ID] {
			h := sha256.New()
			fmt.Fprintf(h, "%s\x00%s\x00", c.ID, c.Title)
			for _, m := range c.Messages {
				fmt.Fprintf(h, "%s\x00%s\x00%s\x00", m.Role, m.Content, m.Timestamp)
			}
			base := c.ID
			for n := 0; seen[c.ID]; n++ {
				fmt.Fprintf(h, "%d", n) // identical twins still part
				c.ID = base + "-" + hex.EncodeToString(h.Sum(nil))[:8]
			}
		}
		seen[c.ID] = true
	}
	return convs
}

// gptText is a message's readable text: string parts (images and other
// asset pointers are skipped), or the text of code and tool output.
func gptText(m *gptMessage) string {
	var parts []string
	for _, p := range m.Content.Parts {
		var s string
		if json.Unmarshal(p, &s) == nil && strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n")
	}
	if m.Content.Text != "" {
		return m.Content.Text
	}
	return m.Content.Result
}

func epoch(f *float64) time.Time {
	if f == nil || *f <= 0 || math.IsNaN(*f) || math.IsInf(*f, 0) {
		return time.Time{}
	}
	sec, frac := math.Modf(*f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC()
}

// --- Claude: conversations.json from Settings > Privacy > Export data ---

type claudeConversation struct {
	UUID      string          `json:"uuid"`
	Name      string          `json:"name"`
	CreatedAt string          `json:"created_at"`
	Messages  []claudeMessage `json:"chat_messages"`
}

type claudeMessage struct {
	UUID      string `json:"uuid"`
	Text      string `json:"text"`
	Sender    string `json:"sender"`
	CreatedAt string `json:"created_at"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// ParseClaude reads Claude's conversations.json: chat_messages with sender
// human or assistant, text from the "text" content blocks (or the flat
// text field of older exports), created_at kept.
func ParseClaude(r io.Reader) ([]ImportedConversation, error) {
	var raw []claudeConversation
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: not a Claude conversations.json (want a JSON array of conversations with \"chat_messages\"): %v", ErrInvalid, err)
	}
	out := make([]ImportedConversation, 0, len(raw))
	for i, c := range raw {
		ic := ImportedConversation{ID: importID("claude", c.Name, c.UUID), Title: RedactSecrets(c.Name)}
		for j, m := range c.Messages {
			var role string
			switch m.Sender {
			case "human":
				role = "user"
			case "assistant":
				role = "assistant"
			default:
				return nil, fmt.Errorf("%w: conversation %d (%q) message %d: sender %q is neither human nor assistant", ErrInvalid, i, RedactSecrets(c.Name), j, m.Sender)
			}
			var parts []string
			for _, b := range m.Content {
				if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
					parts = append(parts, b.Text)
				}
			}
			text := strings.Join(parts, "\n")
			if len(parts) == 0 {
				text = m.Text
			}
			if text = strings.TrimSpace(text); text == "" {
				continue
			}
			when, err := parseExportTime(m.CreatedAt, c.CreatedAt)
			if err != nil {
				return nil, fmt.Errorf("%w: conversation %d (%q) message %d: %v", ErrInvalid, i, RedactSecrets(c.Name), j, err)
			}
			ic.Messages = append(ic.Messages, textMessage(role, text, when))
		}
		if len(ic.Messages) > 0 {
			out = append(out, ic)
		}
	}
	return distinctIDs(out), nil
}

func parseExportTime(s, fallback string) (time.Time, error) {
	if s == "" {
		s = fallback
	}
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("created_at %q is not an RFC 3339 time", s)
	}
	return t, nil
}
