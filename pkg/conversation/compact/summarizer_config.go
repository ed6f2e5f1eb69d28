package compact

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// HTTPConfig configures a summarizer that calls a model provider over HTTP.
type HTTPConfig struct {
	// Endpoint is the provider's base URL, e.g. https://api.openai.com or
	// https://api.anthropic.com. The API path (/v1/chat/completions, /v1/messages) is appended
	// unless the URL already ends with it; a base URL ending in /v1 gets only the rest. A query
	// (e.g. a tenant for a proxy) is sent with every request.
	Endpoint string
	// Model is sent as the request's model.
	Model string
	// APIKey is sent as the provider expects it (Authorization: Bearer, or x-api-key). It may be
	// empty for local OpenAI-compatible servers that need no key. Nothing else is read: not
	// the environment (OPENAI_API_KEY, ANTHROPIC_*), not a profile file.
	APIKey string
	// HTTPClient defaults to a client with no overall timeout (AttemptTimeout bounds each try).
	// Whichever client is used, redirects are not followed (see withDefaults).
	HTTPClient *http.Client
	// AttemptTimeout bounds one HTTP attempt, including reading the body. Default 120s: a
	// summary of a long history by a large model can take a minute or more. An attempt that
	// times out is tried again like a dropped connection.
	AttemptTimeout time.Duration
	// MaxAttempts is the number of tries, the first included. Default 4. Between tries the
	// SDK waits 0.5 s, 1 s, 2 s … (at most 8 s, with jitter) or what the server asked for with
	// Retry-After / retry-after-ms.
	MaxAttempts int
	// MaxRetryWait is the longest wait a server may ask for; a longer Retry-After, or one that
	// ends after the context's deadline, ends the call with the server's error at once (the
	// caller's own backoff takes over). Default 2 minutes.
	MaxRetryWait time.Duration
}

const (
	defaultAttemptTimeout = 120 * time.Second
	defaultMaxAttempts    = 4
	defaultMaxRetryWait   = 2 * time.Minute
	// maxResponseBytes bounds what is read from a provider: a summary is a few KiB.
	maxResponseBytes = 4 << 20
	// maxProviderMessage bounds the provider's error message quoted in our errors.
	maxProviderMessage = 300
	// maxProviderReason bounds a stop or finish reason quoted in our errors (an enum word,
	// unless the provider sends something else).
	maxProviderReason = 64
)

func (c HTTPConfig) withDefaults() HTTPConfig {
	client := http.Client{}
	if c.HTTPClient != nil {
		client = *c.HTTPClient
	}
	// The endpoint alone receives the key and the history: a redirect would resend both to a
	// host the spec does not name (Go's client keeps x-api-key on a redirect to another
	// host), possibly over plain http. A redirect is answered as the endpoint's error.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.HTTPClient = &client
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = defaultAttemptTimeout
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = defaultMaxAttempts
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = defaultMaxRetryWait
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

// sdkBase is the base URL an SDK wants for the resolved endpoint u: u without sdkPath, the
// path the SDK appends itself ("chat/completions", "v1/messages"), and without the query,
// which the SDKs drop when they resolve their path against the base (it is sent as options).
func sdkBase(u *url.URL, sdkPath string) string {
	b := *u
	b.Path, b.RawPath, b.RawQuery, b.Fragment = strings.TrimSuffix(u.Path, sdkPath), "", "", ""
	return b.String()
}

// redactURL drops credentials and the query, which may hold keys, from a URL quoted in errors.
func redactURL(u *url.URL) string {
	r := *u
	r.User, r.RawQuery, r.Fragment = nil, "", ""
	return r.String()
}
