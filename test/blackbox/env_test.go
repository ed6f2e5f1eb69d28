package blackbox_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/pkg/history/s3"
	"github.com/parley-dev/parley/test/support/cluster"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/managerproc"
	"github.com/parley-dev/parley/test/support/metricstext"
)

// What the install names; a reviewer reads them from dist/install.yaml and the docs.
const (
	systemNS       = "parley-system"
	managerSA      = "parley-controller-manager"
	caName         = "parley-session-api-ca" // the CA Secret and the published ConfigMap
	caKey          = "ca.crt"
	editorRole     = "parley-conversation-editor-role"
	agentRole      = "parley-conversation-agent-role"
	apiUserRole    = "parley-session-api-user-role" // a Role of parley-system
	audience       = "parley"
	managerLimitMi = 768      // the manager container's memory limit as shipped
	s3ObjectLimit  = 64 << 20 // the largest object of an S3 history (docs/storage.md)
	bucket         = "blackbox"
)

// env is the install under attack.
type env struct {
	admin   client.Client // envtest's system:masters
	cfg     *rest.Config
	store   s3.Config
	s3      *cluster.Cluster
	proc    *managerproc.Process
	logPath string
	url     string // the Session API, https on 127.0.0.1
	http    *http.Client
}

// start brings up the API server with dist/install.yaml, the S3 server, and the manager binary
// running as its ServiceAccount with TLS on 127.0.0.1; it returns once the Session API answers
// through the CA the manager published and the admission policy is enforced.
func start(ctx context.Context, t *testing.T, dir string) *env {
	t.Helper()
	cl := cluster.StartInstalling(ctx, t, dir, bucket, installDist)
	e := &env{admin: cl.Client, cfg: cl.Config, store: cl.Store, s3: cl, logPath: filepath.Join(dir, "manager.log")}

	token := e.token(ctx, t, systemNS, managerSA, 3*time.Hour, "", nil)
	kubeconfig := filepath.Join(dir, "manager.kubeconfig")
	if err := kubeenv.WriteKubeconfig(kubeconfig, cl.Config, token); err != nil {
		t.Fatal(err)
	}
	port, err := managerproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	proc, err := managerproc.Start(cl.Bin, []string{
		"--leader-elect", "--leader-election-namespace=" + systemNS,
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		fmt.Sprintf("--session-api-bind-address=127.0.0.1:%d", port), "--session-api-hosts=127.0.0.1,localhost",
	}, []string{
		"KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=" + systemNS, fmt.Sprintf("GOMEMLIMIT=%d", managerLimitMi<<20),
	}, e.logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Stop(5 * time.Second) })
	e.proc = proc
	e.url = fmt.Sprintf("https://127.0.0.1:%d", port)

	// A person bound to the session-api user Role reads the published CA, as the docs say.
	reader := e.user("ca-reader")
	e.bindRole(ctx, t, systemNS, "Role", apiUserRole, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "ca-reader"})
	var pem []byte
	e.eventually(ctx, t, "the manager publishes ConfigMap "+systemNS+"/"+caName, func() error {
		cm := &corev1.ConfigMap{}
		if err := reader.Get(ctx, types.NamespacedName{Namespace: systemNS, Name: caName}, cm); err != nil {
			return err
		}
		pem = []byte(cm.Data[caKey])
		return nil
	})
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("ConfigMap %s/%s key %s holds no certificate", systemNS, caName, caKey)
	}
	e.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 64,
	}}
	e.eventually(ctx, t, "the Session API answers over TLS trusted through the published CA", func() error {
		res, _, err := e.do(ctx, http.MethodGet, "/v1/namespaces/none/conversations/none", "", nil)
		if err == nil && res.StatusCode != http.StatusUnauthorized {
			return fmt.Errorf("anonymous request: %d, want 401", res.StatusCode)
		}
		return err
	})
	e.waitForPolicy(ctx, t)
	return e
}

// waitForPolicy waits until the API server enforces the admission policy (it admits everything
// for a moment after the policy is created).
func (e *env) waitForPolicy(ctx context.Context, t *testing.T) {
	t.Helper()
	ns := e.namespace(ctx, t, "policy-probe")
	e.bindRole(ctx, t, ns, "ClusterRole", editorRole, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "probe"})
	probe := e.user("probe")
	e.eventually(ctx, t, "the admission policy is enforced", func() error {
		err := probe.Create(ctx, withAgent(historyOnly(ns, "probe"), ""), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "may not create pods") {
			return fmt.Errorf("an editor's agent: %w", err)
		}
		return nil
	})
}

// user is a client acting as a person named name (no groups but system:authenticated).
func (e *env) user(name string) client.Client {
	cfg := rest.CopyConfig(e.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{"system:authenticated"}}
	c, _, err := kubeenv.NewClient(cfg)
	if err != nil {
		panic(err) // only a malformed config fails here
	}
	return c
}

