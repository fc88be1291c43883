package tagging

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestClassifyQuery(t *testing.T) {
	now := time.Date(2023, 6, 15, 10, 0, 0, 0, time.UTC) // a Thursday
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		name         string
		text         string
		broad        bool
		temporal     bool
		order        string
		since, until time.Time
		speakers     []string
		terms        []string // must all be present
		when         bool
	}{
		{name: "what did we discuss", text: "What did we discuss?", broad: true},
		{name: "summarize everything", text: "Can you summarize everything?", broad: true},
		{name: "recap", text: "recap please", broad: true},
		{name: "remind me what we covered", text: "Remind me what we covered so far.", broad: true},
		{name: "overview", text: "Give me an overview", broad: true},
		{name: "everything we talked about", text: "everything we talked about", broad: true},
		{name: "where were we", text: "Where were we?", broad: true},
		{name: "topic question is not broad", text: "What did we discuss about the database?", terms: []string{"database"}},
		{name: "summary of a topic is not broad", text: "Summarize the Japan trip", terms: []string{"japan", "trip"}, speakers: []string{"Japan"}},
		{name: "first thing", text: "What was the first thing we discussed?", temporal: true, order: "first"},
		{name: "very beginning", text: "At the very beginning, what did we decide about tokens?", temporal: true, order: "first", terms: []string{"tokens"}},
		{name: "early on", text: "Something you said early on about indexing", temporal: true, order: "first", terms: []string{"indexing"}},
		{name: "originally", text: "Which database did we originally pick?", temporal: true, order: "first", terms: []string{"database", "pick"}},
		{name: "last time", text: "What did we talk about last time?", broad: true, temporal: true, order: "last"},
		{name: "most recent", text: "the most recent thing about Rex", temporal: true, order: "last", speakers: []string{"Rex"}, terms: []string{"rex"}},
		{name: "yesterday", text: "What did Caroline do yesterday?", temporal: true, since: day(2023, 6, 14), until: day(2023, 6, 15), speakers: []string{"Caroline"}, terms: []string{"caroline"}},
		{name: "day month year", text: "What happened on 8 May 2023?", temporal: true, since: day(2023, 5, 8), until: day(2023, 5, 9), terms: []string{"happened"}},
		{name: "ordinal of month", text: "the 8th of May 2023", temporal: true, since: day(2023, 5, 8), until: day(2023, 5, 9)},
		{name: "month day year", text: "on May 8, 2023", temporal: true, since: day(2023, 5, 8), until: day(2023, 5, 9)},
		{name: "iso date", text: "the deploy on 2023-05-08", temporal: true, since: day(2023, 5, 8), until: day(2023, 5, 9), terms: []string{"deploy"}},
		{name: "slash date", text: "logs from 2023/05/08", temporal: true, since: day(2023, 5, 8), until: day(2023, 5, 9)},
		{name: "month year", text: "What did Melanie paint in May 2023?", temporal: true, since: day(2023, 5, 1), until: day(2023, 6, 1), speakers: []string{"Melanie"}, terms: []string{"paint"}},
		{name: "year", text: "trips we took in 2022", temporal: true, since: day(2022, 1, 1), until: day(2023, 1, 1), terms: []string{"trips"}},
		{name: "month this year", text: "what did I cook in May", temporal: true, since: day(2023, 5, 1), until: day(2023, 6, 1)},
		{name: "month last year", text: "the hike in August", temporal: true, since: day(2022, 8, 1), until: day(2022, 9, 1), terms: []string{"hike"}},
		{name: "weeks ago", text: "the bug from 2 weeks ago", temporal: true, since: day(2023, 5, 29), until: day(2023, 6, 5), terms: []string{"bug"}},
		{name: "days ago", text: "three days ago", temporal: true, since: day(2023, 6, 12), until: day(2023, 6, 13)},
		{name: "last week", text: "what we planned last week", temporal: true, since: day(2023, 6, 5), until: day(2023, 6, 12), terms: []string{"planned"}},
		{name: "last month", text: "invoices from last month", temporal: true, since: day(2023, 5, 1), until: day(2023, 6, 1), terms: []string{"invoices"}},
		{name: "before", text: "anything before March 2023", temporal: true, until: day(2023, 3, 1)},
		{name: "since", text: "changes since 2021", temporal: true, since: day(2021, 1, 1), terms: []string{"changes"}},
		{name: "range", text: "between May 2022 and July 2022", temporal: true, since: day(2022, 5, 1), until: day(2022, 8, 1)},
		{name: "when", text: "When did Melanie paint a sunrise?", when: true, speakers: []string{"Melanie"}, terms: []string{"melanie", "paint", "sunrise"}},
		{name: "what date", text: "What date is the vet appointment?", when: true, terms: []string{"vet", "appointment"}},
		{name: "how long ago", text: "how long ago did we set up the replication slots", when: true, terms: []string{"replication", "slots"}},
		{name: "modal may is no date", text: "I may go to the gym", terms: []string{"gym"}},
		{name: "a count is no year", text: "We have 2000 users now", terms: []string{"2000", "users"}},
		{name: "plain question", text: "How big is the Postgres database?", speakers: []string{"Postgres"}, terms: []string{"big", "postgres", "database"}},
		{name: "empty", text: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := ClassifyQuery(tt.text, now)
			if q.Broad != tt.broad || q.Temporal != tt.temporal || q.Order != tt.order || q.When != tt.when {
				t.Errorf("got broad=%v temporal=%v order=%q when=%v, want %v %v %q %v", q.Broad, q.Temporal, q.Order, q.When, tt.broad, tt.temporal, tt.order, tt.when)
			}
			if !q.Since.Equal(tt.since) || !q.Until.Equal(tt.until) {
				t.Errorf("got [%v, %v), want [%v, %v)", q.Since, q.Until, tt.since, tt.until)
			}
			if len(q.Speakers) != 0 || len(tt.speakers) != 0 {
				if !reflect.DeepEqual(q.Speakers, tt.speakers) {
					t.Errorf("got speakers %q, want %q", q.Speakers, tt.speakers)
				}
			}
			for _, w := range tt.terms {
				if !contains(q.Terms, w) {
					t.Errorf("got terms %q, want them to include %q", q.Terms, w)
				}
			}
		})
	}
}

