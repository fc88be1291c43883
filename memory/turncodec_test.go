package memory

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// fullTurn has every field of turnMeta set, so that a field added to
// turnMeta without a place in the binary form fails the round trip.
func fullTurn() turnMeta {
	return turnMeta{
		Seq: 1234, Role: "assistant", Name: "Ana", When: time.Date(2025, 6, 7, 8, 9, 10, 123456789, time.FixedZone("", 2*3600)),
		Start: 98765, End: 99999, Tokens: 321, Tags: []string{"japan", "kyoto-trip"}, Related: []string{"rail"},
		Empty: true, Rule: true, ToolUse: true, ToolResult: true,
		Hash: strings.Repeat("0123456789abcdef", 4), ID: "msg_42", Session: 7, Segment: 99,
		Damaged: true, Question: true, Forgotten: true, TextKey: "fedcba9876543210",
	}
}

func TestTurnCodecRoundTrip(t *testing.T) {
	full := fullTurn()
	v := reflect.ValueOf(full)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Fatalf("fullTurn leaves %s zero: give it a value (and a place in encodeTurn)", v.Type().Field(i).Name)
		}
	}
	plain := turnMeta{Seq: 1, Role: "user", When: t0, Start: 0, End: 120, Tokens: 9, Hash: strings.Repeat("ab", 32), Session: 1}
	odd := plain
	odd.Hash, odd.TextKey, odd.When = "not-hex", "ABCDEF", time.Time{} // upper-case hex is kept as it is
	for name, in := range map[string]turnMeta{"full": full, "plain": plain, "odd": odd} {
		t.Run(name, func(t *testing.T) {
			enc := encodeTurn(&in)
			got, err := decodeTurn(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !got.When.Equal(in.When) || got.When.Format(time.RFC3339Nano) != in.When.Format(time.RFC3339Nano) {
				t.Errorf("when %s, want %s", got.When.Format(time.RFC3339Nano), in.When.Format(time.RFC3339Nano))
			}
			got.When, in.When = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, in) {
				t.Errorf("round trip:\ngot  %+v\nwant %+v", got, in)
			}
			js, _ := json.Marshal(in)
			if name == "plain" && len(enc) > len(js)/2 {
				t.Errorf("binary form %d bytes, JSON %d: want at most half", len(enc), len(js))
			}
			// Every cut is an error, never a panic or a wrong turn.
			for n := 0; n < len(enc); n++ {
				if _, err := decodeTurn(enc[:n]); err == nil {
					t.Fatalf("record cut to %d of %d bytes decoded without error", n, len(enc))
				}
			}
		})
	}
}

func TestSegmentCodec(t *testing.T) {
	full := segmentRec{ID: 12, Primary: "japan", Tags: []string{"japan", "kyoto"}, First: 100, Last: 140,
		Start: t0, End: t0.Add(time.Hour).In(time.FixedZone("", -5*3600)), Summary: "Ana: day 1 in Kyoto.\nAna: day 2 in Nara.",
		SummaryTokens: 14, FullTokens: 900, Entities: []string{"Kyoto", "Nara"}, Decisions: []string{"book the rail pass"},
		Method: "extractive", Version: "extractive-v1", CreatedAt: time.Date(2026, 11, 24, 1, 2, 3, 456789, time.UTC)}
	v := reflect.ValueOf(full)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Fatalf("the test segment leaves %s zero: give it a value (and a place in encodeSegment)", v.Type().Field(i).Name)
		}
	}
	norm := func(r segmentRec) segmentRec {
		r.Start, r.End, r.CreatedAt = r.Start.UTC(), r.End.UTC(), r.CreatedAt.UTC()
		return r
	}
	enc := encodeSegment(&full)
	got, err := decodeSegment(enc)
	if err != nil {
		t.Fatal(err)
	}
	if got.End.Format(time.RFC3339Nano) != full.End.Format(time.RFC3339Nano) || !reflect.DeepEqual(norm(*got), norm(full)) {
		t.Errorf("round trip:\ngot  %+v\nwant %+v", *got, full)
	}
	js, _ := json.Marshal(full)
	if got, err := decodeSegment(js); err != nil || !reflect.DeepEqual(norm(*got), norm(full)) {
		t.Errorf("JSON record: %v %+v", err, got)
	}
	for n := 0; n < len(enc); n++ {
		if _, err := decodeSegment(enc[:n]); err == nil {
			t.Fatalf("record cut to %d of %d bytes decoded without error", n, len(enc))
		}
	}
}

func TestTurnCodecReadsJSON(t *testing.T) {
	in := fullTurn()
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeTurn(js)
	if err != nil {
		t.Fatal(err)
	}
	if !got.When.Equal(in.When) {
		t.Errorf("when %s, want %s", got.When, in.When)
	}
	got.When, in.When = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, in) {
		t.Errorf("JSON record:\ngot  %+v\nwant %+v", got, in)
	}
}

// A data directory whose vc.db holds turns and segments as JSON (written
// before the binary forms) opens and answers as before.
func TestOldJSONTurnsOpen(t *testing.T) {
	dir := t.TempDir()
	before := buildDerivedState(t, dir)
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = db.Update(func(tx *bolt.Tx) error {
		// Topic summaries as JSON, as vc.db held them before putTagSum.
		rb := tx.Bucket(convBucketName("c")).Bucket(bucketTagSums)
		c := rb.Cursor()
		sums := 0
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v[0] != tagSumDeflate {
				t.Fatalf("topic summary %s stored as %q, want the compressed form", k, v[:1])
			}
			r, err := decodeTagSum(v)
			if err != nil {
				return err
			}
			js, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := rb.Put(append([]byte(nil), k...), js); err != nil {
				return err
			}
			sums++
		}
		if sums == 0 {
			t.Fatal("no topic summaries in vc.db")
		}
		return nil
	})
	if err2 := db.Close(); err == nil {
		err = err2
	}
	if err != nil {
		t.Fatal(err)
	}
	// Turns and segments as JSON, one per key, as the first versions
	// stored them.
	n = unblockRecords(t, dir, "c", bucketTurns, func(rec []byte) ([]byte, error) {
		tm, err := decodeTurn(rec)
		if err != nil {
			return nil, err
		}
		return json.Marshal(tm)
	})
	if n == 0 {
		t.Fatal("no turns in vc.db")
	}
	unblockRecords(t, dir, "c", bucketSegments, func(rec []byte) ([]byte, error) {
		r, err := decodeSegment(rec)
		if err != nil {
			return nil, err
		}
		return json.Marshal(r)
	})
	s := openTest(t, Options{Dir: dir, ContextWindow: 1500, ProtectedTurns: 2, Summarizer: &countingSummarizer{fail: true}, Tagger: &countingTagger{fail: true}, Splitter: &refusingSplitter{}})
	compareSnapshots(t, before, observe(t, s, "c"))
	// A new turn is stored in the binary form beside the JSON ones.
	ingest(t, s, "c", []Message{msg("user", "Ana", "One more note about Kyoto.", t0.Add(1000*time.Hour))})
	if _, err := s.Status(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
}
