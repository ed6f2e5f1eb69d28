package compact

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"
)

// errAttemptTimedOut ends an attempt that ran out of AttemptTimeout while the caller still
// waits. To the SDKs it is a connection error, which they retry.
var errAttemptTimedOut = errors.New("attempt timed out")

// errResponseTooLarge ends the reading of a body longer than maxResponseBytes.
var errResponseTooLarge = errors.New("response larger than 4 MiB")

// maxErrorBody bounds the error body kept to explain a failed call.
const maxErrorBody = 64 << 10

// call watches the attempts of one SDK call from inside it, as SDK middleware. The SDKs own
// the retry loop; call adds what they lack or do differently from each other:
//   - the attempt timeout, for both alike: the OpenAI SDK does not retry an attempt that ran
//     out of its own per-attempt timeout, the Anthropic SDK does;
//   - no wait past the caller's deadline or MaxRetryWait: such a retryable answer is marked
//     x-should-retry: false, so the SDK returns the server's error at once instead of
//     sleeping until the context ends (the Anthropic SDK honours any Retry-After);
//   - a bound on the body read, and what an error needs: the attempts made, the status and
//     the body of the last answer.
//
// Attempts run one after the other, so call needs no lock.
type call struct {
	attemptTimeout time.Duration
	maxRetryWait   time.Duration

	attempts  int
	status    int         // of the last answer; 0 when none arrived
	timedOut  bool        // the last attempt ran out of attemptTimeout
	tooLarge  bool        // the last answer's body passed maxResponseBytes
	readErr   error       // reading the last answer's body failed
	errorBody []byte      // the start of the last answer's body when its status is >= 400
	header    http.Header // of the last answer
}

func newCall(cfg *HTTPConfig) *call {
	return &call{attemptTimeout: cfg.AttemptTimeout, maxRetryWait: cfg.MaxRetryWait}
}

// middleware has the signature of both SDKs' option.Middleware.
func (c *call) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	c.attempts++
	c.status, c.timedOut, c.tooLarge, c.readErr, c.errorBody, c.header = 0, false, false, nil, nil, nil
	parent := req.Context()
	ctx, cancel := context.WithTimeout(parent, c.attemptTimeout)
	res, err := next(req.WithContext(ctx))
	if err != nil {
		cancel()
		if parent.Err() == nil && ctx.Err() != nil {
			c.timedOut = true
			return nil, errAttemptTimedOut
		}
		return nil, err
	}
	if res.Header == nil {
		res.Header = http.Header{}
	}
	c.status, c.header = res.StatusCode, res.Header
	res.Body = &attemptBody{body: res.Body, call: c, cancel: cancel, attempt: ctx, parent: parent, left: maxResponseBytes}
	if retryableAnswer(res) && !c.mayWait(parent, res.Header) {
		res.Header.Set("X-Should-Retry", "false")
	}
	return res, nil
}

// retryableAnswer is the rule both SDKs apply to an answer: x-should-retry if the server set
// it, else 408, 409, 429 and 5xx.
func retryableAnswer(res *http.Response) bool {
	switch res.Header.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	s := res.StatusCode
	return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
}

// mayWait reports whether the wait the server asked for (none: the SDK's short backoff) fits
// MaxRetryWait and ends before the caller's deadline.
func (c *call) mayWait(ctx context.Context, h http.Header) bool {
	wait := retryAfter(h)
	if wait > c.maxRetryWait {
		return false
	}
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) >= wait
}

// attemptBody is an answer's body: it keeps the attempt's timeout running until the SDK has
// read it, bounds it, and keeps the start of an error body.
type attemptBody struct {
	body            io.ReadCloser
	call            *call
	cancel          context.CancelFunc
	attempt, parent context.Context
	left            int
}

func (b *attemptBody) Read(p []byte) (int, error) {
	if len(p) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	b.left -= n
	if b.call.status >= 400 && len(b.call.errorBody) < maxErrorBody {
		keep := min(n, maxErrorBody-len(b.call.errorBody))
		b.call.errorBody = append(b.call.errorBody, p[:keep]...)
	}
	switch {
	case b.left < 0:
		b.call.tooLarge = true
		return n, errResponseTooLarge
	case err != nil && !errors.Is(err, io.EOF) && b.parent.Err() == nil && b.attempt.Err() != nil:
		b.call.timedOut = true
	case err != nil && !errors.Is(err, io.EOF):
		b.call.readErr = err
	}
	return n, err
}

func (b *attemptBody) Close() error {
	err := b.body.Close()
	b.cancel()
	return err
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an HTTP date), the
// headers both SDKs honour, in their order.
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms > 0 {
		return duration(ms, time.Millisecond)
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 || math.IsNaN(s) {
			return 0
		}
		return duration(s, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// duration is n units, saturated instead of overflowing (a Retry-After of 1e300 is "never").
func duration(n float64, unit time.Duration) time.Duration {
	if d := n * float64(unit); d < math.MaxInt64 {
		return time.Duration(d)
	}
	return math.MaxInt64
}
