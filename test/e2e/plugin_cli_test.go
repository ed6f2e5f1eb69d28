//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// personTokenEnv is where the plugin reads a --session-api-url's token (kept off command lines).
const personTokenEnv = "PARLEY_TOKEN"

// kubectlParley is the kubectl plugin as a person runs it: ./cmd/kubectl-parley built into a
// folder on PATH, called as `kubectl parley`, against the suite's manager. The host-run
// manager serves the Session API in plain HTTP on the bridge, and the admin kubeconfig's
// client certificate names nobody to it, so the person is the namespace's default
// ServiceAccount (the agent role: it may append) with a token of audience parley, as
// `make run-local` does with its samples' ServiceAccount.
type kubectlParley struct {
	dir, kubeconfig, apiURL, ns, token string
}

// newKubectlParley builds the plugin (buildPlugin) and returns it acting in ns against m.
func newKubectlParley(ctx context.Context, m *managerProcess, ns string) *kubectlParley {
	return &kubectlParley{dir: filepath.Dir(buildPlugin(ctx)), kubeconfig: m.kubeconfig, apiURL: "http://" + m.apiAddr, ns: ns, token: sessionToken(ctx, ns)}
}

// env is the environment `kubectl parley` runs in: the plugin on PATH, the cluster, the token.
func (k *kubectlParley) env() []string {
	return append(os.Environ(), "PATH="+k.dir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+k.kubeconfig, personTokenEnv+"="+k.token)
}

// args is the command line of `kubectl parley VERB ARGS…` in the person's namespace.
func (k *kubectlParley) args(verbAndArgs ...string) []string {
	return append(append([]string{"parley"}, verbAndArgs...), "-n", k.ns, "--session-api-url", k.apiURL)
}

// run runs `kubectl parley VERB ARGS…` and returns its stdout and stderr.
func (k *kubectlParley) run(ctx context.Context, verbAndArgs ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", k.args(verbAndArgs...)...)
	cmd.Env = k.env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	GinkgoWriter.Printf("kubectl %s\nstdout:\n%sstderr:\n%s", strings.Join(cmd.Args[1:], " "), out.String(), errOut.String())
	return out.String(), errOut.String(), err
}

// sessionToken is a token of ns's default ServiceAccount for the Session API (audience parley).
func sessionToken(ctx context.Context, ns string) string {
	tok, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{Audiences: []string{"parley"}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tok.Status.Token
}
