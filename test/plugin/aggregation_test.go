package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	stdbase64 "encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/parley-dev/parley/pkg/conversation"
	"github.com/parley-dev/parley/pkg/wire"
	"github.com/parley-dev/parley/test/support/kubeenv"
	"github.com/parley-dev/parley/test/support/repopath"
)

var shippedRoles sync.Map

// shippedClusterRole creates the install's ClusterRole of config/rbac/<file> once, named as
// dist/install.yaml names it.
func shippedClusterRole(t *testing.T, file string) string {
	t.Helper()
	root, err := repopath.Root()
	must(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", file))
	must(t, err)
	role := &rbacv1.ClusterRole{}
	must(t, yaml.UnmarshalStrict(raw, role))
	role.Name = "parley-" + role.Name
	if _, done := shippedRoles.LoadOrStore(role.Name, true); !done {
		must(t, env.admin.Create(context.Background(), role))
	}
	return role.Name
}

// certificateUser is a person whose kubeconfig holds a client certificate (as kind's, minikube's
// and most first clusters' do), bound in ns to the shipped ClusterRole of roleFile.
func certificateUser(t *testing.T, ns, roleFile string) (name, kubeconfig string) {
	t.Helper()
	name = "carol-" + ns
	au, err := env.te.AddUser(crenvtest.User{Name: name, Groups: []string{"people"}}, nil)
	must(t, err)
	kubeconfig = filepath.Join(env.dir, name+".kubeconfig")
	must(t, kubeenv.WriteKubeconfig(kubeconfig, au.Config(), ""))
	must(t, env.admin.Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: shippedClusterRole(t, roleFile)},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}},
	}))
	return name, kubeconfig
}

