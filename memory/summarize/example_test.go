package summarize_test

import (
	"context"
	"fmt"

	"github.com/vc-mcp/vc-mcp/memory/summarize"
)

func ExampleExtractive_Summarize() {
	e := summarize.NewExtractive(nil) // pass ExtractiveOptions{Count: ...} for a real tokenizer
	r, err := e.Summarize(context.Background(), summarize.Input{
		Kind: summarize.Segment,
		Tag:  "postgres",
		Tags: []string{"postgres"},
		Turns: []summarize.Turn{
			{Speaker: "Sam", Text: "Our Postgres database is 800 GB. ok thanks!"},
			{Role: "assistant", Text: "Logical replication keeps downtime short. Sounds good."},
			{Speaker: "Sam", Text: "Let's go with logical replication. I'll set up the slots on 16 May 2023."},
		},
		MaxTokens: 60,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Summary)
	fmt.Println(r.Decisions, r.Dates)
	// Output:
	// Sam: Our Postgres database is 800 GB.
	// Assistant: Logical replication keeps downtime short.
	// Sam: Let's go with logical replication. I'll set up the slots on 16 May 2023.
	// [Sam: Let's go with logical replication.] [16 May 2023]
}
