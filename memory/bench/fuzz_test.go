package bench

import (
	"regexp"
	"strings"
	"testing"
)

var normalizedID = regexp.MustCompile(`^D[0-9]+:[0-9]+$`)

func FuzzNormalizeEvidence(f *testing.F) {
	for _, s := range []string{"D1:3", "D8:6; D9:17", "D:11:26", "(D2:1)", "D", "D1:03,D010:2", "", "D99999999999999999999:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := NormalizeEvidence([]string{s}, func(string) bool { return true })
		seen := map[string]bool{}
		for _, id := range got {
			if !normalizedID.MatchString(id) {
				t.Errorf("NormalizeEvidence(%q) gave %q, not D<s>:<i>", s, id)
			}
			if seen[id] {
				t.Errorf("NormalizeEvidence(%q) gave %q twice", s, id)
			}
			seen[id] = true
		}
		if none := NormalizeEvidence([]string{s}, func(string) bool { return false }); len(none) != 0 {
			t.Errorf("NormalizeEvidence(%q) kept %q that do not exist", s, none)
		}
	})
}

func FuzzReadLoCoMo(f *testing.F) {
	f.Add(tinyLoCoMo)
	f.Add(`[]`)
	f.Add(`[{"sample_id": "x", "conversation": {"speaker_a": "A", "speaker_b": "B"}, "qa": [{"question": "q", "evidence": "D1:1", "category": 1}]}]`)
	f.Add(`[{"sample_id": "x", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}, "qa": [{"question": "q", "evidence": null, "category": 9}]}]`)
	f.Fuzz(func(t *testing.T, in string) {
		convs, err := ReadLoCoMo(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, c := range convs {
			for _, q := range c.Questions {
				if len(q.Evidence) == 0 {
					t.Errorf("%s question %d kept with no evidence", c.ID, q.Index)
				}
				for _, id := range q.Evidence {
					if _, ok := c.Turn(id); !ok {
						t.Errorf("%s question %d: evidence %q is not a turn", c.ID, q.Index, id)
					}
				}
			}
			if _, err := IngestRequests(c); err != nil {
				t.Errorf("IngestRequests on a loaded conversation: %v", err)
			}
		}
	})
}
