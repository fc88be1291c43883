package mcp

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vc-mcp/vc-mcp/memory"
)

func TestDecodeCompact(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		wantN   int
		wantErr string
	}{
		{"string content", `{"messages":[{"role":"user","content":"hi"}]}`, 1, ""},
		{"blocks and tool calls", `{"conversation_id":"a.b:c-d_e","force":true,"messages":[{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"1","name":"f","input":{}}]},{"role":"tool","content":[{"type":"tool_result","tool_use_id":"1","content":"ok"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, 3, ""},
		{"extra message fields ignored", `{"messages":[{"role":"user","content":"hi","id":"m1","annotations":[]}]}`, 1, ""},
		{"null arguments", `null`, 0, "messages: required"},
		{"invalid utf8", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 0, "not valid UTF-8"},
		{"trailing data", `{"messages":[{"role":"user","content":"x"}]} {}`, 0, "single JSON object"},
		{"not json", `{"messages":`, 0, "not valid JSON"},
		{"message not object", `{"messages":["hi"]}`, 0, "messages[0]: must be an object"},
		{"role wrong type", `{"messages":[{"role":1,"content":"x"}]}`, 0, "messages[0].role: must be a string, got number"},
		{"force wrong type", `{"force":"yes","messages":[{"role":"user","content":"x"}]}`, 0, "force: must be true or false, got string"},
		{"too many", `{"messages":[` + strings.Repeat(`{"role":"user","content":"x"},`, 1000) + `{"role":"user","content":"x"}]}`, 0, "got 1001"},
		{"slash in id", `{"conversation_id":"a/b","messages":[{"role":"user","content":"x"}]}`, 0, "conversation_id"},
		{"backslash in id", `{"conversation_id":"a\\b","messages":[{"role":"user","content":"x"}]}`, 0, "conversation_id"},
		{"dot id", `{"conversation_id":".","messages":[{"role":"user","content":"x"}]}`, 0, "conversation_id"},
		{"long id", `{"conversation_id":"` + strings.Repeat("a", 129) + `","messages":[{"role":"user","content":"x"}]}`, 0, "conversation_id"},
		{"max id", `{"conversation_id":"` + strings.Repeat("a", 128) + `","messages":[{"role":"user","content":"x"}]}`, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeCompact([]byte(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				var ae *argError
				if !errors.As(err, &ae) {
					t.Errorf("got %T, want *argError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if len(got.Messages) != tt.wantN {
				t.Errorf("got %d messages, want %d", len(got.Messages), tt.wantN)
			}
		})
	}
}

func TestDecodeOthers(t *testing.T) {
	tests := []struct {
		name    string
		decode  func([]byte) (any, error)
		raw     string
		want    any
		wantErr string
	}{
		{"recall defaults", wrap(decodeRecall), `{"message":"hi"}`, memory.RecallRequest{Message: "hi", MaxTokens: 2000, Scope: memory.ScopeConversation}, ""},
		{"recall all", wrap(decodeRecall), `{"message":"hi","scope":"all","max_tokens":100}`, memory.RecallRequest{Message: "hi", MaxTokens: 100, Scope: memory.ScopeAll}, ""},
		{"recall tokens low", wrap(decodeRecall), `{"message":"hi","max_tokens":99}`, nil, "max_tokens: must be between 100 and 32000, got 99"},
		{"recall huge tokens", wrap(decodeRecall), `{"message":"hi","max_tokens":1e40}`, nil, "max_tokens: must be an integer"},
		{"expand defaults", wrap(decodeExpand), `{"tag":" travel "}`, memory.ExpandRequest{Tag: "travel", Depth: memory.DepthSegments, MaxTokens: 4000}, ""},
		{"expand full", wrap(decodeExpand), `{"tag":"t","depth":"full","max_tokens":32000}`, memory.ExpandRequest{Tag: "t", Depth: memory.DepthFull, MaxTokens: 32000}, ""},
		{"expand missing tag", wrap(decodeExpand), `{}`, nil, "tag: required"},
		{"collapse none", wrap(decodeCollapse), `{"tag":"t","depth":"none"}`, memory.CollapseRequest{Tag: "t", Depth: memory.DepthNone}, ""},
		{"collapse bad depth", wrap(decodeCollapse), `{"tag":"t","depth":"full"}`, nil, "depth: must be \"summary\" or \"none\""},
		{"find defaults", wrap(decodeFindQuote), `{"query":"q"}`, memory.FindQuoteRequest{Query: "q", MaxResults: 5, Scope: memory.ScopeConversation}, ""},
		{"find window", wrap(decodeFindQuote), `{"query":"q","since":"2025-01-01T00:00:00Z","until":"2025-02-01T00:00:00+01:00","speaker":" Alice ","max_results":50}`,
			memory.FindQuoteRequest{Query: "q", MaxResults: 50, Since: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2025, 2, 1, 0, 0, 0, 0, time.FixedZone("", 3600)), Speaker: "Alice", Scope: memory.ScopeConversation}, ""},
		{"find zero results", wrap(decodeFindQuote), `{"query":"q","max_results":0}`, nil, "max_results: must be between 1 and 50, got 0"},
		{"status empty", wrap(decodeStatus), `{}`, "", ""},
		{"status id", wrap(decodeStatus), `{"conversation_id":"chat-1"}`, "chat-1", ""},
		{"status unknown", wrap(decodeStatus), `{"conversation":"chat-1"}`, nil, "unknown argument \"conversation\"; allowed: conversation_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.decode([]byte(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if fq, ok := got.(memory.FindQuoteRequest); ok {
				w := tt.want.(memory.FindQuoteRequest)
				if !fq.Since.Equal(w.Since) || !fq.Until.Equal(w.Until) {
					t.Errorf("got since/until %v/%v, want %v/%v", fq.Since, fq.Until, w.Since, w.Until)
				}
				fq.Since, fq.Until, w.Since, w.Until = time.Time{}, time.Time{}, time.Time{}, time.Time{}
				got, tt.want = fq, w
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func wrap[T any](f func([]byte) (T, error)) func([]byte) (any, error) {
	return func(b []byte) (any, error) {
		v, err := f(b)
		return v, err
	}
}

// checkDecoded holds for every successfully decoded request: what reaches
// memory is within the published limits.
func checkDecoded(t *testing.T, conv string) {
	t.Helper()
	if err := checkConversationID(conv); err != nil {
		t.Fatalf("decoded an invalid conversation id %q", conv)
	}
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	var ae *argError
	if !errors.As(err, &ae) {
		t.Fatalf("got %T %v, want *argError", err, err)
	}
	if !utf8.ValidString(ae.msg) {
		t.Fatalf("error message is not UTF-8: %q", ae.msg)
	}
}

func seeds(f *testing.F, extra ...string) {
	for _, s := range append(extra, `{}`, `null`, `[]`, `{"conversation_id":".."}`, "{\"x\":\"\xff\"}", `{"conversation_id":"a","max_tokens":1e999}`) {
		f.Add([]byte(s))
	}
}

func FuzzDecodeCompact(f *testing.F) {
	seeds(f, `{"messages":[{"role":"user","content":"hi","timestamp":"2025-01-01T00:00:00Z"}]}`,
		`{"messages":[{"role":"assistant","content":[{"type":"text","text":"x"}],"tool_calls":[{"id":"1"}]}],"force":true}`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decodeCompact(raw)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, req.ConversationID)
		if n := len(req.Messages); n < minMessages || n > maxMessages {
			t.Fatalf("decoded %d messages", n)
		}
	})
}

func FuzzDecodeCompactMessages(f *testing.F) {
	seeds(f, `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"keep_last":1,"use_simple_prompt":true}`,
		`{"messages":[{"role":"user","content":"x","id":"vc-summary-1"}],"notify_user":false,"only_over_threshold":true,"keep_last":-3}`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decodeCompactMessages(raw)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, req.ConversationID)
		if n := len(req.Messages); n < minMessages || n > maxMessages {
			t.Fatalf("decoded %d messages", n)
		}
		if req.KeepLast != nil && (*req.KeepLast < 0 || *req.KeepLast > memory.MaxKeepLast) {
			t.Fatalf("decoded keep_last %d", *req.KeepLast)
		}
	})
}

func FuzzDecodeRecall(f *testing.F) {
	seeds(f, `{"message":"hi","max_tokens":500,"scope":"all"}`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decodeRecall(raw)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, req.ConversationID)
		if req.MaxTokens < minMaxTokens || req.MaxTokens > maxMaxTokens || req.Message == "" {
			t.Fatalf("decoded %+v", req)
		}
	})
}

func FuzzDecodeExpand(f *testing.F) {
	seeds(f, `{"tag":"travel","depth":"full","max_tokens":1000}`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decodeExpand(raw)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, req.ConversationID)
		if req.Tag == "" || (req.Depth != memory.DepthSegments && req.Depth != memory.DepthFull) {
			t.Fatalf("decoded %+v", req)
		}
	})
}

func FuzzDecodeCollapse(f *testing.F) {
	seeds(f, `{"tag":"travel","depth":"none"}`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decodeCollapse(raw)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, req.ConversationID)
		if req.Tag == "" || (req.Depth != memory.DepthSummary && req.Depth != memory.DepthNone) {
			t.Fatalf("decoded %+v", req)
		}
	})
}

func FuzzDecodeFindQuote(f *testing.F) {
	seeds(f, `{"query":"lisbon","since":"2025-01-01T00:00:00Z","until":"2026-01-01T00:00:00Z","max_results":50,"speaker":"Alice"}`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decodeFindQuote(raw)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, req.ConversationID)
		if req.Query == "" || req.MaxResults < 1 || req.MaxResults > maxMaxResults {
			t.Fatalf("decoded %+v", req)
		}
	})
}

func FuzzDecodeStatus(f *testing.F) {
	seeds(f, `{"conversation_id":"chat-1"}`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		conv, err := decodeStatus(raw)
		if err != nil {
			checkErr(t, err)
			return
		}
		checkDecoded(t, conv)
	})
}
