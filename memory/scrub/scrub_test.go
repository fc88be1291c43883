package scrub

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// secretCase is one line of testdata/secrets.json: chat text holding made-up
// credentials of valid shape, and the credentials that must not survive.
type secretCase struct {
	Kind    string   `json:"kind"`
	Text    string   `json:"text"`
	Secrets []string `json:"secrets"`
}

func loadCorpus[T any](t testing.TB, name string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

var wordRE = regexp.MustCompile(`[A-Za-z]{4,}`)

// TestSecretCorpus: every credential of the corpus is replaced and the words
// around it stay. It reports the detection rate (secrets removed / secrets).
func TestSecretCorpus(t *testing.T) {
	cases := loadCorpus[[]secretCase](t, "secrets.json")
	s := Default()
	found, total := 0, 0
	for _, c := range cases {
		got, n := s.Scrub(c.Text)
		total += len(c.Secrets)
		leaked := false
		for _, sec := range c.Secrets {
			if strings.Contains(got, sec) {
				leaked = true
				t.Errorf("%s: secret %.24q... survived in %q", c.Kind, sec, got)
			} else {
				found++
			}
		}
		if !leaked && n == 0 {
			t.Errorf("%s: Scrub reported 0 replacements", c.Kind)
		}
		if !strings.Contains(got, Prefix) {
			t.Errorf("%s: no placeholder in %q", c.Kind, got)
		}
		// The words around the secret are kept (they are what recall finds).
		rest := c.Text
		for _, sec := range c.Secrets {
			rest = strings.ReplaceAll(rest, sec, " ")
		}
		for _, w := range wordRE.FindAllString(rest, -1) {
			if !strings.Contains(got, w) {
				t.Errorf("%s: surrounding word %q lost: %q", c.Kind, w, got)
			}
		}
		// Idempotent: scrubbing the result changes nothing.
		if again, n2 := s.Scrub(got); again != got || n2 != 0 {
			t.Errorf("%s: second scrub changed %q to %q (%d)", c.Kind, got, again, n2)
		}
	}
	t.Logf("secret corpus: %d of %d secrets redacted (%.1f%%) in %d texts", found, total, 100*float64(found)/float64(total), len(cases))
}

// TestOrdinaryCorpus: text that looks technical but holds no secret (UUIDs,
// git SHAs, digests, base64 in code, URLs without passwords, variables named
// password) comes back unchanged. It reports the false-positive rate.
func TestOrdinaryCorpus(t *testing.T) {
	lines := loadCorpus[[]string](t, "ordinary.json")
	s := Default()
	changed := 0
	for _, l := range lines {
		if got, n := s.Scrub(l); got != l || n != 0 {
			changed++
			t.Errorf("false positive (%d): %q became %q", n, l, got)
		}
	}
	t.Logf("ordinary corpus: %d of %d texts changed (false-positive rate %.1f%%)", changed, len(lines), 100*float64(changed)/float64(len(lines)))
}

func TestOptions(t *testing.T) {
	key := "AKIAQWERTYUIOPASDFGH"
	tests := []struct {
		name string
		opts Options
		in   string
		want string
	}{
		{"default", Options{}, "id " + key + " here", "id [secret:aws-access-key-id] here"},
		{"allow literal", Options{Allow: []string{key}}, "id " + key + " here", "id " + key + " here"},
		{"allow regexp", Options{Allow: []string{`AKIA[A-Z]+`}}, "id " + key + " here", "id " + key + " here"},
		{"extra rule", Options{Extra: []Extra{{Name: "ticket-token", Pattern: `TT-[0-9]{6}`}}}, "use TT-123456 now", "use [secret:ticket-token] now"},
		{"extra rule group", Options{Extra: []Extra{{Name: "pin", Pattern: `pin (?P<secret>[0-9]{4})\b`}}}, "my pin 4321 ok", "my pin [secret:pin] ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Scrub(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got, n := Off().Scrub("id " + key); n != 0 || got != "id "+key {
		t.Errorf("Off: got %q (%d), want it unchanged", got, n)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Extra: []Extra{{Name: "Bad Name", Pattern: "x"}}},
		{Extra: []Extra{{Name: "ok", Pattern: "("}}},
		{Extra: []Extra{{Name: "empty", Pattern: "a*"}}},
		{Allow: []string{"["}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v): got no error", o)
		}
	}
}

