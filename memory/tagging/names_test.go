package tagging

import (
	"reflect"
	"testing"
	"time"
)

func TestDetectList(t *testing.T) {
	now := time.Date(2023, 6, 15, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		text string
		list bool
	}{
		{"What books has Tim read?", true},
		{"Which cities has Jon visited?", true},
		{"What European countries has Maria been to?", true},
		{"What are the names of John's children?", true},
		{"What kinds of interests do Joanna and Nate share?", true},
		{"In what ways is Caroline participating in the LGBTQ community?", true},
		{"which databases have we considered for the cache?", true},
		// One thing, not a list.
		{"What kind of painting did Caroline share?", false},
		{"What did Melanie paint recently?", false},
		{"Which song motivates Caroline to be courageous?", false},
		// A verb in -s right before a name is no plural noun.
		{"What inspires Joanna to create drawings?", false},
		{"What helps Joanna stay focused?", false},
		{"What motivates John's team?", false},
		{"When did Caroline go to the LGBTQ support group?", false},
		{"Tell me about the books Tim read", false},
		{"What is Caroline's relationship status?", false},
		// What someone would do is an inclination, not a list on record.
		{"What fields would Caroline be likely to pursue in her education?", false},
		{"Which cities could we visit next?", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := ClassifyQuery(tt.text, now).List; got != tt.list {
			t.Errorf("ClassifyQuery(%q).List = %v, want %v", tt.text, got, tt.list)
		}
	}
}

func TestNames(t *testing.T) {
	speakers := map[string]bool{"caroline": true, "melanie": true, "gina": true}
	tests := []struct {
		text string
		want []string
	}{
		{`Hey Caroline! I just watched "Little Women" and it was amazing!`, []string{"Women", "Little Women"}},
		{"Thanks, Melanie! This necklace is a gift from my grandma in my home country, Sweden.", []string{"Sweden"}},
		{"Hey Gina, hope you're doing great! Took a short trip last week to Rome to clear my mind.", []string{"Rome"}},
		{"Here's one- 'Embracing Identity' is all about finding comfort. I don't know, it's Caroline's.", []string{"Embracing Identity"}},
		{"We explored the coast up in the Pacific Northwest and hit some cool national parks.", []string{"Pacific Northwest"}},
		{"We use PostgreSQL and the AWS console.", []string{"PostgreSQL", "AWS"}},
		{"“Project Hail Mary” was great", []string{"Hail Mary", "Project Hail Mary"}}, // "Project" starts the sentence
		// Capitalised for other reasons: sentence starts, I, months, weekdays, greetings.
		{"Yesterday I went to the pride parade on Monday in May. Loved it.", nil},
		{"Reading is my favourite thing. I love books!", nil},
		{"", nil},
		// Apostrophes are not quotes.
		{"I can't wait, it's been ages since we've met", nil},
	}
	for _, tt := range tests {
		if got := Names(tt.text, speakers); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Names(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestDetectListKind: a list question's kind is its head noun phrase, less
// "kinds of" and the like; a vague head gives none.
func TestDetectListKind(t *testing.T) {
	now := time.Date(2023, 6, 15, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct{ text, kind string }{
		{"What activities does Melanie partake in?", "activities"},
		{"What martial arts has John done?", "martial arts"},
		{"Which European countries has Maria been to?", "European countries"},
		{"What kinds of interests do Joanna and Nate share?", "interests"},
		{"What are the names of John's children?", "children"},
		{"What are the skills that Nate has helped others learn?", "skills"},
		{"What things has Nate recommended to Joanna?", ""},
		{"In what ways is Caroline participating in the LGBTQ community?", ""},
		{"What did Melanie paint recently?", ""},
	} {
		if got := ClassifyQuery(tt.text, now).Kind; got != tt.kind {
			t.Errorf("ClassifyQuery(%q).Kind = %q, want %q", tt.text, got, tt.kind)
		}
	}
}

// TestDetectChoices: "A or B" in a question gives both alternatives, each
// cut at the nearest function word; "yes or no" gives none.
func TestDetectChoices(t *testing.T) {
	now := time.Date(2023, 6, 15, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"Would Melanie be more interested in going to a national park or a theme park?", []string{"national park", "theme park"}},
		{"Does John live close to a beach or the mountains?", []string{"beach", "mountains"}},
		{"Is the cache in Postgres or SQLite?", []string{"Postgres", "SQLite"}},
		{"Was September a good month for Nate? Answer yes or no.", nil},
		{"What books has Tim read?", nil},
	} {
		if got := ClassifyQuery(tt.text, now).Choices; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ClassifyQuery(%q).Choices = %q, want %q", tt.text, got, tt.want)
		}
	}
}
