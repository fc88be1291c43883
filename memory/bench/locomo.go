package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrData means the benchmark data file is malformed.
var ErrData = errors.New("malformed benchmark data")

// Categories of LoCoMo questions, in the dataset's numbering.
const (
	CategoryMultiHop    = 1
	CategoryTemporal    = 2
	CategoryOpenDomain  = 3
	CategorySingleHop   = 4
	CategoryAdversarial = 5
)

// categoryOrder is the column order of the report.
var categoryOrder = []int{CategoryMultiHop, CategoryTemporal, CategoryOpenDomain, CategorySingleHop, CategoryAdversarial}

// CategoryName names a LoCoMo category.
func CategoryName(c int) string {
	switch c {
	case CategoryMultiHop:
		return "multi-hop"
	case CategoryTemporal:
		return "temporal"
	case CategoryOpenDomain:
		return "open-domain"
	case CategorySingleHop:
		return "single-hop"
	case CategoryAdversarial:
		return "adversarial"
	}
	return "category-" + strconv.Itoa(c)
}

// sessionLayout parses LoCoMo's session date-times ("1:56 pm on 8 May, 2023").
const sessionLayout = "3:04 pm on 2 January, 2006"

// Turn is one dialogue turn of a LoCoMo conversation.
type Turn struct {
	// ID is the dataset's dia_id, "D<session>:<index>".
	ID      string
	Session int
	// Pos is the turn's 0-based position in its session.
	Pos     int
	Speaker string
	// Role is "user" for speaker_a and "assistant" for speaker_b.
	Role    string
	Text    string
	Caption string
	// Content is what is ingested and what must be recalled: Text, plus
	// " [shares <caption>]" when the turn has a caption.
	Content string
	// Time is the session's date-time plus Pos seconds.
	Time time.Time
}

// Line renders a turn the way the baselines put it in their context.
// A turn with no speaker name (the assistant-style set) shows its role.
func (t Turn) Line() string {
	if t.Speaker == "" {
		return t.Role + ": " + t.Content
	}
	return t.Speaker + ": " + t.Content
}

// Session is one dated LoCoMo session.
type Session struct {
	N     int
	Time  time.Time
	Turns []Turn
}

// Question is one LoCoMo question with its normalised evidence.
type Question struct {
	// Index is the question's position in the conversation's qa list.
	Index    int
	Text     string
	Category int
	// Evidence holds the normalised gold turn ids; never empty.
	Evidence []string
}

// Conversation is one LoCoMo sample, ready to ingest and to question.
type Conversation struct {
	ID       string
	SpeakerA string
	SpeakerB string
	Sessions []Session
	// Questions are the scored questions; Excluded counts those left with no
	// evidence after normalisation.
	Questions []Question
	Excluded  int
	turns     map[string]*Turn
}

// Turns returns every turn in ingestion order.
func (c *Conversation) Turns() []Turn {
	var out []Turn
	for _, s := range c.Sessions {
		out = append(out, s.Turns...)
	}
	return out
}

// Turn returns the turn with the given dia_id.
func (c *Conversation) Turn(id string) (Turn, bool) {
	t, ok := c.turns[id]
	if !ok {
		return Turn{}, false
	}
	return *t, true
}

type rawTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	Caption string `json:"blip_caption"`
	// img_url and query are deliberately not decoded: they leak search terms.
}

type rawQA struct {
	Question string          `json:"question"`
	Evidence json.RawMessage `json:"evidence"`
	Category int             `json:"category"`
}

type rawSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []rawQA                    `json:"qa"`
}

// LoadLoCoMo reads a LoCoMo JSON file (a list of samples).
func LoadLoCoMo(path string) ([]*Conversation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open locomo data: %w", err)
	}
	defer f.Close()
	convs, err := ReadLoCoMo(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return convs, nil
}

var sessionKey = regexp.MustCompile(`^session_(\d+)$`)