// execKubeconfig is u's kubeconfig with an exec credential plugin that prints u's token, as
// cloud providers' plugins (gke-gcloud-auth-plugin, aws eks get-token) do.
func execKubeconfig(t *testing.T, u *user) string {
	t.Helper()
	script := filepath.Join(env.dir, u.ns+"-credential.sh")
	cred := fmt.Sprintf(`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":%q}}`, u.token)
	must(t, os.WriteFile(script, []byte("#!/bin/sh\necho '"+cred+"'\n"), 0o700)) //nolint:gosec // an executable the kubeconfig runs
	path := filepath.Join(env.dir, u.ns+"-exec.kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: exec
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: %s
      interactiveMode: Never
contexts:
- name: envtest
  context: {cluster: envtest, user: exec}
current-context: envtest
`, env.cfg.Host, base64(env.cfg.CAData), script)
	must(t, os.WriteFile(path, []byte(kc), 0o600))
	return path
}

// TestClientCertificateAndExecKubeconfigs: kubeconfigs that authenticate with a client
// certificate (envtest's admin, a person bound to the shipped viewer role) and with an exec
// plugin reach conversations with no extra flag: history, tail -f (the follow passes through
// the aggregator as messages are appended) and export -o claude.
func TestClientCertificateAndExecKubeconfigs(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	u.conversation(t, "chat", nil)
	appendMessages(t, u, "chat", twoTurns(""))
	kp := func(kubeconfig string, args ...string) (string, error) {
		out, _, err := runPlugin(ctx, append([]string{"--kubeconfig", kubeconfig, "-n", u.ns}, args...)...)
		return out, err
	}

	t.Run("the admin's client certificate", func(t *testing.T) {
		out, err := kp(env.adminKubeconfig, "history", "chat")
		must(t, err)
		inOrder(t, out, "4 messages", "Two files")
		dir := t.TempDir()
		_, err = kp(env.adminKubeconfig, "export", "chat", "-o", "claude", "--dir", dir, "--cwd", "/work")
		must(t, err)
		files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", "*.jsonl"))
		if len(files) != 1 {
			t.Fatalf("export -o claude --dir wrote %v", files)
		}
	})

	t.Run("a person's client certificate with the shipped conversation-viewer-role", func(t *testing.T) {
		_, kubeconfig := certificateUser(t, u.ns, "conversation_viewer_role.yaml")
		out, err := kp(kubeconfig, "history", "chat")
		must(t, err)
		inOrder(t, out, "4 messages", "Two files")
		// A viewer may not write: the API server refuses before the Session API is asked.
		if _, err := kp(kubeconfig, "compact", "chat"); err == nil || !strings.Contains(err.Error(), "the API server does not let you") {
			t.Fatalf("a viewer compacted: %v", err)
		}
	})

	t.Run("tail -f with a client certificate follows through the aggregator", func(t *testing.T) {
		admin := &user{ns: u.ns, kubeconfig: env.adminKubeconfig}
		out, stop := admin.follow("chat", "--lines", "1")
		eventually(t, 20*time.Second, "the last message", func() bool { return strings.Contains(out.String(), "Two files") })
		appendMessages(t, u, "chat", []conversation.Message{msg("u2", conversation.RoleUser, text("And through the aggregator?"))})
		eventually(t, 20*time.Second, "the appended message", func() bool { return strings.Contains(out.String(), "And through the aggregator?") })
		if code := stop(); code != 0 {
			t.Fatalf("tail -f exited %d", code)
		}
	})

	t.Run("an exec credential plugin", func(t *testing.T) {
		out, err := kp(execKubeconfig(t, u), "history", "chat")
		must(t, err)
		inOrder(t, out, "Two files")
	})
}

// TestSessionAPIReceivesNoCredential: the requests the Session API receives from plugin
// traffic (token, exec-plugin and certificate kubeconfigs; reads, a follow and writes) carry the
// user only in the API server's front-proxy headers: no Authorization, no
// Parley-Authorization.
func TestSessionAPIReceivesNoCredential(t *testing.T) {
	ctx := context.Background()
	u := newUser(t, "get", "create")
	u.conversation(t, "chat", nil)
	appendMessages(t, u, "chat", twoTurns(""))
	before := len(env.recorder.seen())
	_, _, err := u.kp(ctx, "history", "chat")
	must(t, err)
	_, _, err = u.kp(ctx, "checkpoint", "chat", "--name", "chat-kept")
	must(t, err)
	out, stop := u.follow("chat", "--lines", "1")
	eventually(t, 20*time.Second, "the followed message", func() bool { return strings.Contains(out.String(), "Two files") })
	stop()
	_, _, err = runPlugin(ctx, "--kubeconfig", execKubeconfig(t, u), "-n", u.ns, "history", "chat")
	must(t, err)
	_, _, err = runPlugin(ctx, "--kubeconfig", env.adminKubeconfig, "-n", u.ns, "history", "chat")
	must(t, err)

	seen := env.recorder.seen()[before:]
	fromUser := 0
	for _, r := range seen {
		for _, h := range []string{"Authorization", "Parley-Authorization"} {
			if v := r.header.Get(h); v != "" {
				t.Errorf("%s reached the Session API with %s (%d bytes)", r.path, h, len(v))
			}
		}
		if r.header.Get("X-Remote-User") == "" {
			t.Errorf("%s reached the Session API without X-Remote-User", r.path)
		}
		if r.header.Get("X-Remote-User") == "system:serviceaccount:"+u.ns+":alice" {
			fromUser++
		}
	}
	if fromUser < 4 {
		t.Fatalf("%d requests of the user's reached the Session API through the aggregator, want at least 4", fromUser)
	}
}

// TestForbiddenThroughTheAPIServer: a user the API server lets through but the Session API's
// SubjectAccessReview refuses gets the Session API's 403 as problem+json; a user without
// rights on the aggregated group gets the API server's own 403.
func TestForbiddenThroughTheAPIServer(t *testing.T) {
	ctx := context.Background()
	bob := newUser(t) // no conversations/history
	bob.conversation(t, "mine", nil)
	get := func(cfg *rest.Config) (*http.Response, []byte) {
		hc, err := rest.HTTPClientFor(cfg)
		must(t, err)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(cfg.Host, "/")+wire.AggregatedPath+wire.ConversationSubpath(bob.ns, "mine")+"/messages", nil)
		must(t, err)
		resp, err := hc.Do(req)
		must(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	cfg := rest.AnonymousClientConfig(env.cfg)
	cfg.BearerToken = bob.token
	resp, body := get(cfg)
	var p wire.Problem
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Content-Type") != wire.ProblemContentType ||
		json.Unmarshal(body, &p) != nil || p.Type != wire.ProblemForbidden {
		t.Fatalf("bob: %d %s %s; want the Session API's 403 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	name, kubeconfig := certificateUser(t, bob.ns, "checkpoint_viewer_role.yaml") // no session.parley.dev rights
	_, _, err := runPlugin(ctx, "--kubeconfig", kubeconfig, "-n", bob.ns, "history", "mine")
	if err == nil || !strings.Contains(err.Error(), "the API server does not let you") || !strings.Contains(err.Error(), name) {
		t.Fatalf("a user without session.parley.dev rights: %v", err)
	}
}

// TestUnsignedFrontProxyHeadersAreRefused: X-Remote-User sent straight to the Session API's
// port is refused (401 problem+json) without a client certificate, and with a certificate the
// cluster's client CA signed (a user's own, not the front-proxy's).
func TestUnsignedFrontProxyHeadersAreRefused(t *testing.T) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(env.apiCA)
	adminCert, err := tls.X509KeyPair(env.cfg.CertData, env.cfg.KeyData)
	must(t, err)
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "a cluster user's certificate": {adminCert}} {
		t.Run(name, func(t *testing.T) {
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
				MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: "127.0.0.1", Certificates: certs,
			}}}
			req, err := http.NewRequest(http.MethodGet,
				fmt.Sprintf("https://127.0.0.1:%d%s", env.apiPort, wire.AggregatedPath+wire.ConversationSubpath("default", "any")), nil)
			must(t, err)
			req.Header.Set("X-Remote-User", "system:admin")
			req.Header.Set("X-Remote-Group", "system:masters")
			resp, err := hc.Do(req)
			must(t, err)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Content-Type") != wire.ProblemContentType {
				t.Fatalf("%d %s; want 401 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		})
	}
}

func base64(b []byte) string { return stdbase64.StdEncoding.EncodeToString(b) }
