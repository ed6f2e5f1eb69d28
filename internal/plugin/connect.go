package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
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

// APIFlags say how to reach the Session API directly; without URL the plugin goes through
// the API server (API aggregation) with the kubeconfig alone.
type APIFlags struct {
	// URL connects directly (port-forward, a manager on this machine); empty: the API server.
	URL string
	// Token is the bearer token of a direct connection instead of the kubeconfig's.
	Token string
	// CAFile verifies a direct connection; InsecureSkipVerify does not verify it.
	CAFile             string
	InsecureSkipVerify bool
	// TLSServerName is the name a direct connection verifies the certificate for (the
	// install's certificate names the Service, not localhost: set it through a port-forward).
	TLSServerName string
	// Namespace is where Parley is installed: the ConfigMap of the CAs a direct connection
	// trusts lives there.
	Namespace string
}

// Defaults of the install (config/default, dist/install.yaml).
const (
	defaultAPINamespace = "parley-system"
	// caConfigMap publishes the CAs the Session API's certificates are trusted through (the
	// manager's sessionapi.CAConfigMapName, key ca.crt).
	caConfigMap = "parley-session-api-ca"
	// envToken lets a script give a direct connection's token without putting it on a command
	// line.
	envToken = "PARLEY_TOKEN"
)

// AddFlags adds the Session API flags.
func (f *APIFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.URL, "session-api-url", "",
		"Reach the Session API at this URL directly (e.g. https://localhost:8082 through kubectl port-forward) instead of through the API server")
	fs.StringVar(&f.Token, "session-api-token", "",
		"Bearer token for a --session-api-url (default: $"+envToken+", else the token your kubeconfig sends the API server), "+
			"e.g. $(kubectl create token NAME --audience parley)")
	fs.StringVar(&f.CAFile, "session-api-ca-file", "",
		"CA certificate to verify a --session-api-url with (default: the ConfigMap "+caConfigMap+" in the manager's namespace, if you may read it)")
	fs.StringVar(&f.TLSServerName, "session-api-tls-server-name", "",
		"Name to verify a --session-api-url's certificate for (through a port-forward: parley-session-api.parley-system.svc)")
	fs.BoolVar(&f.InsecureSkipVerify, "session-api-insecure-skip-tls-verify", false,
		"Do not verify the certificate of a --session-api-url (local runs only)")
	fs.StringVar(&f.Namespace, "session-api-namespace", defaultAPINamespace,
		"Namespace where Parley is installed (the CA ConfigMap a --session-api-url is verified with)")
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

// sessionAPI is a Session API client that acts as the user.
//
// By default it goes through the API server: the kubeconfig's own client (its credentials
// whatever they are: a client certificate, a token, an exec or auth-provider plugin; --as)
// calls the aggregated group session.parley.dev, the API server authenticates the user and
// authorises the request, then proxies it to a manager replica with the user's identity in
// front-proxy headers, signed by its own client certificate. No credential of the user reaches
// the Session API on that path. With --session-api-url the plugin calls the Session API
// itself, with a bearer token in Authorization.
func (o *Options) sessionAPI(ctx context.Context) (*parleyclient.Client, error) {
	cfg, err := o.Config.ToRESTConfig()
	if err != nil {
		return nil, kubeconfigError(err)
	}
	if o.API.URL != "" {
		return o.directClient(ctx, cfg)
	}
	if o.API.Token != "" {
		return nil, errors.New("--session-api-token goes with --session-api-url: through the API server your kubeconfig's credentials are used")
	}
	return aggregatedClient(cfg)
}

// aggregatedClient calls the aggregated group through the API server with cfg's transport.
func aggregatedClient(cfg *rest.Config) (*parleyclient.Client, error) {
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
	return parleyclient.New(parleyclient.Options{URL: strings.TrimRight(host, "/"), HTTPClient: hc, Aggregated: true})
}

func errNoToken(cfg *rest.Config) error {
	how := "sends the API server no bearer token"
	if cfg.CertFile != "" || len(cfg.CertData) > 0 {
		how = "authenticates with a client certificate, which cannot be sent to the Session API"
	}
	return fmt.Errorf("your kubeconfig %s, and a --session-api-url needs a token to know who you are. "+
		"Leave out --session-api-url to go through the API server, or give a token: "+
		"--session-api-token \"$(kubectl create token SERVICE-ACCOUNT -n NAMESPACE --audience parley)\" "+
		"for a ServiceAccount allowed conversations/history (or set $%s)", how, envToken)
}

// directClient calls the Session API at --session-api-url with a bearer token: the given one,
// else the kubeconfig's (a static token, a file, an exec or auth-provider plugin's).
func (o *Options) directClient(ctx context.Context, cfg *rest.Config) (*parleyclient.Client, error) {
	imp := cfg.Impersonate
	if imp.UserName != "" || imp.UID != "" || len(imp.Groups) > 0 {
		return nil, errors.New("--as, --as-uid and --as-group cannot be used with --session-api-url: the Session API acts on the identity of the token it receives; leave out --session-api-url to impersonate through the API server")
	}
	token := o.API.Token
	if token == "" {
		token = os.Getenv(envToken)
	}
	if token == "" && cfg.BearerToken == "" && cfg.BearerTokenFile == "" && cfg.ExecProvider == nil && cfg.AuthProvider == nil {
		return nil, errNoToken(cfg)
	}
	if token == "" && !privateChannel(o.API.URL) {
		return nil, errors.New("--session-api-url without https would send your kubeconfig's token, a credential for the whole API server, " +
			"in clear text to another machine: use https, a port-forward to localhost, or --session-api-token with a token for audience parley")
	}
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

// privateChannel says whether a request to rawURL is safe from the network: over TLS, or to
// this machine (a port-forward).
func privateChannel(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
