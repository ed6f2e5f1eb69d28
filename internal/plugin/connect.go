package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyclient "github.com/parley-dev/parley/pkg/client"
)

// APIFlags say how to reach the Session API.
type APIFlags struct {
	// URL connects directly (port-forward, a manager on this machine); empty: the service proxy.
	URL string
	// Token is sent to the Session API instead of the kubeconfig's bearer token.
	Token string
	// CAFile verifies a direct connection; InsecureSkipVerify does not verify it.
	CAFile             string
	InsecureSkipVerify bool
	// TLSServerName is the name a direct connection verifies the certificate for (the
	// install's certificate names the Service, not localhost: set it through a port-forward).
	TLSServerName string
	// Namespace, Service, Port and Scheme name the Session API Service the proxy path goes to.
	Namespace, Service, Port, Scheme string
}

// Defaults of the install (config/default, dist/install.yaml).
const (
	defaultAPINamespace = "parley-system"
	defaultAPIService   = "parley-session-api"
	// defaultAPIPort is the Service port's name, whatever its number (the install's Role for
	// the proxy names it so too).
	defaultAPIPort = "https"
	// caConfigMap publishes the CAs the Session API's certificates are trusted through (the
	// manager's sessionapi.CAConfigMapName, key ca.crt).
	caConfigMap = "parley-session-api-ca"
	// envToken lets a script give the Session API token without putting it on a command line.
	envToken = "PARLEY_TOKEN"
)

// AddFlags adds the Session API flags.
func (f *APIFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.URL, "session-api-url", "",
		"Reach the Session API at this URL directly (e.g. https://localhost:8082 through kubectl port-forward) instead of through the API server's service proxy")
	fs.StringVar(&f.Token, "session-api-token", "",
		"Bearer token for the Session API (default: $"+envToken+", else the token your kubeconfig sends the API server). "+
			"Needed when your kubeconfig authenticates with a client certificate: e.g. $(kubectl create token NAME --audience parley)")
	fs.StringVar(&f.CAFile, "session-api-ca-file", "",
		"CA certificate to verify a --session-api-url with (default: the ConfigMap "+caConfigMap+" in the manager's namespace, if you may read it)")
	fs.StringVar(&f.TLSServerName, "session-api-tls-server-name", "",
		"Name to verify a --session-api-url's certificate for (through a port-forward: parley-session-api.parley-system.svc)")
	fs.BoolVar(&f.InsecureSkipVerify, "session-api-insecure-skip-tls-verify", false,
		"Do not verify the certificate of a --session-api-url (local runs only)")
	fs.StringVar(&f.Namespace, "session-api-namespace", defaultAPINamespace, "Namespace of the Session API Service (where Parley is installed)")
	fs.StringVar(&f.Service, "session-api-service", defaultAPIService, "Name of the Session API Service")
	fs.StringVar(&f.Port, "session-api-port", defaultAPIPort, "Port (name or number) of the Session API Service")
	fs.StringVar(&f.Scheme, "session-api-scheme", "https", "Scheme the service proxy speaks to the Session API (http for a manager started with --session-api-insecure)")
}

