package memory

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// TestForkIsolatesWhatWritersChange: a replay changes a fork the way
// replays change state (a new turn and speaker, a tag inserted into the
// middle of a tag's sorted turn list, a record found damaged, a replaced
// segment and topic summary, the working set, a cached line count). The
// state readers see must not change until adopt, and adopt must give it
// exactly the fork's state.
func TestForkIsolatesWhatWritersChange(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{ContextWindow: 1200, ProtectedTurns: 2})
	ingest(t, s, "c", chat(60, t0))
	c, err := s.conversation(ctx, "c", false)
	if err != nil {
		t.Fatal(err)
	}
	c.lock()
	defer c.unlock()
	if len(c.segs) == 0 || len(c.tagSums) == 0 {
		t.Fatal("the fixture no longer compacts: no segments or topic summaries to replace")
	}
	// A tag whose turn list has a gap to insert into.
	tag, seq := "", 0
	for tg, seqs := range c.tagSeqs {
		for i := 0; i+1 < len(seqs) && seq == 0; i++ {
			if seqs[i+1]-seqs[i] > 1 && !c.turn(seqs[i]+1).Empty {
				tag, seq = tg, seqs[i]+1
			}
		}
	}
	if seq == 0 {
		t.Fatal("no tag with a gap in its turn list")
	}
	// Room to insert in place, as lists grown by ingest have.
	c.tagSeqs[tag] = append(make([]int, 0, len(c.tagSeqs[tag])+8), c.tagSeqs[tag]...)
	before := dumpConv(c)

	n := c.fork()
	n.addTurn(turnMeta{Seq: len(n.turns) + 1, Role: "user", Name: "Zoë", Tokens: 4, Tags: []string{"brand-new-topic", tag}, Hash: "new", Session: 9})
	n.addTags(seq, []string{tag, "another-topic"})
	n.markDamaged(2)
	sg := *n.segs[0]
	sg.Summary = "remade"
	n.segs[0] = &sg
	for k := range n.tagSums {
		n.tagSums[k] = &tagSummaryRec{Tag: k, Summary: "remade"}
		break
	}
	n.working["brand-new-topic"] = WorkingEntry{Tag: "brand-new-topic"}
	n.cacheLine(&n.turns[0], 7)
	n.speakerToks[0] = 3
	n.tokens++

	if after := dumpConv(c); after != before {
		t.Fatalf("changing the fork changed the live state:\n%s", firstDiff([]byte(before), []byte(after)))
	}
	c.adopt(n)
	if got, want := dumpConv(c), dumpConv(n); got != want {
		t.Fatalf("adopt did not take the fork's state:\n%s", firstDiff([]byte(want), []byte(got)))
	}
}

// TestConvFieldsAreForked guards fork and adopt: a field added to conv must
// be placed in both (copied, shared or neither) before it joins this list.
func TestConvFieldsAreForked(t *testing.T) {
	want := []string{"mu", "wmu", "compactMu", "id", "log", "dlog", "replay", "meta", "turns", "lite",
		"lineToks", "ids", "hashes", "forgotten", "rewrites", "vocab", "tagSeqs", "relatedBy", "segs",
		"tagSums", "turnSums", "working", "speakers", "rules", "tagWords", "wordTags", "vecs", "vecFailed",
		"tagVecs", "speakerNames", "speakerIdx", "speakerToks", "tokens", "damaged", "active"}
	var got []string
	for _, f := range reflect.VisibleFields(reflect.TypeOf(conv{})) {
		got = append(got, f.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("conv's fields are now %q: say in fork and adopt what happens to the new ones, then update this list", got)
	}
}

// dumpConv renders c's state (not its locks or handles) with pointers
// followed and map keys sorted, for comparisons.
func dumpConv(c *conv) string {
	var b strings.Builder
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		switch f.Name {
		case "mu", "wmu", "compactMu", "log", "dlog", "replay":
			continue
		}
		fmt.Fprintf(&b, "%s: ", f.Name)
		dumpValue(&b, v.Field(i), 0)
		b.WriteByte('\n')
	}
	return b.String()
}

func dumpValue(b *strings.Builder, v reflect.Value, depth int) {
	if depth > 8 {
		b.WriteString("…")
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		if v.Type() == reflect.TypeOf((*sync.Mutex)(nil)) {
			return
		}
		dumpValue(b, v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type().PkgPath() == "time" {
			fmt.Fprintf(b, "%v", v)
			return
		}
		b.WriteByte('{')
		for i := range v.NumField() {
			fmt.Fprintf(b, "%s:", v.Type().Field(i).Name)
			dumpValue(b, v.Field(i), depth+1)
			b.WriteByte(' ')
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		b.WriteByte('[')
		for i := range v.Len() {
			dumpValue(b, v.Index(i), depth+1)
			b.WriteByte(sep(depth))
		}
		b.WriteByte(']')
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		b.WriteString("map[")
		for _, k := range keys {
			fmt.Fprintf(b, "%v:", k)
			dumpValue(b, v.MapIndex(k), depth+1)
			b.WriteByte(sep(depth))
		}
		b.WriteByte(']')
	default:
		fmt.Fprintf(b, "%v", v)
	}
}

// sep puts the elements of a top-level slice or map on lines of their own,
// so that a difference shows as one short line.
func sep(depth int) byte {
	if depth == 0 {
		return '\n'
	}
	return ' '
}

// BenchmarkFork is what a replay into a fork (a shared store's refresh, a
// bundle merge) pays to copy the state, at 10,000 turns.
func BenchmarkFork(b *testing.B) {
	s := openTest(b, Options{ContextWindow: 8000, ProtectedTurns: 4, noSync: true})
	msgs := chat(10000, t0)
	for i := 0; i < len(msgs); i += 500 {
		ingest(b, s, "c", msgs[i:i+500])
	}
	c, err := s.conversation(context.Background(), "c", false)
	if err != nil {
		b.Fatal(err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b.ReportAllocs()
	for b.Loop() {
		_ = c.fork()
	}
}
