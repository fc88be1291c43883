package summarize

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// identityPath holds a corpus of varied inputs with the outputs the
// extractive summariser gave them when the corpus was made. Summaries are
// recorded by reference and remade on replay, so a change in any output
// breaks replay of existing data directories: every output must stay the
// same byte for byte while Version stays the same.
//
// The inputs were made once by the generator in identity_gen_test.go
// (go test -tags identitygen -run TestGenerateIdentity ./memory/summarize);
// go test -update rewrites only the outputs, for a new Version.
const identityPath = "testdata/identity.golden.gz"

// IdentityCase is one corpus entry: an input, the token counter it is
// summarised with, and the output (a Result, or an error's text).
type IdentityCase struct {
	Name    string
	Counter string // "estimate" (EstimateTokens) or "chars" (charCount)
	Input   Input
	Result  json.RawMessage `json:",omitempty"`
	Err     string          `json:",omitempty"`
}

var identityCounters = map[string]func(string) int{"estimate": EstimateTokens, "chars": charCount}

// IdentityOutput summarises c.Input and returns the output as it is
// stored in the corpus.
func IdentityOutput(c IdentityCase) (json.RawMessage, string, error) {
	count, ok := identityCounters[c.Counter]
	if !ok {
		return nil, "", fmt.Errorf("case %s: unknown counter %q", c.Name, c.Counter)
	}
	r, err := NewExtractive(&ExtractiveOptions{Count: count}).Summarize(context.Background(), c.Input)
	if err != nil {
		return nil, err.Error(), nil
	}
	b, err := json.Marshal(r)
	return b, "", err
}

// IdentityFixtures are the package's own test inputs, at a few budgets,
// for the corpus.
func IdentityFixtures() []Input {
	var out []Input
	for _, max := range []int{0, 20, 90, 120} {
		for _, in := range []Input{dbSegment, friendsSegment} {
			in.MaxTokens = max
			out = append(out, in)
		}
	}
	return out
}

// WriteIdentity writes cases, with their outputs, to path.
func WriteIdentity(path string, cases []IdentityCase) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	for i := range cases {
		c := &cases[i]
		// Summarise the input as read back, so that what is stored is what
		// the test will run (times, for one, keep only their offset).
		b, err := json.Marshal(c.Input)
		if err != nil {
			return err
		}
		c.Input = Input{}
		if err := json.Unmarshal(b, &c.Input); err != nil {
			return err
		}
		if c.Result, c.Err, err = IdentityOutput(*c); err != nil {
			return err
		}
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func readIdentity(t testing.TB) []IdentityCase {
	t.Helper()
	f, err := os.Open(identityPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var cases []IdentityCase
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var c IdentityCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s line %d: %v", identityPath, len(cases)+1, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestIdentity checks that every input of the corpus still gets exactly
// the output it was recorded with.
func TestIdentity(t *testing.T) {
	cases := readIdentity(t)
	if *update {
		if err := WriteIdentity(identityPath, cases); err != nil {
			t.Fatal(err)
		}
	}
	if len(cases) < 300 {
		t.Fatalf("got %d cases in %s, want at least 300", len(cases), identityPath)
	}
	kinds := map[Kind]int{}
	for _, c := range cases {
		kinds[c.Input.Kind]++
		res, errText, err := IdentityOutput(c)
		if err != nil {
			t.Fatal(err)
		}
		if errText != c.Err || !bytes.Equal(res, c.Result) {
			t.Errorf("case %s differs:\ngot  %s %s\nwant %s %s", c.Name, res, errText, c.Result, c.Err)
		}
	}
	for _, k := range []Kind{Segment, Single, Tag, Conversation} {
		if kinds[k] < 20 {
			t.Errorf("got %d cases of kind %s, want at least 20", kinds[k], k)
		}
	}
}

// BenchmarkStoreInputs summarises the corpus's inputs that a real store
// asked for while it ingested (segments and tag rollups), as compaction
// does during ingest.
func BenchmarkStoreInputs(b *testing.B) {
	var ins []Input
	for _, c := range readIdentity(b) {
		if strings.HasPrefix(c.Name, "store-") {
			ins = append(ins, c.Input)
		}
	}
	e := NewExtractive(nil)
	b.ReportAllocs()
	for b.Loop() {
		for _, in := range ins {
			if _, err := e.Summarize(context.Background(), in); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(ins))*float64(b.N)/b.Elapsed().Seconds(), "summaries/s")
}