// kube is a client for Conversations, Checkpoints and Events with the user's kubeconfig.
func (o *Options) kube() (client.Client, error) {
	cfg, err := o.Config.ToRESTConfig()
	if err != nil {
		return nil, kubeconfigError(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server %s: %w", cfg.Host, err)
	}
	return c, nil
}

func kubeconfigError(err error) error {
	return fmt.Errorf("reading your kubeconfig: %w (set KUBECONFIG or pass --kubeconfig, --context)", err)
}

// sessionAPI is a Session API client that authenticates as the user.
//
// Through the service proxy (the default) the API server authenticates the request with the
// kubeconfig's credentials and checks that the user may proxy to the Service, then removes
// Authorization before proxying. So the token the Session API reviews travels in
// Parley-Authorization, which the proxy passes on: the --session-api-token, or else the very
// token the kubeconfig sends (a static token, an exec or auth-provider plugin's), copied there
// by a transport wrapper after the kubeconfig's own wrappers set it. With --session-api-url the
// same token goes in Authorization, straight to the Session API.
func (o *Options) sessionAPI(ctx context.Context) (*parleyclient.Client, error) {
	cfg, err := o.Config.ToRESTConfig()
	if err != nil {
		return nil, kubeconfigError(err)
	}
	imp := cfg.Impersonate
	if imp.UserName != "" || imp.UID != "" || len(imp.Groups) > 0 {
		return nil, errors.New("--as, --as-uid and --as-group cannot be used with the Session API: it acts on the identity of the token it receives, not an impersonated one")
	}
	token := o.API.Token
	if token == "" {
		token = os.Getenv(envToken)
	}
	if token == "" && cfg.BearerToken == "" && cfg.BearerTokenFile == "" && cfg.ExecProvider == nil && cfg.AuthProvider == nil {
		return nil, errNoToken(cfg)
	}
	if o.API.URL != "" {
		return o.directClient(ctx, cfg, token)
	}
	return o.proxyClient(cfg, token)
}

func errNoToken(cfg *rest.Config) error {
	how := "sends the API server no bearer token"
	if cfg.CertFile != "" || len(cfg.CertData) > 0 {
		how = "authenticates with a client certificate, which the API server cannot pass on to a service"
	}
	return fmt.Errorf("your kubeconfig %s, and the Session API needs one to know who you are. "+
		"Give it a token: --session-api-token \"$(kubectl create token SERVICE-ACCOUNT -n NAMESPACE --audience parley)\" "+
		"for a ServiceAccount allowed conversations/history (or set $%s)", how, envToken)
}

func (o *Options) proxyClient(cfg *rest.Config, token string) (*parleyclient.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &proxyToken{next: rt, token: token} })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a client for the API server %s: %w", cfg.Host, err)
	}
	if cfg.Timeout == 0 {
		hc.Timeout = 2 * time.Minute
	}
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	base := strings.TrimRight(host, "/") + proxyPath(o.API)
	return parleyclient.New(parleyclient.Options{URL: base, HTTPClient: hc})
}

// proxyPath is the API server's path to the Session API Service.
func proxyPath(f APIFlags) string {
	return fmt.Sprintf("/api/v1/namespaces/%s/services/%s:%s:%s/proxy",
		url.PathEscape(f.Namespace), url.PathEscape(f.Scheme), url.PathEscape(f.Service), url.PathEscape(f.Port))
}

// proxyToken puts the Session API's token in Parley-Authorization: the given one, or the
// Authorization the kubeconfig's wrappers (outside this one) set for the API server.
type proxyToken struct {
	next  http.RoundTripper
	token string
}

func (p *proxyToken) RoundTrip(req *http.Request) (*http.Response, error) {
	value := req.Header.Get("Authorization")
	if p.token != "" {
		value = "Bearer " + p.token
	}
	if value == "" {
		return p.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Parley-Authorization", value)
	return p.next.RoundTrip(req)
}

func (o *Options) directClient(ctx context.Context, cfg *rest.Config, token string) (*parleyclient.Client, error) {
	tlsConfig := &tls.Config{ //nolint:gosec // InsecureSkipVerify only when the user asks for it
		MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.API.InsecureSkipVerify, ServerName: o.API.TLSServerName,
	}
	if !o.API.InsecureSkipVerify && strings.HasPrefix(o.API.URL, "https://") {
		pool, err := o.sessionAPICA(ctx)
		if err != nil {
			return nil, err
		}
		tlsConfig.RootCAs = pool
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tlsConfig
	rt := http.RoundTripper(base)
	if token == "" {
		// The kubeconfig's token (static, file, exec or auth-provider plugin), without its TLS:
		// the Session API has its own certificate.
		tc, err := cfg.TransportConfig()
		if err != nil {
			return nil, kubeconfigError(err)
		}
		tc.TLS = transport.TLSConfig{}
		if rt, err = transport.HTTPWrappersForConfig(tc, base); err != nil {
			return nil, kubeconfigError(err)
		}
	}
	return parleyclient.New(parleyclient.Options{
		URL: o.API.URL, Token: token, HTTPClient: &http.Client{Transport: rt, Timeout: 2 * time.Minute},
	})
}

// sessionAPICA is the pool that verifies a direct connection: --session-api-ca-file, else the
// CAs the manager publishes in its ConfigMap (if the user may read it), else the system's roots.
func (o *Options) sessionAPICA(ctx context.Context) (*x509.CertPool, error) {
	var pem []byte
	if o.API.CAFile != "" {
		var err error
		if pem, err = os.ReadFile(o.API.CAFile); err != nil {
			return nil, fmt.Errorf("reading --session-api-ca-file: %w", err)
		}
	} else if kc, err := o.kube(); err == nil {
		cm := &corev1.ConfigMap{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: o.API.Namespace, Name: caConfigMap}, cm); err == nil {
			pem = []byte(cm.Data["ca.crt"])
		}
	}
	if len(pem) == 0 {
		return x509.SystemCertPool()
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("the Session API CA holds no PEM certificate (--session-api-ca-file)")
	}
	return pool, nil
}