// ReadLoCoMo decodes LoCoMo samples from r.
func ReadLoCoMo(r io.Reader) ([]*Conversation, error) {
	var raw []rawSample
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrData, err)
	}
	out := make([]*Conversation, 0, len(raw))
	for i, s := range raw {
		c, err := buildConversation(s)
		if err != nil {
			return nil, fmt.Errorf("sample %d (%q): %w", i, s.SampleID, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func buildConversation(s rawSample) (*Conversation, error) {
	if s.SampleID == "" {
		return nil, fmt.Errorf("%w: missing sample_id", ErrData)
	}
	c := &Conversation{ID: s.SampleID, turns: map[string]*Turn{}}
	if err := decodeString(s.Conversation, "speaker_a", &c.SpeakerA); err != nil {
		return nil, err
	}
	if err := decodeString(s.Conversation, "speaker_b", &c.SpeakerB); err != nil {
		return nil, err
	}
	type sessionRef struct {
		n   int
		key string
	}
	var refs []sessionRef
	for k := range s.Conversation {
		if m := sessionKey.FindStringSubmatch(k); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				return nil, fmt.Errorf("%w: session key %q", ErrData, k)
			}
			refs = append(refs, sessionRef{n, k})
		}
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].n != refs[j].n {
			return refs[i].n < refs[j].n
		}
		return refs[i].key < refs[j].key
	})
	for i, r := range refs {
		if i > 0 && refs[i-1].n == r.n {
			return nil, fmt.Errorf("%w: sessions %q and %q have the same number", ErrData, refs[i-1].key, r.key)
		}
	}
	for _, r := range refs {
		n := r.n
		var turns []rawTurn
		if err := json.Unmarshal(s.Conversation[r.key], &turns); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrData, r.key, err)
		}
		var when string
		if err := decodeString(s.Conversation, r.key+"_date_time", &when); err != nil {
			return nil, err
		}
		at, err := time.Parse(sessionLayout, strings.TrimSpace(when))
		if err != nil {
			return nil, fmt.Errorf("%w: %s_date_time: %w", ErrData, r.key, err)
		}
		sess := Session{N: n, Time: at}
		for i, rt := range turns {
			t := Turn{
				ID:      rt.DiaID,
				Session: n,
				Pos:     i,
				Speaker: rt.Speaker,
				Text:    rt.Text,
				Caption: rt.Caption,
				Content: TurnContent(rt.Text, rt.Caption),
				Time:    at.Add(time.Duration(i) * time.Second),
			}
			switch rt.Speaker {
			case c.SpeakerA:
				t.Role = "user"
			case c.SpeakerB:
				t.Role = "assistant"
			default:
				return nil, fmt.Errorf("%w: turn %s: speaker %q is neither %q nor %q", ErrData, rt.DiaID, rt.Speaker, c.SpeakerA, c.SpeakerB)
			}
			sess.Turns = append(sess.Turns, t)
		}
		c.Sessions = append(c.Sessions, sess)
	}
	for si := range c.Sessions {
		for ti := range c.Sessions[si].Turns {
			t := &c.Sessions[si].Turns[ti]
			if _, dup := c.turns[t.ID]; dup {
				return nil, fmt.Errorf("%w: two turns with dia_id %q", ErrData, t.ID)
			}
			c.turns[t.ID] = t
		}
	}
	for qi, q := range s.QA {
		ev, err := decodeEvidence(q.Evidence)
		if err != nil {
			return nil, fmt.Errorf("qa %d: %w", qi, err)
		}
		norm := NormalizeEvidence(ev, func(id string) bool { _, ok := c.turns[id]; return ok })
		if len(norm) == 0 {
			c.Excluded++
			continue
		}
		c.Questions = append(c.Questions, Question{Index: qi, Text: q.Question, Category: q.Category, Evidence: norm})
	}
	return c, nil
}

// TurnContent is the text ingested for a turn: its text plus
// " [shares <caption>]" when it carries an image caption.
func TurnContent(text, caption string) string {
	if caption == "" {
		return text
	}
	return text + " [shares " + caption + "]"
}

func decodeString(m map[string]json.RawMessage, key string, dst *string) error {
	raw, ok := m[key]
	if !ok {
		return fmt.Errorf("%w: missing %s", ErrData, key)
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrData, key, err)
	}
	return nil
}

// decodeEvidence accepts a list of strings (the dataset's form) or a single
// string, and tolerates null.
func decodeEvidence(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, fmt.Errorf("%w: evidence: %w", ErrData, err)
	}
	return []string{one}, nil
}

var (
	evidenceSplit = regexp.MustCompile(`[;,\s]+`)
	evidenceID    = regexp.MustCompile(`D:?(\d+):0*(\d+)`)
)

// NormalizeEvidence applies the LoCoMo-R evidence rules: split every string
// on [;,\s]+, strip parentheses, match D:?(\d+):0*(\d+) as D<s>:<i>, keep ids
// for which exists is true, and drop duplicates (first occurrence wins).
func NormalizeEvidence(raw []string, exists func(id string) bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range raw {
		for _, part := range evidenceSplit.Split(r, -1) {
			part = strings.NewReplacer("(", "", ")", "").Replace(part)
			m := evidenceID.FindStringSubmatch(part)
			if m == nil {
				continue
			}
			s, err1 := strconv.Atoi(m[1])
			i, err2 := strconv.Atoi(m[2])
			if err1 != nil || err2 != nil {
				continue
			}
			id := fmt.Sprintf("D%d:%d", s, i)
			if seen[id] || !exists(id) {
				continue
			}
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
