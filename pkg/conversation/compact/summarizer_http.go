package compact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HTTPConfig configures a summarizer that calls a model provider over HTTP.
type HTTPConfig struct {
	// Endpoint is the provider's base URL, e.g. https://api.openai.com or
	// https://api.anthropic.com. The API path (/v1/chat/completions, /v1/messages) is appended
	// unless the URL already ends with it; a base URL ending in /v1 gets only the rest.
	Endpoint string
	// Model is sent as the request's model.
	Model string
	// APIKey is sent as the provider expects it (Authorization: Bearer, or x-api-key). It may be
	// empty for local OpenAI-compatible servers that need no key.
	APIKey string
	// HTTPClient defaults to a client with no overall timeout (AttemptTimeout bounds each try).
	HTTPClient *http.Client
	// AttemptTimeout bounds one HTTP attempt, including reading the body. Default 120s: a
	// summary of a long history by a large model can take a minute or more.
	AttemptTimeout time.Duration
	// MaxAttempts is the number of tries, the first included. Default 4.
	MaxAttempts int
	// InitialBackoff is the wait before the second try; it doubles per try up to MaxBackoff,
	// with jitter. Defaults 1s and 30s. A Retry-After from the server replaces the computed wait.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// AnthropicVersion is the anthropic-version header. Default 2023-06-01.
	AnthropicVersion string
}

const (
	defaultAttemptTimeout   = 120 * time.Second
	defaultMaxAttempts      = 4
	defaultInitialBackoff   = time.Second
	defaultMaxBackoff       = 30 * time.Second
	defaultAnthropicVersion = "2023-06-01"
	// maxResponseBytes bounds what is read from a provider: a summary is a few KiB.
	maxResponseBytes = 4 << 20
	// maxProviderMessage bounds the provider's error message quoted in our errors.
	maxProviderMessage = 300
)

func (c HTTPConfig) withDefaults() HTTPConfig {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = defaultAttemptTimeout
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = defaultMaxAttempts
	}
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = defaultInitialBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = defaultMaxBackoff
	}
	if c.AnthropicVersion == "" {
		c.AnthropicVersion = defaultAnthropicVersion
	}
	return c
}

// resolveEndpoint appends apiPath ("/v1/chat/completions") to base unless base already ends
// with it; a base ending in "/v1" gets only the part after "/v1".
func resolveEndpoint(base, apiPath string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return nil, fmt.Errorf("invalid endpoint: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("invalid endpoint %q: want an http(s) URL with a host", redactURL(u))
	}
	p := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(p, apiPath):
	case strings.HasSuffix(p, "/v1"):
		p += strings.TrimPrefix(apiPath, "/v1")
	default:
		p += apiPath
	}
	u.Path, u.RawPath = p, ""
	return u, nil
}

// redactURL drops credentials and the query, which may hold keys, from a URL quoted in errors.
func redactURL(u *url.URL) string {
	r := *u
	r.User, r.RawQuery, r.Fragment = nil, "", ""
	return r.String()
}

// APIError reports a provider call that failed. It never holds conversation content: only the
// status, the endpoint and the provider's own error type and (truncated) message.
type APIError struct {
	Provider   string // "openai" or "anthropic"
	Endpoint   string // the URL called, without credentials or query
	StatusCode int    // HTTP status; 0 when no response arrived
	Type       string // the provider's error type or code, when it sent one
	Message    string // the provider's error message, truncated; or the transport error
	Attempts   int    // tries made
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "summarizer %s: POST %s", e.Provider, e.Endpoint)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	if e.Type != "" {
		fmt.Fprintf(&b, ": %s", e.Type)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	fmt.Fprintf(&b, " (after %d attempt", e.Attempts)
	if e.Attempts != 1 {
		b.WriteByte('s')
	}
	b.WriteByte(')')
	return b.String()
}

