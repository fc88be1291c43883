package mcp

import (
	"encoding/json"

	"context"
	"fmt"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"testing"

	"github.com/vc-mcp/vc-mcp/memory"
)

// manyTags is a memory with 123 tags and 40 quotes for every query.
type manyTags struct{ *fakeMemory }

func (m manyTags) Status(ctx context.Context, id string) (memory.Status, error) {
	st := memory.Status{ConversationID: conv(id)}
	for i := range 123 {
		st.Tags = append(st.Tags, memory.TagStatus{Tag: fmt.Sprintf("tag-%03d", i), Turns: 200 - i})
	}
	return st, nil
}

func (m manyTags) FindQuote(ctx context.Context, req memory.FindQuoteRequest) (memory.FindQuoteResult, error) {
	res := memory.FindQuoteResult{Query: req.Query}
	for i := range min(40, req.MaxResults) {
		res.Quotes = append(res.Quotes, memory.Quote{TurnID: fmt.Sprintf("t%d", i+1), Excerpt: "hit"})
	}
	return res, nil
}

func TestDomainStatusPages(t *testing.T) {
	c := startClient(t, manyTags{newFakeMemory()})
	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		args := map[string]any{"conversation_id": "big", "limit": 50}
		if cursor != "" {
			args["cursor"] = cursor
		}
		res := callTool(t, c, "domain_status", args)
		if res.IsError {
			t.Fatalf("domain_status: %s", firstText(t, res))
		}
		var page StatusPage
		decodeStructured(t, res, &page)
		pages++
		if page.TotalTags != 123 || len(page.Tags) > 50 {
			t.Fatalf("page %d: total %d, %d tags; want 123 and at most 50", pages, page.TotalTags, len(page.Tags))
		}
		for _, tg := range page.Tags {
			if seen[tg.Tag] {
				t.Fatalf("tag %s on two pages", tg.Tag)
			}
			seen[tg.Tag] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if pages != 3 || len(seen) != 123 {
		t.Errorf("got %d pages and %d tags, want 3 and 123", pages, len(seen))
	}
	for _, tt := range []struct {
		name string
		args map[string]any
	}{
		{"garbage cursor", map[string]any{"cursor": "not-a-cursor"}},
		{"another conversation's cursor", map[string]any{"conversation_id": "other", "cursor": encodeCursor("domain_status", 50, fingerprint("big"))}},
		{"a find_quote cursor", map[string]any{"conversation_id": "big", "cursor": encodeCursor("find_quote", 5, fingerprint("big"))}},
		{"limit too large", map[string]any{"limit": 501}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if res := callTool(t, c, "domain_status", tt.args); !res.IsError {
				t.Errorf("got no tool error for %v", tt.args)
			}
		})
	}
}

func TestFindQuotePages(t *testing.T) {
	c := startClient(t, manyTags{newFakeMemory()})
	var ids []string
	cursor := ""
	for range 10 {
		args := map[string]any{"query": "hit", "max_results": 15}
		if cursor != "" {
			args["cursor"] = cursor
		}
		res := callTool(t, c, "find_quote", args)
		if res.IsError {
			t.Fatalf("find_quote: %s", firstText(t, res))
		}
		var page FindQuotePage
		decodeStructured(t, res, &page)
		for _, q := range page.Quotes {
			ids = append(ids, q.TurnID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(ids) != 40 || ids[0] != "t1" || ids[15] != "t16" || ids[39] != "t40" {
		t.Errorf("paged ids: got %d (%v), want t1..t40 in order", len(ids), ids)
	}
	if res := callTool(t, c, "find_quote", map[string]any{"query": "other words", "max_results": 15, "cursor": encodeCursor("find_quote", 15, fingerprint("default", "hit", "", "", "", "conversation"))}); !res.IsError {
		t.Errorf("a cursor of another query was accepted")
	}
}

// hugeLists has 450 tags and 450 conversations.
type hugeLists struct{ *fakeMemory }

func (m hugeLists) Status(ctx context.Context, id string) (memory.Status, error) {
	st := memory.Status{ConversationID: conv(id)}
	for i := range 450 {
		st.Tags = append(st.Tags, memory.TagStatus{Tag: fmt.Sprintf("tag-%03d", i)})
	}
	return st, nil
}

func (m hugeLists) Conversations(ctx context.Context) ([]memory.ConversationInfo, error) {
	var out []memory.ConversationInfo
	for i := range 450 {
		out = append(out, memory.ConversationInfo{ID: fmt.Sprintf("c%03d", i)})
	}
	return out, nil
}

func TestResourcePages(t *testing.T) {
	c := startClient(t, hugeLists{newFakeMemory()})
	read := func(uri string, dst any) {
		t.Helper()
		req := mcpgo.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := c.ReadResource(context.Background(), req)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		tc, ok := res.Contents[0].(mcpgo.TextResourceContents)
		if !ok {
			t.Fatalf("read %s: %T", uri, res.Contents[0])
		}
		if err := json.Unmarshal([]byte(tc.Text), dst); err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	seen := map[string]bool{}
	for uri := "virtualcontext://domains?conversation=big"; uri != ""; {
		var d domainList
		read(uri, &d)
		sizes = append(sizes, len(d.Tags))
		for _, tg := range d.Tags {
			seen[tg.Tag] = true
		}
		uri = d.NextURI
	}
	if fmt.Sprint(sizes) != "[200 200 50]" || len(seen) != 450 {
		t.Errorf("domains pages: got %v (%d distinct), want [200 200 50] (450)", sizes, len(seen))
	}
	sizes = nil
	for uri := "virtualcontext://conversations"; uri != ""; {
		var l conversationList
		read(uri, &l)
		sizes = append(sizes, len(l.Conversations))
		uri = l.NextURI
	}
	if fmt.Sprint(sizes) != "[200 200 50]" {
		t.Errorf("conversations pages: got %v, want [200 200 50]", sizes)
	}
	req := mcpgo.ReadResourceRequest{}
	req.Params.URI = "virtualcontext://conversations?cursor=bogus"
	if _, err := c.ReadResource(context.Background(), req); err == nil {
		t.Errorf("a bogus cursor was accepted")
	}
}
