package proxy

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Token usage across paging rounds. When the proxy answers the model's
// paging calls itself, the client sees one answer but the upstream billed
// several requests: the usage the client gets is the sum of every round's,
// so its cost accounting stays true. Usage objects sit at the same places
// in the three formats' answers and stream events:
//
//	OpenAI     usage                       (answer; last chunk with include_usage)
//	Anthropic  usage, message.usage        (answer, message_delta; message_start)
//	Gemini     usageMetadata               (answer and each chunk)
//
// Numbers are summed field by field (nested objects such as
// prompt_tokens_details too); within one round the last value seen for a
// field wins, as streamed usage is cumulative.

// usage maps a dotted field path ("prompt_tokens_details.cached_tokens") to
// its count.
type usage map[string]int64

var usagePaths = [][]string{{"usage"}, {"message", "usage"}, {"usageMetadata"}}

// observe records the usage objects of one JSON document (an answer or a
// stream event's data) into u, last value per field winning.
func (u usage) observe(doc []byte) {
	var v map[string]any
	if err := unmarshalNumbers(doc, &v); err != nil {
		return
	}
	for _, p := range usagePaths {
		if obj, ok := lookup(v, p).(map[string]any); ok {
			flatten("", obj, u)
		}
	}
}

// add sums o into u.
func (u usage) add(o usage) {
	for k, n := range o {
		u[k] += n
	}
}

// bump adds prior to every usage field of doc and returns the new
// document (doc itself when there is nothing to change).
func (prior usage) bump(doc []byte) []byte {
	if len(prior) == 0 {
		return doc
	}
	var v map[string]any
	if err := unmarshalNumbers(doc, &v); err != nil {
		return doc
	}
	changed := false
	for _, p := range usagePaths {
		if obj, ok := lookup(v, p).(map[string]any); ok {
			changed = bumpObject("", obj, prior) || changed
		}
	}
	if !changed {
		return doc
	}
	out, err := marshal(v)
	if err != nil {
		return doc
	}
	return out
}

// bumpEvent applies bump to the data of one SSE event. An Anthropic
// message_delta also gets the fields it lacks (input_tokens) as totals
// over the rounds (prior plus this round so far, round): the client saw the
// first round's message_start only, and the SDKs take a message_delta's
// usage fields as the message's final counts.
func (prior usage) bumpEvent(ev []byte, round usage) []byte {
	if len(prior) == 0 {
		return ev
	}
	lines := bytes.Split(ev, []byte("\n"))
	changed := false
	for i, l := range lines {
		data, ok := bytes.CutPrefix(l, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		nd := prior.bump(data)
		if bytes.Contains(data, []byte(`"message_delta"`)) {
			nd = fillDelta(nd, prior, round)
		}
		if !bytes.Equal(nd, data) {
			lines[i] = append([]byte("data: "), nd...)
			changed = true
		}
	}
	if !changed {
		return ev
	}
	return bytes.Join(lines, []byte("\n"))
}

// fillDelta adds to a message_delta's usage the top-level fields it lacks,
// as prior+round totals.
func fillDelta(doc []byte, prior, round usage) []byte {
	var v map[string]any
	if err := unmarshalNumbers(doc, &v); err != nil || v["type"] != "message_delta" {
		return doc
	}
	u, ok := v["usage"].(map[string]any)
	if !ok {
		return doc
	}
	changed := false
	for _, src := range []usage{prior, round} {
		for k := range src {
			if strings.Contains(k, ".") {
				continue
			}
			if _, has := u[k]; !has {
				u[k] = json.Number(jsonInt(prior[k] + round[k]))
				changed = true
			}
		}
	}
	if !changed {
		return doc
	}
	out, err := marshal(v)
	if err != nil {
		return doc
	}
	return out
}

func unmarshalNumbers(doc []byte, v *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	return dec.Decode(v)
}

func lookup(v map[string]any, path []string) any {
	var cur any = v
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func flatten(prefix string, obj map[string]any, into usage) {
	for k, x := range obj {
		key := prefix + k
		switch n := x.(type) {
		case json.Number:
			if i, err := n.Int64(); err == nil {
				into[key] = i
			}
		case map[string]any:
			flatten(key+".", n, into)
		}
	}
}

func bumpObject(prefix string, obj map[string]any, prior usage) bool {
	changed := false
	for k, x := range obj {
		key := prefix + k
		switch n := x.(type) {
		case json.Number:
			if add := prior[key]; add != 0 {
				if i, err := n.Int64(); err == nil {
					obj[k] = json.Number(strings.TrimSpace(jsonInt(i + add)))
					changed = true
				}
			}
		case map[string]any:
			changed = bumpObject(key+".", n, prior) || changed
		}
	}
	return changed
}

func jsonInt(i int64) string {
	b, _ := json.Marshal(i)
	return string(b)
}