// httpCaller posts JSON to one provider endpoint with timeouts and retries.
type httpCaller struct {
	provider string
	endpoint *url.URL
	headers  http.Header
	cfg      HTTPConfig
	// decodeError extracts the provider's error type and message from an error body.
	decodeError func(body []byte) (typ, msg string)
	// sleep waits between attempts; tests replace it to observe the waits.
	sleep func(ctx context.Context, d time.Duration) error
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// post sends body and decodes a 2xx response into out, retrying what may succeed on a later
// try: transport errors, attempt timeouts, 408, 409, 429 and 5xx (unless the server says
// x-should-retry: false).
// It returns the answer's status and the number of attempts made.
func (c *httpCaller) post(ctx context.Context, body []byte, out any) (answered, error) {
	var last *attemptError
	for attempt := 1; attempt <= c.cfg.MaxAttempts; attempt++ {
		respBody, status, apiErr, retryAfter := c.attempt(ctx, body)
		if apiErr == nil {
			a := answered{status: status, attempts: attempt}
			if err := json.Unmarshal(respBody, out); err != nil {
				return a, c.answerError(a, "undecodable response body: "+jsonErrorKind(err))
			}
			return a, nil
		}
		apiErr.Attempts = attempt
		last = apiErr
		if !apiErr.retryable || attempt == c.cfg.MaxAttempts || ctx.Err() != nil {
			break
		}
		wait := retryAfter
		if wait <= 0 {
			wait = backoff(c.cfg.InitialBackoff, c.cfg.MaxBackoff, attempt)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			break // the caller's deadline passes before the next try could start
		}
		if err := c.sleep(ctx, wait); err != nil {
			break
		}
	}
	return answered{status: last.StatusCode, attempts: last.Attempts}, &last.APIError
}

// answered is the 2xx answer post got: its status (any 2xx, not only 200) and the attempts
// it took.
type answered struct{ status, attempts int }

// answerError reports a 2xx response that holds no usable answer.
func (c *httpCaller) answerError(a answered, msg string) *APIError {
	return &APIError{
		Provider: c.provider, Endpoint: redactURL(c.endpoint), StatusCode: a.status,
		Message: msg, Attempts: a.attempts,
	}
}

// attemptError is an APIError plus whether trying again may help.
type attemptError struct {
	APIError
	retryable bool
}

// attempt makes one HTTP call. It returns the body and status of a 2xx response, or the
// error and the wait the server asked for (0 when it did not).
func (c *httpCaller) attempt(ctx context.Context, body []byte) ([]byte, int, *attemptError, time.Duration) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	fail := func(status int, typ, msg string, retryable bool) *attemptError {
		return &attemptError{APIError: APIError{
			Provider: c.provider, Endpoint: redactURL(c.endpoint), StatusCode: status, Type: typ, Message: msg,
		}, retryable: retryable}
	}
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return nil, 0, fail(0, "", err.Error(), false), 0
	}
	for k, v := range c.headers {
		req.Header[k] = v
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		// Retry unless the caller gave up; an attempt timeout or a dropped connection may pass.
		return nil, 0, fail(0, "", transportErrorMessage(ctx, actx, err), ctx.Err() == nil), 0
	}
	defer func() { _ = resp.Body.Close() }()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, 0, fail(resp.StatusCode, "", "reading response: "+transportErrorMessage(ctx, actx, err), ctx.Err() == nil), 0
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return respBody, resp.StatusCode, nil, 0
	}
	typ, msg := c.decodeError(respBody)
	return nil, 0, fail(resp.StatusCode, typ, truncate(msg, maxProviderMessage), retryableStatus(resp)), retryAfter(resp.Header)
}

func transportErrorMessage(parent, attempt context.Context, err error) string {
	switch {
	case parent.Err() != nil:
		return "canceled: " + parent.Err().Error()
	case errors.Is(attempt.Err(), context.DeadlineExceeded):
		return "attempt timed out"
	}
	// url.Error repeats the method and URL, which APIError already says.
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func retryableStatus(resp *http.Response) bool {
	switch resp.Header.Get("x-should-retry") {
	case "true":
		return true
	case "false":
		return false
	}
	s := resp.StatusCode
	return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// backoff is the wait after the given failed attempt (1-based): initial·2^(attempt-1), capped,
// with up to half of it replaced by jitter so that many clients do not retry in lockstep.
func backoff(initial, ceiling time.Duration, attempt int) time.Duration {
	d := initial
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	half := d / 2
	return half + rand.N(half+1) //nolint:gosec // jitter, not security
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// jsonErrorKind describes a decoding error without quoting the input.
func jsonErrorKind(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at offset %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q has type %s, want %s", typ.Field, typ.Value, typ.Type)
	default:
		return "invalid JSON"
	}
}
