package tagging_test

import (
	"context"
	"fmt"
	"time"

	"github.com/vc-mcp/vc-mcp/memory/tagging"
)

func ExampleKeyword_Tag() {
	k := tagging.NewKeyword(nil)
	vocab := map[string]int{}
	var prev []string
	for _, text := range []string{
		"We need to migrate our Postgres database before the end of the quarter.",
		"The databases are 800 GB in total.",
		"ok thanks!",
	} {
		r, _ := k.Tag(context.Background(), tagging.Input{Text: text, Vocabulary: vocab, Previous: prev})
		for _, t := range r.Tags {
			vocab[t]++
		}
		prev = r.Tags
		fmt.Println(r.Primary, r.Tags, r.Source)
	}
	// Output:
	// postgres [postgres postgres-database quarter database] keyword
	// postgres [postgres database] keyword
	// postgres [postgres database] inherited
}

func ExampleClassifyQuery() {
	now := time.Date(2023, 6, 15, 10, 0, 0, 0, time.UTC)
	q := tagging.ClassifyQuery("What did Caroline say about the support group in May 2023?", now)
	fmt.Println(q.Broad, q.Temporal, q.Since.Format(time.DateOnly), q.Until.Format(time.DateOnly), q.Speakers, q.Terms)
	// Output:
	// false true 2023-05-01 2023-06-01 [Caroline] [caroline support group]
}

func ExampleCanonicalize() {
	aliases := map[string]string{"db": "database"}
	for _, tag := range []string{"Database Migrations", "queries", "news", "status", "DB"} {
		fmt.Println(tagging.Canonicalize(tag, aliases))
	}
	// Output:
	// database-migration
	// query
	// news
	// status
	// database
}
