// Package plugin runs kubectl parley against a live manager: the real manager binary on a real
// kube-apiserver (envtest) started with API aggregation as a cluster's control plane is (a
// request-header CA, the aggregator's front-proxy client certificate, aggregator routing to
// endpoints), the install's APIService, and users with their own kubeconfigs (client
// certificates, tokens, an exec plugin) and RBAC. The aggregator dials the Session API
// Service's endpoints: a selector-less Service with an EndpointSlice and Endpoints naming this
// host's first global IPv4 address, where a recorder notes every request's headers and passes
// it on to the manager.
package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	parleyv1alpha1 "github.com/parley-dev/parley/api/v1alpha1"
	"github.com/parley-dev/parley/internal/plugin"
	parleyclient "github.com/parley-dev/parley/pkg/client"
	"github.com/parley-dev/parley/test/support/frontproxy"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/repopath"
)

// managerNamespace is where Parley is installed, as config/default installs it.
const managerNamespace = frontproxy.Namespace

// env is the live setup every test shares.
var env struct {
	cfg     *rest.Config
	admin   client.Client
	dir     string
	apiPort int
	// apiCA verifies the Session API's certificate (the ConfigMap the manager published).
	apiCA []byte
	// hostIP is the address the Service's endpoints name.
	hostIP string
	// adminKubeconfig authenticates with a client certificate (envtest's admin).
	adminKubeconfig string
	managerLog      string
	frontProxy      *frontproxy.FrontProxy
	// recorder sees every request the aggregator sends the Session API.
	recorder *recorder
	// te adds users with client certificates.
	te *crenvtest.Environment
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	logf.SetLogger(logr.Discard())
	assets, err := kubeenv.AssetsDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "SKIP test/plugin:", err)
		return 0
	}
	ip, err := frontproxy.HostIPv4()
	if err != nil {
		// Without a routable address no endpoint looks like a pod's.
		fmt.Fprintln(os.Stderr, "SKIP test/plugin:", err)
		return 0
	}
	env.hostIP = ip
	root, err := repopath.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := parleyv1alpha1.AddToScheme(scheme.Scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "parley-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	env.dir = dir
	if env.frontProxy, err = frontproxy.New(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	te := &crenvtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	env.frontProxy.Configure(te)
	cfg, err := te.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer func() { _ = te.Stop() }()
	env.cfg, env.te = cfg, te

	stop, err := setUp(root)
	if stop != nil {
		defer stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "setting up the live manager:", err)
		if env.managerLog != "" {
			if b, rerr := os.ReadFile(env.managerLog); rerr == nil {
				fmt.Fprintf(os.Stderr, "manager log:\n%s\n", tail(string(b), 4000))
			}
		}
		return 1
	}
	code := m.Run()
	if code != 0 && env.managerLog != "" {
		if b, err := os.ReadFile(env.managerLog); err == nil {
			fmt.Fprintf(os.Stderr, "manager log (end):\n%s\n", tail(string(b), 6000))
		}
	}
	return code
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// setUp builds and starts the manager, registers the install's APIService, publishes the
// Session API Service (its endpoints: the recorder in front of the manager), and waits until
// the aggregator finds the group available.
func setUp(root string) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	if env.admin, err = client.New(env.cfg, client.Options{Scheme: scheme.Scheme}); err != nil {
		return nil, err
	}
	env.adminKubeconfig = filepath.Join(env.dir, "admin.kubeconfig")
	if err := kubeenv.WriteKubeconfig(env.adminKubeconfig, env.cfg, ""); err != nil {
		return nil, err
	}
	if err := env.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNamespace}}); err != nil {
		return nil, err
	}
	// Before the manager starts, as kubectl apply of dist/install.yaml creates it.
	if err := frontproxy.CreateAPIService(ctx, env.admin, root); err != nil {
		return nil, err
	}
	bin := filepath.Join(env.dir, "manager")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/manager")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/manager: %w\n%s", err, out)
	}
	if env.apiPort, err = freePort(); err != nil {
		return nil, err
	}
	env.managerLog = filepath.Join(env.dir, "manager.log")
	logf, err := os.Create(env.managerLog)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"--leader-elect=false", "--health-probe-bind-address=0", "--metrics-bind-address=0",
		fmt.Sprintf("--session-api-bind-address=0.0.0.0:%d", env.apiPort),
		"--session-api-hosts=127.0.0.1,"+env.hostIP+","+serviceHost,
	)
	// POD_NAMESPACE: the replicas' shared Session API CA lives there, as in a cluster.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.adminKubeconfig, "POD_NAMESPACE="+managerNamespace)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test binary
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	// The CA is published once the Session API set up its TLS.
	for {
		cm := &corev1.ConfigMap{}
		err := env.admin.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: "parley-session-api-ca"}, cm)
		if err == nil {
			env.apiCA = []byte(cm.Data["ca.crt"])
			break
		}
		select {
		case <-exited:
			return stop, errors.New("the manager exited")
		case <-ctx.Done():
			return stop, fmt.Errorf("no Session API CA ConfigMap: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if env.recorder, err = startRecorder(ctx, env.frontProxy); err != nil {
		return stop, err
	}
	if err := frontproxy.PublishService(ctx, env.admin, env.hostIP, int32(env.recorder.port)); err != nil {
		return stop, err
	}
	return stop, frontproxy.WaitAvailable(ctx, env.admin)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// user is a person with a kubeconfig holding their own token (a ServiceAccount's, for the
// API server's audience, as a CI bot or an OIDC user has one) and the rights a team member
// gets: conversation-editor-style rules in their namespace, with the aggregated group's
// subresources, and the install's session-api-user Role (the CA ConfigMap, for direct access).
type user struct {
	ns, name, token, kubeconfig string
}

// newUser makes a namespace and a user in it. history lists the verbs on conversations/history
// (none: the user can see objects but not histories).
func newUser(t *testing.T, history ...string) *user {
	t.Helper()
	ctx := context.Background()
	u := &user{ns: fmt.Sprintf("team-%d", time.Now().UnixNano()%1e9), name: "alice"}
	must(t, env.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.ns}}))
	must(t, env.admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: u.ns, Name: u.name}}))
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"parley.dev"}, Resources: []string{"conversations", "checkpoints"}, Verbs: []string{"get", "list", "watch", "create", "patch", "update", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list"}},
		// What the API server authorises before it proxies to the Session API, which then
		// checks conversations/history.
		{APIGroups: []string{"session.parley.dev"}, Resources: aggregatedResources, Verbs: []string{"get", "create", "update"}},
	}
	if len(history) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"parley.dev"}, Resources: []string{"conversations/history"}, Verbs: history})
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: u.ns, Name: u.name}}
	must(t, env.admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: u.ns, Name: "team"}, Rules: rules}))
	must(t, env.admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: u.ns, Name: "team"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "team"}, Subjects: subject,
	}))
	must(t, env.admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: managerNamespace, Name: "ca-" + u.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: userRole(t)}, Subjects: subject,
	}))
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	must(t, env.admin.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: u.ns, Name: u.name}}, tr))
	u.token = tr.Status.Token
	u.kubeconfig = filepath.Join(env.dir, u.ns+".kubeconfig")
	must(t, kubeenv.WriteKubeconfig(u.kubeconfig, env.cfg, u.token))
	return u
}

