// Package client is the Go client of Parley's Session API, for agents and tools. Inside an agent
// pod it needs no configuration (FromEnvironment): the URL comes from PARLEY_API_URL and the
// token from the pod's projected ServiceAccount token. Every call is idempotent (appends carry
// message ids), so transient failures (429, 503, connection errors) are retried with backoff,
// honouring Retry-After. It imports no Kubernetes packages.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
)

// Environment and files an agent pod gets (see docs/agents.md).
const (
	EnvAPIURL    = "PARLEY_API_URL"
	EnvNamespace = "PARLEY_NAMESPACE"
	EnvName      = "PARLEY_CONVERSATION"
	EnvTokenFile = "PARLEY_TOKEN_FILE"
	EnvCAFile    = "PARLEY_CA_FILE"
	// DefaultTokenFile is where the agent pod's projected token (audience parley) is mounted.
	DefaultTokenFile = "/var/run/secrets/parley.dev/serviceaccount/token"
)

// Options configure a Client.
type Options struct {
	// URL is the Session API's base URL, e.g. https://parley-session-api.parley-system.svc:8082.
	URL string
	// Token is a bearer token; TokenFile is read on every call instead (projected tokens rotate).
	Token     string
	TokenFile string
	// CAFile or CA (PEM) is the CA of the API's certificate; the system pool when both are empty.
	CAFile string
	CA     []byte
	// HTTPClient replaces the default client (its transport's TLS settings win).
	HTTPClient *http.Client
	// Aggregated says URL is a Kubernetes API server's, which authenticates the caller and
	// proxies to the Session API (API aggregation, the group session.parley.dev): paths start
	// with wire.AggregatedPath instead of wire.APIPath, a follow reads the log subresource
	// (which the API server lets stream), and HTTPClient carries the caller's credentials for
	// the API server (a kubeconfig's transport); give no Token.
	Aggregated bool
	// Retries is how often a retryable failure is retried (default 5); MaxBackoff caps a wait.
	Retries    int
	MaxBackoff time.Duration
}

// Client calls the Session API.
type Client struct {
	base  *url.URL
	opts  Options
	http  *http.Client
	sleep func(context.Context, time.Duration) error
}

// New returns a client for opts.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(opts.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("parley client: %q is not an http(s) URL", opts.URL)
	}
	hc := opts.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if opts.CAFile != "" || len(opts.CA) > 0 {
			pem := opts.CA
			if opts.CAFile != "" {
				if pem, err = os.ReadFile(opts.CAFile); err != nil {
					return nil, fmt.Errorf("parley client: reading the CA: %w", err)
				}
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, errors.New("parley client: the CA holds no PEM certificate")
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		hc = &http.Client{Transport: tr, Timeout: 60 * time.Second}
	}
	// The Session API never redirects. A redirect followed would take the caller's credentials
	// to its target (a kubeconfig's transport adds them to every request it sends, whatever
	// the host), so it ends the call with an error instead.
	refusing := *hc
	refusing.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	hc = &refusing
	if opts.Retries == 0 {
		opts.Retries = 5
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 10 * time.Second
	}
	return &Client{base: u, opts: opts, http: hc, sleep: sleepContext}, nil
}

// conversationPath is the path of a conversation under the API's prefix.
func (c *Client) conversationPath(namespace, name string) string {
	if c.opts.Aggregated {
		return wire.AggregatedPath + wire.ConversationSubpath(namespace, name)
	}
	return wire.ConversationPath(namespace, name)
}

// FromEnvironment configures a client the way an agent pod is set up: PARLEY_API_URL, the
// projected token (PARLEY_TOKEN_FILE or DefaultTokenFile), the CA in PARLEY_CA_FILE if set.
func FromEnvironment() (*Client, error) {
	tokenFile := os.Getenv(EnvTokenFile)
	if tokenFile == "" {
		tokenFile = DefaultTokenFile
	}
	return New(Options{URL: os.Getenv(EnvAPIURL), TokenFile: tokenFile, CAFile: os.Getenv(EnvCAFile)})
}

