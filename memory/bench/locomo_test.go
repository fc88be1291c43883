package bench

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNormalizeEvidence(t *testing.T) {
	exists := func(id string) bool {
		return slices.Contains([]string{"D1:3", "D1:12", "D8:6", "D9:17", "D11:26", "D2:1", "D10:2"}, id)
	}
	tests := []struct {
		name string
		raw  []string
		want []string
	}{
		{"plain", []string{"D1:3"}, []string{"D1:3"}},
		{"semicolon in one string", []string{"D8:6; D9:17"}, []string{"D8:6", "D9:17"}},
		{"comma and spaces", []string{"D8:6,D9:17  D1:3"}, []string{"D8:6", "D9:17", "D1:3"}},
		{"extra colon", []string{"D:11:26"}, []string{"D11:26"}},
		{"leading zeros", []string{"D1:03", "D1:012"}, []string{"D1:3", "D1:12"}},
		{"parentheses", []string{"(D2:1)"}, []string{"D2:1"}},
		{"bare D", []string{"D"}, nil},
		{"not in conversation", []string{"D99:1", "D1:4"}, nil},
		{"duplicates keep first", []string{"D9:17", "D8:6", "D9:17"}, []string{"D9:17", "D8:6"}},
		{"session zero-padded", []string{"D010:2"}, []string{"D10:2"}},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NormalizeEvidence(tt.raw, exists)
			if !slices.Equal(got, tt.want) {
				t.Errorf("NormalizeEvidence(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

const tinyLoCoMo = `[{
  "sample_id": "conv-t",
  "conversation": {
    "speaker_a": "Ann", "speaker_b": "Bob",
    "session_2_date_time": "9:05 am on 3 June, 2023",
    "session_2": [
      {"speaker": "Bob", "dia_id": "D2:1", "text": "Back from Lisbon, the tiles were amazing."},
      {"speaker": "Ann", "dia_id": "D2:2", "text": "Show me!", "blip_caption": "a photo of blue tiles", "img_url": ["http://x/y.jpg"], "query": "azulejo tiles"}
    ],
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
      {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog named Pickle yesterday."},
      {"speaker": "Bob", "dia_id": "D1:2", "text": "Congrats! I am flying to Lisbon next week."}
    ],
    "session_3_date_time": "10:00 am on 4 June, 2023"
  },
  "qa": [
    {"question": "What is the name of Ann's dog?", "answer": "Pickle", "evidence": ["D1:1"], "category": 4},
    {"question": "Where did Bob travel?", "answer": 2023, "evidence": ["D1:2; D2:1"], "category": 1},
    {"question": "What did Ann share?", "adversarial_answer": "tiles", "evidence": ["D2:2"], "category": 5},
    {"question": "Unanswerable", "answer": "x", "evidence": ["D"], "category": 3},
    {"question": "Also unanswerable", "answer": "x", "evidence": [], "category": 2}
  ]
}]`

func loadTiny(t *testing.T) *Conversation {
	t.Helper()
	convs, err := ReadLoCoMo(strings.NewReader(tinyLoCoMo))
	if err != nil {
		t.Fatalf("ReadLoCoMo: %v", err)
	}
	if len(convs) != 1 {
		t.Fatalf("got %d conversations, want 1", len(convs))
	}
	return convs[0]
}

func TestReadLoCoMo(t *testing.T) {
	c := loadTiny(t)
	if got, want := len(c.Sessions), 2; got != want {
		t.Fatalf("sessions: got %d, want %d (session_3 has a date but no turns)", got, want)
	}
	var ids []string
	for _, tr := range c.Turns() {
		ids = append(ids, tr.ID)
	}
	if want := []string{"D1:1", "D1:2", "D2:1", "D2:2"}; !slices.Equal(ids, want) {
		t.Errorf("turn order: got %q, want %q", ids, want)
	}
	tr, ok := c.Turn("D2:2")
	if !ok {
		t.Fatal("D2:2 missing")
	}
	if got, want := tr.Content, "Show me! [shares a photo of blue tiles]"; got != want {
		t.Errorf("content: got %q, want %q", got, want)
	}
	if got, want := tr.Time, time.Date(2023, 6, 3, 9, 5, 1, 0, time.UTC); !got.Equal(want) {
		t.Errorf("time: got %v, want %v", got, want)
	}
	if got, want := len(c.Questions), 3; got != want {
		t.Errorf("questions: got %d, want %d", got, want)
	}
	if got, want := c.Excluded, 2; got != want {
		t.Errorf("excluded: got %d, want %d", got, want)
	}
	if got, want := c.Questions[1].Evidence, []string{"D1:2", "D2:1"}; !slices.Equal(got, want) {
		t.Errorf("evidence: got %q, want %q", got, want)
	}
}

func TestReadLoCoMoErrors(t *testing.T) {
	tests := []struct{ name, in string }{
		{"not json", `{`},
		{"no sample id", `[{"conversation": {"speaker_a": "A", "speaker_b": "B"}, "qa": []}]`},
		{"bad date", `[{"sample_id": "x", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "yesterday", "session_1": []}, "qa": []}]`},
		{"missing date", `[{"sample_id": "x", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": []}, "qa": []}]`},
		{"duplicate dia_id", `[{"sample_id": "x", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}, {"speaker": "B", "dia_id": "D1:1", "text": "yo"}]}, "qa": []}]`},
		{"same session number twice", `[{"sample_id": "x", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [], "session_01_date_time": "1:56 pm on 8 May, 2023", "session_01": []}, "qa": []}]`},
		{"unknown speaker", `[{"sample_id": "x", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [{"speaker": "C", "dia_id": "D1:1", "text": "hi"}]}, "qa": []}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ReadLoCoMo(strings.NewReader(tt.in)); err == nil {
				t.Errorf("ReadLoCoMo(%s) = nil error, want one", tt.in)
			}
		})
	}
}

func TestIngestRequests(t *testing.T) {
	c := loadTiny(t)
	reqs, err := IngestRequests(c)
	if err != nil {
		t.Fatalf("IngestRequests: %v", err)
	}
	if got, want := len(reqs), 2; got != want {
		t.Fatalf("requests: got %d, want %d (one per session)", got, want)
	}
	type msg struct{ role, name, content, ts string }
	var got []msg
	for _, r := range reqs {
		if r.ConversationID != "conv-t" {
			t.Errorf("conversation id: got %q, want conv-t", r.ConversationID)
		}
		for _, m := range r.Messages {
			var s string
			if err := json.Unmarshal(m.Content, &s); err != nil {
				t.Fatalf("content is not a JSON string: %s", m.Content)
			}
			got = append(got, msg{m.Role, m.Name, s, m.Timestamp})
			if len(m.ToolCalls) != 0 || m.ToolCallID != "" {
				t.Errorf("unexpected tool fields in %+v", m)
			}
		}
	}
	want := []msg{
		{"user", "Ann", "I adopted a dog named Pickle yesterday.", "2023-05-08T13:56:00Z"},
		{"assistant", "Bob", "Congrats! I am flying to Lisbon next week.", "2023-05-08T13:56:01Z"},
		{"assistant", "Bob", "Back from Lisbon, the tiles were amazing.", "2023-06-03T09:05:00Z"},
		{"user", "Ann", "Show me! [shares a photo of blue tiles]", "2023-06-03T09:05:01Z"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("messages:\ngot  %+v\nwant %+v", got, want)
	}
	for _, r := range reqs {
		raw, _ := json.Marshal(r)
		if s := string(raw); strings.Contains(s, "http://x/y.jpg") || strings.Contains(s, "azulejo") {
			t.Errorf("img_url or query leaked into ingestion: %s", s)
		}
	}
}

func TestLoadLoCoMoDevSplit(t *testing.T) {
	path := locomoPath(t)
	convs, err := LoadLoCoMo(path)
	if err != nil {
		t.Fatalf("LoadLoCoMo: %v", err)
	}
	turns, questions, excluded := 0, 0, 0
	for _, c := range convs {
		turns += len(c.Turns())
		questions += len(c.Questions)
		excluded += c.Excluded
	}
	// The README: 2,760 turns, 999 questions of which 2 have no evidence.
	if turns != 2760 || questions != 997 || excluded != 2 {
		t.Errorf("got %d turns, %d questions, %d excluded; want 2760, 997, 2", turns, questions, excluded)
	}
}
