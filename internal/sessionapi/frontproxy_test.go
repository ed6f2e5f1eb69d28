package sessionapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/parley-dev/parley/pkg/wire"
)

// testCA is a CA that signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) client(t *testing.T, commonName string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: commonName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestFrontProxyHeadersNeedTheRequestHeaderCA: the aggregated group believes X-Remote-User
// and its companions only from a client certificate the request-header CA signed, with an
// allowed name; the user it believes is the user of the SubjectAccessReview. The /v1 paths
// never read those headers, and the aggregated ones never take a bearer token.
func TestFrontProxyHeadersNeedTheRequestHeaderCA(t *testing.T) {
	requestHeaderCA, otherCA := newTestCA(t, "front-proxy-ca"), newTestCA(t, "other-ca")
	pool := x509.NewCertPool()
	pool.AddCert(requestHeaderCA.cert)

	scheme := kubeAndParleyScheme(t)
	var mu sync.Mutex
	var reviewed []authzv1.SubjectAccessReviewSpec
	var tokenReviews int
	kube := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			mu.Lock()
			defer mu.Unlock()
			switch o := obj.(type) {
			case *authnv1.TokenReview:
				tokenReviews++
				o.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "admin"}}
			case *authzv1.SubjectAccessReview:
				reviewed = append(reviewed, o.Spec)
				o.Status.Allowed = o.Spec.User == "alice"
			}
			return nil
		},
	}).Build()
	s := &Server{Reader: kube, Writer: kube, Auth: &Authorizer{Client: kube}, FrontProxy: staticFrontProxy(pool, "front-proxy-client")}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()

	call := func(t *testing.T, cert *tls.Certificate, path string, header map[string]string) (int, []byte) {
		t.Helper()
		tr := srv.Client().Transport.(*http.Transport).Clone()
		if cert != nil {
			tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
		}
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var body json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != wire.ProblemContentType {
			t.Errorf("%s: %d answered as %q, want problem+json", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return resp.StatusCode, body
	}
	signed := requestHeaderCA.client(t, "front-proxy-client")
	wrongName := requestHeaderCA.client(t, "someone-else")
	foreign := otherCA.client(t, "front-proxy-client")
	alice := map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "team", "X-Remote-Extra-Scopes": "a"}
	admin := map[string]string{"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}
	aggregated := wire.AggregatedPath + wire.ConversationSubpath("ns", "missing")

	for _, c := range []struct {
		name   string
		cert   *tls.Certificate
		path   string
		header map[string]string
		want   int
	}{
		{"headers without a client certificate", nil, aggregated, admin, 401},
		{"headers with a certificate of another CA", &foreign, aggregated, admin, 401},
		{"headers with a certificate of a name not allowed", &wrongName, aggregated, admin, 401},
		{"a signed certificate without a user", &signed, aggregated, nil, 401},
		{"a bearer token on the aggregated path", nil, aggregated, map[string]string{"Authorization": "Bearer t"}, 401},
		{"front-proxy headers on the /v1 path", &signed, wire.ConversationPath("ns", "missing"), admin, 401},
		{"discovery without a client certificate", nil, wire.AggregatedPath, admin, 401},
		{"a signed user the SubjectAccessReview denies", &signed, aggregated, map[string]string{"X-Remote-User": "mallory"}, 403},
		{"a signed user the SubjectAccessReview allows", &signed, aggregated, alice, 404},
		{"discovery with a signed certificate", &signed, wire.AggregatedPath, alice, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, body := call(t, c.cert, c.path, c.header); got != c.want {
				t.Errorf("status %d (%s), want %d", got, body, c.want)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if tokenReviews != 0 {
		t.Errorf("%d TokenReviews: no request above carried a token the Session API may review", tokenReviews)
	}
	for _, r := range reviewed {
		if r.User != "alice" && r.User != "mallory" {
			t.Errorf("a SubjectAccessReview for %q: only signed users may be reviewed", r.User)
		}
		if r.User == "alice" && (!slices.Equal(r.Groups, []string{"team"}) || !slices.Equal(r.Extra["scopes"], authzv1.ExtraValue{"a"})) {
			t.Errorf("alice reviewed with groups %v, extra %v; want the front-proxy headers' team and scopes=a", r.Groups, r.Extra)
		}
	}
	if !slices.ContainsFunc(reviewed, func(r authzv1.SubjectAccessReviewSpec) bool { return r.User == "alice" }) {
		t.Error("alice was never reviewed")
	}
}

// TestAggregatedDiscovery: the group version lists conversations and a subresource for every
// endpoint, as the aggregator converts it into aggregated discovery.
func TestAggregatedDiscovery(t *testing.T) {
	list := aggregatedResources()
	names := map[string]bool{}
	for _, r := range list.APIResources {
		names[r.Name] = true
		if !r.Namespaced || r.Kind == "" || len(r.Verbs) == 0 {
			t.Errorf("%s: namespaced %v, kind %q, verbs %v", r.Name, r.Namespaced, r.Kind, r.Verbs)
		}
		if slices.Contains(r.Verbs, "list") || slices.Contains(r.Verbs, "delete") {
			t.Errorf("%s offers %v: the namespace controller would try to list and delete it", r.Name, r.Verbs)
		}
	}
	for _, want := range []string{
		"conversations", "conversations/messages", "conversations/log", "conversations/state",
		"conversations/resume", "conversations/transcripts", "conversations/reset", "conversations/import",
	} {
		if !names[want] {
			t.Errorf("discovery lacks %s", want)
		}
	}
	if list.GroupVersion != "session.parley.dev/v1alpha1" {
		t.Errorf("group version %q", list.GroupVersion)
	}
}
