package sessionapi

import (
	"context"
	"crypto/x509"
	"net/http"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/parley-dev/parley/pkg/wire"
)

// AuthenticationConfigMapName is the ConfigMap in kube-system where the API server publishes
// how it authenticates to extension API servers: the request-header CA that signs its
// front-proxy client certificate, the certificate names it uses, and the headers that carry
// the user it authenticated. The manager reads it through the API server's Role
// extension-apiserver-authentication-reader, bound in kube-system
// (config/rbac/auth_reader_role_binding.yaml): only this ConfigMap, by name.
const AuthenticationConfigMapName = "extension-apiserver-authentication"

// FrontProxy authenticates the requests the API server's aggregator proxies to the aggregated
// group: the user the API server authenticated (whatever the cluster uses: certificates, OIDC,
// cloud IAM) travels in the request headers the API server names (X-Remote-User, -Group,
// -Extra-…), and those headers are believed only once the TLS client certificate verifies
// against the request-header CA and carries an allowed name. k8s.io/apiserver's delegated
// authentication does the verification and the header reading, with the CA and the header
// names kept current from the ConfigMap AuthenticationConfigMapName. No credential of the
// user ever reaches the Session API on this path.
type FrontProxy struct {
	authn authenticator.Request
	// run keeps the CA and the header names current until ctx ends (nil: they are fixed).
	run func(ctx context.Context)
}

// NewFrontProxy reads the front-proxy settings from kube-system's ConfigMap
// AuthenticationConfigMapName through kube, and follows their changes once started. Until they
// are read, every front-proxy request is refused.
func NewFrontProxy(kube kubernetes.Interface) (*FrontProxy, error) {
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("front-proxy-ca",
		metav1.NamespaceSystem, AuthenticationConfigMapName, "requestheader-client-ca-file", kube)
	if err != nil {
		return nil, err
	}
	settings := headerrequest.NewRequestHeaderAuthRequestController(AuthenticationConfigMapName, metav1.NamespaceSystem, kube,
		"requestheader-username-headers", "requestheader-uid-headers", "requestheader-group-headers",
		"requestheader-extra-headers-prefix", "requestheader-allowed-names")
	fp := newFrontProxy(ca.VerifyOptions, settings.AllowedClientNames, settings.UsernameHeaders, settings.UIDHeaders,
		settings.GroupHeaders, settings.ExtraHeaderPrefixes)
	fp.run = func(ctx context.Context) {
		log := logf.FromContext(ctx).WithName("front-proxy")
		_ = ca.RunOnce(ctx)
		if err := settings.RunOnce(ctx); err != nil {
			log.Error(err, "reading the API server's front-proxy settings; the aggregated API refuses requests until they are read",
				"configMap", metav1.NamespaceSystem+"/"+AuthenticationConfigMapName)
		}
		go ca.Run(ctx, 1)
		go settings.Run(ctx, 1)
		<-ctx.Done()
	}
	return fp, nil
}

// newFrontProxy authenticates with the given CA and settings: the client certificate is
// verified with verify's options and its common name checked against allowedNames before the
// user headers are read.
func newFrontProxy(verify x509request.VerifyOptionFunc, allowedNames, users, uids, groups, extraPrefixes func() []string) *FrontProxy {
	slice := func(f func() []string) headerrequest.StringSliceProvider {
		return headerrequest.StringSliceProviderFunc(f)
	}
	return &FrontProxy{authn: headerrequest.NewDynamicVerifyOptionsSecure(verify,
		slice(allowedNames), slice(users), slice(uids), slice(groups), slice(extraPrefixes))}
}

// staticFrontProxy trusts pool and the conventional X-Remote-* headers: tests, and a manager
// given the request-header CA by other means.
func staticFrontProxy(pool *x509.CertPool, allowedNames ...string) *FrontProxy {
	fixed := func(v ...string) func() []string { return func() []string { return v } }
	verify := func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	return newFrontProxy(verify, fixed(allowedNames...), fixed("X-Remote-User"), fixed("X-Remote-Uid"),
		fixed("X-Remote-Group"), fixed("X-Remote-Extra-"))
}

// Start keeps the front-proxy settings current until ctx ends; every replica runs it.
func (f *FrontProxy) Start(ctx context.Context) error {
	if f.run != nil {
		f.run(ctx)
	}
	return nil
}

// NeedLeaderElection is false: every replica serves the aggregated group.
func (f *FrontProxy) NeedLeaderElection() bool { return false }

var errNotFrontProxy = problem(401, wire.ProblemUnauthorized, "Unauthorized",
	"this path takes only requests the Kubernetes API server proxies (API aggregation): "+
		"use kubectl or the API server's URL, or the Session API's /v1 paths with a bearer token")

// authenticate returns the user the API server authenticated, or a 401 problem when the
// request does not carry a front-proxy client certificate that verifies (the headers of a
// request that does not are never read).
func (f *FrontProxy) authenticate(r *http.Request) (*caller, *wire.Problem) {
	if f == nil {
		return nil, errNotFrontProxy
	}
	resp, ok, err := f.authn.AuthenticateRequest(r)
	if err != nil || !ok || resp.User == nil || resp.User.GetName() == "" {
		return nil, errNotFrontProxy
	}
	u := resp.User
	return callerOf(authnv1.UserInfo{
		Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extraValues(u.GetExtra()),
	}), nil
}

func extraValues(extra map[string][]string) map[string]authnv1.ExtraValue {
	if len(extra) == 0 {
		return nil
	}
	out := make(map[string]authnv1.ExtraValue, len(extra))
	for k, v := range extra {
		out[k] = v
	}
	return out
}
