package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// APIError reports a provider call that failed. It never holds conversation content, the
// response body or the key: only the status, the endpoint and the provider's own error type
// and (truncated) message. The SDKs' errors are not kept: the Anthropic SDK's Error() quotes
// the whole response body, and both hold the request, whose body is the conversation.
type APIError struct {
	Provider   string // "openai" or "anthropic"
	Endpoint   string // the URL called, without credentials or query
	StatusCode int    // HTTP status; 0 when no response arrived
	Type       string // the provider's error type or code, when it sent one
	Message    string // the provider's error message, truncated; or what went wrong
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

// provider is what the errors of one provider need: its name, the URL called, and how to
// read its error bodies.
type provider struct {
	name     string
	endpoint *url.URL
	// decodeError extracts the provider's error type and message from an error body.
	decodeError func(body []byte) (typ, msg string)
}

// callError turns what an SDK call returned into an *APIError, from what c saw of the last
// answer. The SDK's error only tells which case it is: its text is never used, as it may
// quote the response (the Anthropic SDK's does; a JSON syntax error quotes a character).
func (p *provider) callError(ctx context.Context, c *call, err error) *APIError {
	e := &APIError{Provider: p.name, Endpoint: redactURL(p.endpoint), StatusCode: c.status, Attempts: c.attempts}
	switch {
	case ctx.Err() != nil:
		e.StatusCode, e.Message = 0, "canceled: "+ctx.Err().Error()
	case c.timedOut:
		e.StatusCode, e.Message = 0, errAttemptTimedOut.Error()
	case c.tooLarge:
		e.Message = errResponseTooLarge.Error()
	case c.readErr != nil:
		e.Message = "reading the response: " + c.readErr.Error()
	case c.status >= 400:
		// An SDK error, or one it met reading a body it did not expect (the OpenAI SDK fails
		// on {"error": "text"}, as Ollama sends): the body says more than either.
		typ, msg := p.decodeError(c.errorBody)
		e.Type, e.Message = typ, truncate(msg, maxProviderMessage)
	case c.status >= 200 && c.status < 300:
		e.Message = "undecodable response body: " + jsonErrorKind(err)
	case c.status != 0:
		e.Message = "unexpected answer"
	case c.attempts == 0:
		// The SDK refused before sending (its own checks of the request): no content in it.
		e.Message = err.Error()
	default:
		e.Message = transportErrorMessage(err)
	}
	return e
}

// answerError reports a 2xx answer that holds no usable summary.
func (p *provider) answerError(c *call, msg string) *APIError {
	return &APIError{Provider: p.name, Endpoint: redactURL(p.endpoint), StatusCode: c.status, Message: msg, Attempts: c.attempts}
}

// transportErrorMessage describes an attempt that got no answer. url.Error repeats the
// method and URL (with its query), which APIError already says without the query.
func transportErrorMessage(err error) string {
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// jsonErrorKind describes a decoding error without quoting the input.
func jsonErrorKind(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at offset %d", syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q has type %s, want %s", typ.Field, typ.Value, typ.Type)
		}
		return fmt.Sprintf("a JSON %s, want an object", typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "truncated JSON"
	default:
		return "invalid JSON"
	}
}

// truncate bounds a provider's text quoted in our errors: valid UTF-8 (a provider may send
// any bytes, and an SDK may keep them), trimmed, at most n bytes and an ellipsis.
func truncate(s string, n int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
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

// quoteOrNone names a provider's stop or finish reason, bounded like any text it sends.
func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return truncate(s, maxProviderReason)
}
