package memory

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestIngestAlignsResends(t *testing.T) {
	type batch struct {
		msgs       []string // "u:text" or "a:text"; "u:text#id" gives a client id
		wantStored int
	}
	tests := []struct {
		name    string
		batches []batch
		want    []string // the stored transcript
	}{
		{"full resend", []batch{
			{[]string{"u:plan the trip", "a:which city?", "u:Kyoto", "a:booked"}, 4},
			{[]string{"u:plan the trip", "a:which city?", "u:Kyoto", "a:booked", "u:thanks", "a:welcome"}, 2},
		}, []string{"u:plan the trip", "a:which city?", "u:Kyoto", "a:booked", "u:thanks", "a:welcome"}},
		{"new only", []batch{
			{[]string{"u:plan the trip", "a:which city?"}, 2},
			{[]string{"u:Kyoto", "a:booked"}, 2},
		}, []string{"u:plan the trip", "a:which city?", "u:Kyoto", "a:booked"}},
		{"overlapping", []batch{
			{[]string{"u:plan the trip", "a:which city?", "u:Kyoto", "a:booked"}, 4},
			{[]string{"u:Kyoto", "a:booked", "u:thanks"}, 1},
		}, []string{"u:plan the trip", "a:which city?", "u:Kyoto", "a:booked", "u:thanks"}},
		{"retried batch", []batch{
			{[]string{"u:plan the trip", "a:which city?"}, 2},
			{[]string{"u:plan the trip", "a:which city?"}, 0},
		}, []string{"u:plan the trip", "a:which city?"}},
		{"older window resent", []batch{
			{[]string{"u:one", "a:two", "u:three", "a:four", "u:five", "a:six"}, 6},
			{[]string{"a:two", "u:three", "a:four"}, 0},
		}, []string{"u:one", "a:two", "u:three", "a:four", "u:five", "a:six"}},
		{"repeated short answers", []batch{
			{[]string{"a:shall I book Kyoto?", "u:yes"}, 2},
			{[]string{"a:and the ryokan?", "u:yes"}, 2},
			{[]string{"a:breakfast too?"}, 1},
			{[]string{"u:yes"}, 1},
		}, []string{"a:shall I book Kyoto?", "u:yes", "a:and the ryokan?", "u:yes", "a:breakfast too?", "u:yes"}},
		{"same words twice in one batch", []batch{
			{[]string{"a:ok?", "u:yes", "u:yes"}, 3},
		}, []string{"a:ok?", "u:yes", "u:yes"}},
		{"client ids", []batch{
			{[]string{"u:yes#m1", "a:noted#m2"}, 2},
			{[]string{"u:yes#m1"}, 0},
			{[]string{"u:yes#m3", "u:yes#m3"}, 1},
		}, []string{"u:yes", "a:noted", "u:yes"}},
		// The same words as the last stored turn, under a new client id:
		// a new message, not a resend (the id says so).
		{"new client id repeats the last turn", []batch{
			{[]string{"u:deploy friday?#u1", "a:sure?#a1", "u:yes#u2"}, 3},
			{[]string{"a:also migrate the db?#a2", "u:yes#u3"}, 2},
			{[]string{"u:yes#u5"}, 1},
			{[]string{"u:yes#u5"}, 0},
		}, []string{"u:deploy friday?", "a:sure?", "u:yes", "a:also migrate the db?", "u:yes", "u:yes"}},
		// The stored "yes" has no id: the batch's first message may be it
		// again.
		{"client ids after turns without", []batch{
			{[]string{"u:Q?", "u:yes"}, 2},
			{[]string{"u:yes#m1", "u:yes#m2"}, 1},
		}, []string{"u:Q?", "u:yes", "u:yes"}},
		// Some clients give their messages new ids each time they send
		// their history: a resent history is still stored once.
		{"ids made anew each call", []batch{
			{[]string{"u:hi#a1", "a:hello#a2"}, 2},
			{[]string{"u:hi#b1", "a:hello#b2", "u:bye#b3", "a:ciao#b4"}, 2},
			{[]string{"u:hi#c1", "a:hello#c2", "u:bye#c3", "a:ciao#c4"}, 0},
		}, []string{"u:hi", "a:hello", "u:bye", "a:ciao"}},
		// A host that resends its history led by a system prompt that
		// changes with every call (the time in it): the exchanges are
		// stored once, the prompt once per content.
		{"changing system prompt", []batch{
			{[]string{"s:now 10:00", "u:plan the trip", "a:which city?"}, 3},
			{[]string{"s:now 10:01", "u:plan the trip", "a:which city?", "u:Kyoto", "a:booked"}, 3},
			{[]string{"s:now 10:02", "u:plan the trip", "a:which city?", "u:Kyoto", "a:booked", "u:thanks", "a:welcome"}, 3},
			{[]string{"s:now 10:02", "u:plan the trip", "a:which city?", "u:Kyoto", "a:booked", "u:thanks", "a:welcome"}, 0},
		}, []string{"s:now 10:00", "u:plan the trip", "a:which city?", "s:now 10:01", "u:Kyoto", "a:booked", "s:now 10:02", "u:thanks", "a:welcome"}},
		{"same system prompt", []batch{
			{[]string{"s:be brief", "u:plan the trip", "a:which city?"}, 3},
			{[]string{"s:be brief", "u:plan the trip", "a:which city?", "u:Kyoto", "a:booked"}, 2},
		}, []string{"s:be brief", "u:plan the trip", "a:which city?", "u:Kyoto", "a:booked"}},
		// Through the shared server every message gets a stamped id: the
		// same system prompt is still stored once.
		{"stamped system prompt", []batch{
			{[]string{"s:be brief#bridge:n1:1:0", "u:plan the trip#bridge:n1:1:1", "a:which city?#bridge:n1:1:2"}, 3},
			{[]string{"s:be brief#bridge:n1:2:0", "u:plan the trip#bridge:n1:2:1", "a:which city?#bridge:n1:2:2", "u:Kyoto#bridge:n1:2:3", "a:booked#bridge:n1:2:4"}, 2},
		}, []string{"s:be brief", "u:plan the trip", "a:which city?", "u:Kyoto", "a:booked"}},
		// A host that gives ids to its user messages only: a new exchange
		// is stored whole.
		{"user ids only", []batch{
			{[]string{"u:yes#m1", "a:ok, booked"}, 2},
			{[]string{"u:yes#m2", "a:ok, paid"}, 2},
			{[]string{"u:yes#m3"}, 1},
		}, []string{"u:yes", "a:ok, booked", "u:yes", "a:ok, paid", "u:yes"}},
		{"user ids, whole history resent", []batch{
			{[]string{"u:hi#m1", "a:hello"}, 2},
			{[]string{"u:hi#m1", "a:hello", "u:bye#m2", "a:ciao"}, 2},
			{[]string{"u:hi#m1", "a:hello", "u:bye#m2", "a:ciao"}, 0},
		}, []string{"u:hi", "a:hello", "u:bye", "a:ciao"}},
		// Ids the shared server's bridge stamps are not the client's: a
		// resend under new stamped ids is still told by its content.
		{"stamped ids", []batch{
			{[]string{"u:plan the trip#bridge:n1:1:0", "a:which city?#bridge:n1:1:1"}, 2},
			{[]string{"u:plan the trip#bridge:n1:2:0", "a:which city?#bridge:n1:2:1", "u:Kyoto#bridge:n1:2:2"}, 1},
			{[]string{"u:Kyoto#bridge:n1:2:2"}, 0},
		}, []string{"u:plan the trip", "a:which city?", "u:Kyoto"}},
	}
	for _, withTime := range []bool{false, true} {
		for _, tt := range tests {
			if withTime && tt.name == "client ids after turns without" {
				continue // with timestamps the yeses are told apart by their times: the case is about messages without
			}
			t.Run(fmt.Sprintf("%s/timestamps=%v", tt.name, withTime), func(t *testing.T) {
				s := openTest(t, Options{})
				// With timestamps every message has its own, fixed by its
				// text's first position in the case, as a client resending
				// its history would send it.
				at := map[string]time.Time{}
				for bi, b := range tt.batches {
					var msgs []Message
					for i, spec := range b.msgs {
						text, id, _ := strings.Cut(spec[2:], "#")
						role := "user"
						switch spec[0] {
						case 'a':
							role = "assistant"
						case 's':
							role = "system"
						}
						m := Message{Role: role, Content: jsonString(text), ID: id}
						if withTime {
							key := spec
							if strings.HasPrefix(id, StampedIDPrefix) || tt.name == "ids made anew each call" {
								key = spec[:2] + text // stamped anew, sent at the same time
							}
							if tt.name == "repeated short answers" || tt.name == "same words twice in one batch" || tt.name == "user ids only" {
								key = fmt.Sprintf("%s@%d.%d", spec, bi, i) // said again: a new time
							}
							if _, ok := at[key]; !ok {
								at[key] = t0.Add(time.Duration(len(at)) * time.Minute)
							}
							m.Timestamp = at[key].Format(time.RFC3339)
						}
						msgs = append(msgs, m)
					}
					res := ingest(t, s, "c", msgs)
					if res.Stored != b.wantStored || res.Duplicates != len(msgs)-b.wantStored {
						t.Fatalf("batch %d: stored %d duplicates %d, want %d %d", bi+1, res.Stored, res.Duplicates, b.wantStored, len(msgs)-b.wantStored)
					}
				}
				got := readable(t, s, "c")
				c, _ := s.conversation(context.Background(), "c", false)
				var transcript []string
				for seq := 1; seq <= len(got); seq++ {
					transcript = append(transcript, c.turn(seq).Role[:1]+":"+got[seq])
				}
				if fmt.Sprint(transcript) != fmt.Sprint(tt.want) {
					t.Fatalf("transcript %q, want %q", transcript, tt.want)
				}
			})
		}
	}
}

func jsonString(s string) []byte { return text(s) }

// Content is stored byte for byte: white space included.
func TestContentIsVerbatim(t *testing.T) {
	s := openTest(t, Options{})
	contents := []string{"  indented\n", "trailing spaces   ", "\ttab\r\n", "line one\n\nline two\n\n"}
	var msgs []Message
	for _, c := range contents {
		msgs = append(msgs, Message{Role: "user", Content: text(c)})
	}
	ingest(t, s, "v", msgs)
	got := readable(t, s, "v")
	for i, want := range contents {
		if got[i+1] != want {
			t.Errorf("turn %d stored %q, want %q", i+1, got[i+1], want)
		}
	}
	data, err := os.ReadFile(s.logPath("v"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `,"trailing spaces   ",`) {
		t.Errorf("the log does not hold the content verbatim:\n%s", data)
	}
}
