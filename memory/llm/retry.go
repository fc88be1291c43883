package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxBody bounds a provider's answer; anything longer is an error.
const maxBody = 8 << 20

// Retry tunes the retry loop of the HTTP providers. Zero fields take defaults.
type Retry struct {
	// MaxRetries after the first attempt.
	MaxRetries int
	// Timeout bounds each attempt.
	Timeout time.Duration
	// BaseBackoff is the first wait (default 500ms); each retry doubles it,
	// up to MaxBackoff (default 30s), with jitter.
	BaseBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps a server's Retry-After (default 2m); a longer
	// demand ends the retries.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx ends (tests replace it). Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (r Retry) withDefaults() Retry {
	if r.MaxRetries < 0 {
		r.MaxRetries = 0
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	if r.BaseBackoff <= 0 {
		r.BaseBackoff = 500 * time.Millisecond
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = 30 * time.Second
	}
	if r.MaxRetryAfter <= 0 {
		r.MaxRetryAfter = 2 * time.Minute
	}
	if r.Sleep == nil {
		r.Sleep = sleep
	}
	return r
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff is the wait before retry number attempt (0-based): exponential
// with "equal jitter" (half fixed, half random), so synchronized clients
// spread out but never retry at once.
func (r Retry) backoff(attempt int) time.Duration {
	d := r.BaseBackoff << min(attempt, 20)
	if d <= 0 || d > r.MaxBackoff {
		d = r.MaxBackoff
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(h, 64); err == nil {
		if secs < 0 {
			return 0, true
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(h); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// poster sends JSON POSTs with timeouts and retries.
type poster struct {
	provider string
	client   *http.Client
	retry    Retry
}

// errorMessage digs the human message out of an OpenAI- or Anthropic-style
// error body ({"error": {"message": ...}}), or returns a short raw excerpt.
func errorMessage(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return s
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// post sends body to url and returns the 2xx answer's body. 429, 5xx,
// timeouts, connection failures and cut-off bodies are retried; other
// answers are returned at once as *HTTPError.
func (p *poster) post(ctx context.Context, url string, header http.Header, body []byte) ([]byte, error) {
	var last error
	for attempt := 0; ; attempt++ {
		out, wait, retryable, err := p.once(ctx, url, header, body)
		if err == nil {
			return out, nil
		}
		last = err
		if !retryable || ctx.Err() != nil {
			return nil, err
		}
		if attempt >= p.retry.MaxRetries {
			break
		}
		if wait < 0 {
			wait = p.retry.backoff(attempt)
		} else if wait > p.retry.MaxRetryAfter {
			return nil, fmt.Errorf("%w (server asked to wait %s, more than %s)", err, wait.Round(time.Second), p.retry.MaxRetryAfter)
		}
		if err := p.retry.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("%s: waiting to retry: %w", p.provider, err)
		}
	}
	if !errors.Is(last, ErrRateLimited) && !errors.Is(last, ErrServer) {
		last = fmt.Errorf("%w: %w", last, ErrServer)
	}
	return nil, fmt.Errorf("after %d attempts: %w", p.retry.MaxRetries+1, last)
}

// once makes one attempt. wait is the server's Retry-After, or -1.
func (p *poster) once(ctx context.Context, url string, header http.Header, body []byte) (out []byte, wait time.Duration, retryable bool, err error) {
	actx, cancel := context.WithTimeout(ctx, p.retry.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, -1, false, fmt.Errorf("%s: build request: %w: %w", p.provider, err, ErrRejected)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, false, fmt.Errorf("%s: %w", p.provider, ctx.Err())
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, -1, true, fmt.Errorf("%s: no answer within %s: %w", p.provider, p.retry.Timeout, ErrServer)
		}
		return nil, -1, true, fmt.Errorf("%s: %w: %w", p.provider, err, ErrServer)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, false, fmt.Errorf("%s: %w", p.provider, ctx.Err())
		}
		return nil, -1, true, fmt.Errorf("%s: reading answer (HTTP %d): %w: %w", p.provider, resp.StatusCode, err, ErrServer)
	}
	if len(data) > maxBody {
		return nil, -1, false, fmt.Errorf("%s: answer larger than %d bytes: %w", p.provider, maxBody, ErrBadResponse)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return data, -1, false, nil
	}
	herr := &HTTPError{Provider: p.provider, Status: resp.StatusCode, Message: errorMessage(data)}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return nil, d, true, herr
		}
		return nil, -1, true, herr
	}
	return nil, -1, false, herr
}