// Conversation reads a conversation's summary.
func (c *Client) Conversation(ctx context.Context, namespace, name string) (*wire.Conversation, error) {
	var out wire.Conversation
	err := c.do(ctx, http.MethodGet, c.conversationPath(namespace, name), nil, &out)
	return &out, err
}

// Messages reads the messages after a sequence number, at most limit (0: the server's page).
func (c *Client) Messages(ctx context.Context, namespace, name string, after uint64, limit int) (*wire.MessagesPage, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := c.conversationPath(namespace, name) + "/messages"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out wire.MessagesPage
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return &out, err
}

// Append stores messages in order and returns their sequence numbers once they are durable.
// Every message needs an id; a retry (by this client or the caller) stores nothing twice.
func (c *Client) Append(ctx context.Context, namespace, name string, msgs []conversation.Message) (*wire.AppendResponse, error) {
	var out wire.AppendResponse
	err := c.do(ctx, http.MethodPost, c.conversationPath(namespace, name)+"/messages", wire.AppendRequest{Messages: msgs}, &out)
	return &out, err
}

// do sends one call, retrying what may succeed later. Errors from the API are *wire.Problem.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("parley client: encoding the request: %w", err)
		}
	}
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		wait, err := c.once(ctx, method, path, payload, out)
		if err == nil || wait < 0 || attempt >= c.opts.Retries {
			return err
		}
		if wait == 0 {
			wait = backoff
			backoff = min(backoff*2, c.opts.MaxBackoff)
		}
		if serr := c.sleep(ctx, min(wait, c.opts.MaxBackoff)); serr != nil {
			return err
		}
	}
}

// once sends the call once. wait < 0: do not retry; 0: retry after the backoff; > 0: after it.
func (c *Client) once(ctx context.Context, method, path string, payload []byte, out any) (time.Duration, error) {
	u := *c.base
	rel, err := url.Parse(path)
	if err != nil {
		return -1, err
	}
	u.Path = strings.TrimRight(u.Path, "/") + rel.Path
	u.RawQuery = rel.RawQuery
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(payload))
	if err != nil {
		return -1, err
	}
	token, err := c.token()
	if err != nil {
		return -1, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var unknownCA x509.UnknownAuthorityError
		var invalid x509.CertificateInvalidError
		var hostname x509.HostnameError
		if ctx.Err() != nil || errors.As(err, &unknownCA) || errors.As(err, &invalid) || errors.As(err, &hostname) {
			// A certificate that is not trusted now will not be on a retry.
			return -1, fmt.Errorf("parley client: %s %s: %w", method, path, err)
		}
		return 0, fmt.Errorf("parley client: %s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, fmt.Errorf("parley client: reading the answer: %w", err)
	}
	if resp.StatusCode/100 == 2 {
		if out != nil {
			if err := json.Unmarshal(data, out); err != nil {
				return -1, fmt.Errorf("parley client: decoding the answer: %w", err)
			}
		}
		return -1, nil
	}
	p := problemOf(resp, data)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			return time.Duration(s) * time.Second, p
		}
		return 0, p
	default:
		return -1, p
	}
}