// aggregatedResources are the aggregated group's resources (RBAC matches a subresource only by
// its whole name).
var aggregatedResources = []string{
	"conversations", "conversations/messages", "conversations/log", "conversations/events",
	"conversations/adapter-state", "conversations/checkpoints", "conversations/compact", "conversations/reset",
	"conversations/resume", "conversations/state", "conversations/import", "conversations/transcript", "conversations/transcripts",
}

var userRoleOnce sync.Once

// userRole is the Role the install ships for people who reach the Session API directly
// (config/rbac/session_api_user_role.yaml), created in the manager's namespace as
// dist/install.yaml names it.
func userRole(t *testing.T) string {
	const name = "parley-session-api-user-role"
	userRoleOnce.Do(func() {
		root, err := repopath.Root()
		must(t, err)
		raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", "session_api_user_role.yaml"))
		must(t, err)
		role := &rbacv1.Role{}
		must(t, yaml.UnmarshalStrict(raw, role))
		role.Namespace, role.Name = managerNamespace, name
		must(t, env.admin.Create(context.Background(), role))
	})
	return name
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// kp runs kubectl parley as u (in u's namespace) and returns stdout and stderr; a non-zero exit
// is an error holding stderr.
func (u *user) kp(ctx context.Context, args ...string) (string, string, error) {
	return runPlugin(ctx, append([]string{"--kubeconfig", u.kubeconfig, "-n", u.ns}, args...)...)
}

func runPlugin(ctx context.Context, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	code := plugin.Execute(ctx, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	if code != 0 {
		return out.String(), errOut.String(), fmt.Errorf("kubectl parley %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	return out.String(), errOut.String(), nil
}

// direct is a Session API client as u, straight to the manager (what an agent or a
// port-forward sees), for setting up histories without the plugin.
func (u *user) direct(t *testing.T) *parleyclient.Client {
	t.Helper()
	c, err := parleyclient.New(parleyclient.Options{
		URL: fmt.Sprintf("https://127.0.0.1:%d", env.apiPort), Token: u.token, CA: env.apiCA,
	})
	must(t, err)
	return c
}

// conversation creates a Conversation in u's namespace as the admin and waits for its history.
func (u *user) conversation(t *testing.T, name string, edit func(*parleyv1alpha1.ConversationSpec)) *parleyv1alpha1.Conversation {
	t.Helper()
	conv := &parleyv1alpha1.Conversation{
		ObjectMeta: metav1.ObjectMeta{Namespace: u.ns, Name: name},
		Spec: parleyv1alpha1.ConversationSpec{
			SystemPrompt: &parleyv1alpha1.SystemPrompt{Text: "You are the test agent."},
			History:      parleyv1alpha1.HistorySpec{ConfigMap: &parleyv1alpha1.ConfigMapHistory{}},
		},
	}
	if edit != nil {
		edit(&conv.Spec)
	}
	must(t, env.admin.Create(context.Background(), conv))
	eventually(t, 60*time.Second, "the history of "+name, func() bool {
		got := &parleyv1alpha1.Conversation{}
		if env.admin.Get(context.Background(), client.ObjectKeyFromObject(conv), got) != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == parleyv1alpha1.ConditionHistoryAvailable && c.Status == metav1.ConditionTrue {
				conv = got
				return true
			}
		}
		return false
	})
	return conv
}

func eventually(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