// bearer is a client sending token, as a process given only that token would.
func (e *env) bearer(t *testing.T, token string) client.Client {
	t.Helper()
	cfg := &rest.Config{Host: e.cfg.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: e.cfg.CAData}}
	c, _, err := kubeenv.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// namespace creates a namespace as a team using Parley has it: the Secret "s3" with the S3
// server's credentials, and the ServiceAccount "agent" bound to the agent role as shipped.
func (e *env) namespace(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "agent"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "s3"}, Data: map[string][]byte{
			s3.SecretAccessKeyID: []byte(e.s3.S3.AccessKey), s3.SecretSecretAccessKey: []byte(e.s3.S3.SecretKey),
		}},
	} {
		e.create(ctx, t, o)
	}
	e.bindRole(ctx, t, name, "ClusterRole", agentRole, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: name, Name: "agent"})
	return name
}

// bindRole binds the Role or ClusterRole role in namespace ns to subject.
func (e *env) bindRole(ctx context.Context, t *testing.T, ns, kind, role string, subject rbacv1.Subject) {
	t.Helper()
	e.create(ctx, t, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "bind-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects:   []rbacv1.Subject{subject},
	})
}

func (e *env) create(ctx context.Context, t *testing.T, o client.Object) {
	t.Helper()
	if err := e.admin.Create(ctx, o); err != nil {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

// token is a token of ServiceAccount ns/sa; audience "" is the API server's, pod binds it.
func (e *env) token(ctx context.Context, t *testing.T, ns, sa string, life time.Duration, aud string, pod *corev1.Pod) string {
	t.Helper()
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(life.Seconds()))}}
	if aud != "" {
		tr.Spec.Audiences = []string{aud}
	}
	if pod != nil {
		tr.Spec.BoundObjectRef = &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	if err := e.admin.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}, tr); err != nil {
		t.Fatalf("a token of %s/%s: %v", ns, sa, err)
	}
	return tr.Status.Token
}

// agentToken is a Session API token of namespace ns's agent ServiceAccount, bound to no pod.
func (e *env) agentToken(ctx context.Context, t *testing.T, ns string) string {
	return e.token(ctx, t, ns, "agent", time.Hour, audience, nil)
}

// conversation creates conv (as the cluster admin) and waits until its history is available.
func (e *env) conversation(ctx context.Context, t *testing.T, conv *parleyv1alpha1.Conversation) {
	t.Helper()
	e.create(ctx, t, conv)
	if err := cluster.WaitFor(ctx, e.admin, conv, func(c *parleyv1alpha1.Conversation) bool {
		return meta.IsStatusConditionTrue(c.Status.Conditions, parleyv1alpha1.ConditionHistoryAvailable)
	}); err != nil {
		t.Fatalf("%s/%s: history not available: %v (manager log %s)", conv.Namespace, conv.Name, err, e.logPath)
	}
}

// do sends one Session API request; body is JSON when not nil.
func (e *env) do(ctx context.Context, method, path, token string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, e.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := e.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = res.Body.Close() }()
	data, err := io.ReadAll(res.Body)
	return res, data, err
}

// tokenReviews is how many TokenReviews the API server has answered.
func (e *env) tokenReviews(ctx context.Context, t *testing.T) float64 {
	t.Helper()
	return e.reviews(ctx, t, "tokenreviews")
}

// reviews is how many POSTs of resource (tokenreviews, subjectaccessreviews) the API server
// has answered.
func (e *env) reviews(ctx context.Context, t *testing.T, resource string) float64 {
	t.Helper()
	hc, err := rest.HTTPClientFor(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := metricstext.Scrape(ctx, hc, strings.TrimSuffix(e.cfg.Host, "/")+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return m.Sum("apiserver_request_total", "resource", resource, "verb", "POST")
}

// run runs attack as subtest name and logs the manager's peak resident memory during it.
func (e *env) run(t *testing.T, name string, attack func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		e.mustBeAlive(t)
		e.resetPeakRSS(t)
		defer func() {
			if peak, err := e.proc.PeakRSS(); err == nil {
				t.Logf("the manager's peak RSS during this case: %d MiB", peak>>20)
			}
		}()
		attack(t)
	})
}

// resetPeakRSS starts the manager's peak resident memory (VmHWM) afresh.
func (e *env) resetPeakRSS(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", e.proc.PID()), []byte("5"), 0); err != nil {
		t.Logf("cannot reset the manager's peak RSS: %v", err)
	}
}

// mustBeAlive fails t when the manager exited.
func (e *env) mustBeAlive(t *testing.T) {
	t.Helper()
	select {
	case <-e.proc.Exited():
		t.Fatalf("the manager exited: %v (log %s)", e.proc.Err(), e.logPath)
	default:
	}
}

// eventually retries check until it passes, for a minute at most.
func (e *env) eventually(ctx context.Context, t *testing.T, what string, check func() error) {
	const within = time.Minute
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not after %s: %v (manager log %s)", what, within, err, e.logPath)
		case <-e.proc.Exited():
			t.Fatalf("%s: the manager exited: %v (log %s)", what, e.proc.Err(), e.logPath)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