func TestFindDates(t *testing.T) {
	now := time.Date(2023, 6, 15, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		text string
		want []string
	}{
		{"We met on 8 May 2023 and again last week.", []string{"8 May 2023", "last week"}},
		{"Deadline: 2023-07-01. Retro on Friday, then holidays in August.", []string{"2023-07-01", "Friday", "August"}},
		{"I'll call the vet tomorrow or the day after.", []string{"tomorrow"}},
		{"May I ask how the 2000 users feel?", nil},
		{"Rex was born in 2017, two years ago we moved.", []string{"2017", "two years ago"}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			var got []string
			for _, d := range FindDates(tt.text, now) {
				got = append(got, d.Text)
				if !d.Start.Before(d.End) {
					t.Errorf("%q: start %v not before end %v", d.Text, d.Start, d.End)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzClassifyQuery(f *testing.F) {
	for _, s := range []string{"What did we discuss?", "the 31st of February 2023", "May 2023", "2023-13-45", "3 months ago", "last Monday", "in 1900", "a couple of weeks ago", "İİİ ’s ``` `x`", "before after since"} {
		f.Add(s, int64(1686823200))
	}
	f.Fuzz(func(t *testing.T, text string, unix int64) {
		now := time.Unix(unix%(1<<34), 0).UTC()
		q := ClassifyQuery(text, now)
		if q.Order != "" && q.Order != "first" && q.Order != "last" {
			t.Fatalf("order %q", q.Order)
		}
		if (q.Order != "" || !q.Since.IsZero() || !q.Until.IsZero()) && !q.Temporal {
			t.Fatalf("order or dates without Temporal: %+v", q)
		}
		for _, w := range q.Terms {
			if w == "" {
				t.Fatalf("bad term %q", w)
			}
		}
		for _, s := range q.Speakers {
			if s == "" || !strings.Contains(text, s) {
				t.Fatalf("speaker %q not in the text", s)
			}
		}
		for _, d := range FindDates(text, now) {
			if !strings.Contains(text, d.Text) || !d.Start.Before(d.End) {
				t.Fatalf("bad date mention %+v", d)
			}
		}
	})
}

func BenchmarkClassifyQuery(b *testing.B) {
	now := time.Date(2023, 6, 15, 10, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		ClassifyQuery("What did Caroline say about the LGBTQ support group on 8 May 2023, two weeks before the parade?", now)
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"What did Caroline say about the LGBTQ support group?", []string{"caroline", "lgbtq", "support", "group"}},
		{"ok thanks, the the THE database", []string{"database"}},
		{"Postgres 15 and postgres", []string{"postgres", "15"}},
		{"", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Terms(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