func TestJSON(t *testing.T) {
	s := Default()
	key := "ghp_" + strings.Repeat("aB3", 12)
	in := `[{"type":"text","text":"token ` + key + ` ok"},{"type":"tool_use","input":{"k":"` + key + `","n":1}}]`
	got, n := s.JSON([]byte(in))
	if n != 2 || strings.Contains(string(got), key) {
		t.Fatalf("got %s (%d), want both tokens replaced", got, n)
	}
	if !json.Valid(got) {
		t.Fatalf("result is not JSON: %s", got)
	}
	want := `[{"type":"text","text":"token [secret:github-token] ok"},{"type":"tool_use","input":{"k":"[secret:github-token]","n":1}}]`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// OpenAI tool call arguments: JSON inside a JSON string.
	args := `[{"id":"c1","type":"function","function":{"name":"login","arguments":"{\"user\":\"dana\",\"password\":\"Hunter2-correct\"}"}}]`
	if got, n := s.JSON([]byte(args)); n != 1 || strings.Contains(string(got), "Hunter2") || !json.Valid(got) {
		t.Errorf("nested arguments: got %s (%d)", got, n)
	}
	// A PEM block inside a JSON string ("\n" escapes) is found too.
	pem := `"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49\n-----END EC PRIVATE KEY-----"`
	if got, n := s.JSON([]byte(pem)); n != 1 || string(got) != `"[secret:private-key]"` {
		t.Errorf("PEM in JSON: got %s (%d)", got, n)
	}
}

func TestStripPlaceholders(t *testing.T) {
	if got := StripPlaceholders("key [secret:openai-key] for billing"); strings.Contains(got, "secret") || !strings.Contains(got, "billing") {
		t.Errorf("got %q", got)
	}
}

func FuzzJSON(f *testing.F) {
	f.Add(`{"a":"password: hunter2x","b":[1,2,"AKIAQWERTYUIOPASDFGH"]}`)
	f.Add(`"plain text"`)
	f.Add(`["\"quoted\" \\ sk-ant-api03-aaaaaaaaaaaaaaaaaaaaaaaa"]`)
	s := Default()
	f.Fuzz(func(t *testing.T, in string) {
		out, n := s.JSON([]byte(in))
		if n == 0 && string(out) != in {
			t.Fatalf("no replacement but output changed: %q -> %q", in, out)
		}
		if json.Valid([]byte(in)) && !json.Valid(out) {
			t.Fatalf("valid JSON became invalid: %q -> %q", in, out)
		}
	})
}

// TestPrefilterChangesNothing: the rules' cheap pre-filters only skip
// texts a rule cannot match. Every corpus text, in its own case, upper and
// lower case, and with the letters that fold to ASCII ones (the long s, the
// Kelvin sign), is scrubbed the same with and without them.
func TestPrefilterChangesNothing(t *testing.T) {
	with := Default()
	without := Default()
	for i := range without.rules {
		without.rules[i].need, without.rules[i].needRun = nil, 0
	}
	var texts []string
	for _, c := range loadCorpus[[]secretCase](t, "secrets.json") {
		texts = append(texts, c.Text)
	}
	texts = append(texts, loadCorpus[[]string](t, "ordinary.json")...)
	texts = append(texts, "my paſſword = 'hunter2hunter2'", "the \u212Aey: 'api_\u212Aey=Zx8Qw3Lm9Rt2Yv6Bn1Kp4'", "PASSWORD=correcthorse")
	skipped := 0
	for _, base := range texts {
		for _, text := range []string{base, strings.ToUpper(base), strings.ToLower(base)} {
			got, n := with.Scrub(text)
			want, wn := without.Scrub(text)
			if got != want || n != wn {
				t.Errorf("pre-filter changed the result for %q:\nwith    %q (%d)\nwithout %q (%d)", text, got, n, want, wn)
			}
			lower := foldLower(text)
			for _, r := range with.rules {
				if !r.mayMatch(text, lower) {
					skipped++
				}
			}
		}
	}
	if got, _ := with.Scrub("my paſſword = 'hunter2hunter2'"); strings.Contains(got, "hunter2hunter2") {
		t.Errorf("long-s password survived: %q", got)
	}
	if skipped == 0 {
		t.Errorf("the pre-filters skipped no rule on any text")
	}
}

// BenchmarkScrubOrdinary scrubs the ordinary corpus (no secrets: the
// common case) with the rules' pre-filters and, as the baseline in the same
// run, without them.
//
//	go test ./memory/scrub -run '^$' -bench ScrubOrdinary
func BenchmarkScrubOrdinary(b *testing.B) {
	lines := loadCorpus[[]string](b, "ordinary.json")
	without := Default()
	for i := range without.rules {
		without.rules[i].need, without.rules[i].needRun = nil, 0
	}
	for _, bc := range []struct {
		name string
		s    *Scrubber
	}{{"prefilter", Default()}, {"no-prefilter", without}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				for _, l := range lines {
					bc.s.Scrub(l)
				}
			}
		})
	}
}
