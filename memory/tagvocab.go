package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A tags decision names each stored turn's tags; one batch's turns share
// most of theirs (a topic runs over several turns), so each string was
// written again and again: about a fifth of the decisions log at 10,000
// turns. A tags record now lists the tags its turns use more than once in
// "vocab", and a turn names those by their index:
//
//	{"kind":"tags","at":…,"vocab":["garden","mulch"],"turns":[[14,"3ed752b8fd4992ec",[0,1,"project"]],[15,"87749348516a741c",[0,1],["plan"]]]}
//
// A tag used once stays a string, so a record stays readable on its own
// and needs no other record to read. Records without vocab (written
// before) hold strings only; both decode to the same turns.

// vocabRef marks, in memory between decoding a record and resolving its
// vocab, a tag written as an index: the index in decimal after a NUL
// (canonical tags never hold one).
const vocabRef = "\x00"

// appendTagList writes tags as a JSON array: a vocabRef entry as its
// index, any other as a string.
func appendTagList(out []byte, tags []string) []byte {
	out = append(out, '[')
	for i, t := range tags {
		if i > 0 {
			out = append(out, ',')
		}
		if n, ok := strings.CutPrefix(t, vocabRef); ok {
			out = append(out, n...)
			continue
		}
		b, _ := json.Marshal(t) // a string always encodes
		out = append(out, b...)
	}
	return append(out, ']')
}

// parseTagList reads a JSON array of tags and vocab indexes (vocabRef
// entries, resolved by resolveVocab). null is no tags.
func parseTagList(data []byte) ([]string, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	out := make([]string, len(items))
	for i, it := range items {
		it = bytes.TrimSpace(it)
		if len(it) > 0 && it[0] == '"' {
			if err := json.Unmarshal(it, &out[i]); err != nil {
				return nil, err
			}
			continue
		}
		n, err := strconv.Atoi(string(it))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("tag %d: %s is neither a tag nor a vocabulary index", i+1, it)
		}
		out[i] = vocabRef + strconv.Itoa(n)
	}
	return out, nil
}

// internTags returns d with the tags its turns use more than once moved
// into d.Vocab (by first use) and named by index; d's own slices are left
// as they are.
func internTags(d decision) decision {
	if len(d.Turns) == 0 || len(d.Vocab) > 0 {
		return d
	}
	count := map[string]int{}
	var order []string
	for _, t := range d.Turns {
		for _, list := range [][]string{t.Tags, t.Related} {
			for _, tag := range list {
				if count[tag] == 0 {
					order = append(order, tag)
				}
				count[tag]++
			}
		}
	}
	index := map[string]int{}
	var vocab []string
	for _, tag := range order {
		if count[tag] > 1 && !strings.HasPrefix(tag, vocabRef) {
			index[tag] = len(vocab)
			vocab = append(vocab, tag)
		}
	}
	if len(vocab) == 0 {
		return d
	}
	name := func(list []string) []string {
		if len(list) == 0 {
			return list
		}
		out := make([]string, len(list))
		for i, tag := range list {
			if n, ok := index[tag]; ok {
				out[i] = vocabRef + strconv.Itoa(n)
			} else {
				out[i] = tag
			}
		}
		return out
	}
	turns := make([]turnTags, len(d.Turns))
	for i, t := range d.Turns {
		t.Tags, t.Related = name(t.Tags), name(t.Related)
		turns[i] = t
	}
	d.Vocab, d.Turns = vocab, turns
	return d
}

var errVocab = errors.New("tags record names a tag its vocab does not hold")

// resolveVocab puts the strings of d.Vocab back in place of the indexes
// and clears d.Vocab.
func (d *decision) resolveVocab() error {
	for i := range d.Turns {
		for _, list := range [][]string{d.Turns[i].Tags, d.Turns[i].Related} {
			for j, tag := range list {
				n, ok := strings.CutPrefix(tag, vocabRef)
				if !ok {
					continue
				}
				k, err := strconv.Atoi(n)
				if err != nil || k < 0 || k >= len(d.Vocab) {
					return fmt.Errorf("%w: turn %d, index %s of %d", errVocab, d.Turns[i].Seq, n, len(d.Vocab))
				}
				list[j] = d.Vocab[k]
			}
		}
	}
	d.Vocab = nil
	return nil
}

// MarshalJSON writes d with its tags interned (internTags).
func (d decision) MarshalJSON() ([]byte, error) {
	type plain decision // without these methods
	return json.Marshal(plain(internTags(d)))
}

// UnmarshalJSON reads a record with or without vocab.
func (d *decision) UnmarshalJSON(data []byte) error {
	type plain decision
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*d = decision(p)
	return d.resolveVocab()
}
