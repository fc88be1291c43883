package bench

import (
	"fmt"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Counter counts cl100k tokens with the BPE ranks embedded in the binary:
// it never fetches anything.
type Counter struct {
	enc *tiktoken.Tiktoken
}

var loadCl100k = sync.OnceValues(func() (*tiktoken.Tiktoken, error) {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		return nil, fmt.Errorf("load cl100k_base: %w", err)
	}
	return enc, nil
})

// NewCounter returns a cl100k token counter.
func NewCounter() (*Counter, error) {
	enc, err := loadCl100k()
	if err != nil {
		return nil, err
	}
	return &Counter{enc: enc}, nil
}

// Count returns the number of cl100k tokens in s; special-token text counts
// as ordinary text.
func (c *Counter) Count(s string) int {
	if s == "" {
		return 0
	}
	return len(c.enc.EncodeOrdinary(s))
}