// token is the bearer token, read from TokenFile on every call (projected tokens rotate).
func (c *Client) token() (string, error) {
	if c.opts.TokenFile == "" {
		return c.opts.Token, nil
	}
	b, err := os.ReadFile(c.opts.TokenFile)
	if err != nil {
		return "", fmt.Errorf("parley client: reading the token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
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

// AppendEvents stores reducer events in order; each needs an id, repeated on a retry.
func (c *Client) AppendEvents(ctx context.Context, namespace, name string, events []wire.Event) (*wire.EventsResponse, error) {
	var out wire.EventsResponse
	err := c.do(ctx, http.MethodPost, c.conversationPath(namespace, name)+"/events", wire.EventsRequest{Events: events}, &out)
	return &out, err
}

// PutAdapterState reports the adapter's latest state (latest wins).
func (c *Client) PutAdapterState(ctx context.Context, namespace, name string, state wire.AdapterStateRequest) error {
	return c.do(ctx, http.MethodPut, c.conversationPath(namespace, name)+"/adapter-state", state, nil)
}

// Checkpoint asks for a Manual Checkpoint and returns its name.
func (c *Client) Checkpoint(ctx context.Context, namespace, name string, req wire.CheckpointRequest) (string, error) {
	var out wire.CheckpointResponse
	err := c.do(ctx, http.MethodPost, c.conversationPath(namespace, name)+"/checkpoints", req, &out)
	return out.Name, err
}

// Compact asks the controller to compact the conversation now.
func (c *Client) Compact(ctx context.Context, namespace, name string) error {
	return c.do(ctx, http.MethodPost, c.conversationPath(namespace, name)+"/compact", struct{}{}, nil)
}

// Resume reads the resume bundle a new agent pod would have mounted now, cut at turn (0: the
// latest complete turn).
func (c *Client) Resume(ctx context.Context, namespace, name string, turn int) (*wire.ResumeBundle, error) {
	path := c.conversationPath(namespace, name) + "/resume"
	if turn > 0 {
		path += "?turn=" + strconv.Itoa(turn)
	}
	out := &wire.ResumeBundle{}
	if err := c.do(ctx, http.MethodGet, path, nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// State reads the whole conversation of the current epoch: system prompt, messages, subagent
// threads, adapter reports and transcript records.
func (c *Client) State(ctx context.Context, namespace, name string) (*wire.StateResponse, error) {
	out := &wire.StateResponse{}
	if err := c.do(ctx, http.MethodGet, c.conversationPath(namespace, name)+"/state", nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// problemOf reads an error answer. One that is not the Session API's (a proxy in front of it,
// such as the API server's service proxy, answering with a Kubernetes Status or plain text)
// keeps its message as the detail, so the caller can say what went wrong.
func problemOf(resp *http.Response, data []byte) *wire.Problem {
	p := &wire.Problem{Status: resp.StatusCode, Title: resp.Status}
	_ = json.Unmarshal(data, p)
	p.Status = resp.StatusCode
	if resp.StatusCode/100 == 3 {
		p.Detail = "the answer redirects to " + strconv.Quote(resp.Header.Get("Location")) +
			", which is not followed: credentials go only to the URL given"
		return p
	}
	if p.Type == "" && p.Detail == "" {
		var status struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &status) == nil && status.Message != "" {
			p.Detail = status.Message
		} else if text := strings.TrimSpace(string(data)); len(text) <= 512 && utf8.ValidString(text) && !strings.HasPrefix(text, "{") {
			p.Detail = text
		}
	}
	return p
}

// Reset asks the Session API to clear the conversation's history (POST …/reset) once a Reset
// Checkpoint holds it; the answer names that Checkpoint. Without req.ID the client makes one
// for this call, so its own retries (a 503 while the Checkpoint is written) answer the first
// reset instead of clearing again; a caller that retries Reset itself passes its own ID.
func (c *Client) Reset(ctx context.Context, namespace, name string, req wire.ResetRequest) (*wire.ResetResponse, error) {
	if req.ID == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("parley client: making a reset id: %w", err)
		}
		req.ID = hex.EncodeToString(b)
	}
	out := &wire.ResetResponse{}
	if err := c.do(ctx, http.MethodPost, c.conversationPath(namespace, name)+"/reset", req, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Import appends one part of a whole conversation state (POST …/import): what messages and
// events cannot carry, such as transcript records, comes through. Retrying a part with the
// same id and part number stores nothing twice.
func (c *Client) Import(ctx context.Context, namespace, name string, req wire.ImportRequest) (*wire.ImportResponse, error) {
	out := &wire.ImportResponse{}
	if err := c.do(ctx, http.MethodPost, c.conversationPath(namespace, name)+"/import", req, out); err != nil {
		return nil, err
	}
	return out, nil
}
