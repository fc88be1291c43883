package tagging

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// TestTokens checks that a Tokens answers as the functions that tokenize
// the text themselves, reused from one text to the next.
func TestTokens(t *testing.T) {
	now := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	texts := []string{"", "ok", "I’ll see Dr. O’Brien’s team on 16 May 2023, or next Tuesday?",
		"```go\nx := 1\n```\nWe decided: `pg_upgrade` v1.2 in 30 minutes, yesterday.", "İSTANBUL’S ﬁle… 3.5 GB",
		"Caroline: Hey Mel! The support group’s meeting was 2 weeks ago. Melanie’s kids loved it."}
	for _, l := range loadScript(t) {
		texts = append(texts, l.text)
	}
	k := NewKeyword(nil)
	vocab := map[string]int{}
	var toks Tokens
	for _, text := range texts {
		toks.Reset(text)
		if got, want := toks.Terms(), Terms(text); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: Terms %q, want %q", text, got, want)
		}
		if got, want := toks.FindDates(now), FindDates(text, now); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: FindDates %v, want %v", text, got, want)
		}
		got, err := k.TagTokens(context.Background(), &toks, Input{Text: "not read", Vocabulary: vocab})
		if err != nil {
			t.Fatal(err)
		}
		want, err := k.Tag(context.Background(), Input{Text: text, Vocabulary: vocab})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: TagTokens %+v, want %+v", text, got, want)
		}
		for _, tag := range want.Tags {
			vocab[tag]++
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := k.TagTokens(ctx, &toks, Input{}); err == nil {
		t.Error("TagTokens with a canceled context: no error")
	}
}
